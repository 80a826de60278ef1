import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy } from '../helpers/deployments.js';
import { spawn } from 'node:child_process';
import { containersWithLabel, provisionDocker } from '../helpers/docker.js';
import { expectErrorShape } from '../helpers/error-bodies.js';
import { startObjectStore, type TestObjectStore } from '../helpers/object-store.js';
import { api, startServerProcess, type ServerProcess } from '../helpers/server-process.js';

/*
 * Backups end to end, over real HTTP: a PostgreSQL service (the stand-in image's PostgreSQL 15, with
 * its own pg_dump and pg_restore) deployed on the real Docker engine, and a real S3-compatible server
 * (s3rver on 127.0.0.1) reached through the AWS SDK. For every storage: write data, back up, change
 * and drop data, restore, compare row by row. Then corrupted and truncated files, the store down, delete.
 */

type Call = ReturnType<typeof api>;
type Backup = {
  id: string;
  status: string;
  storage: string;
  checksum: string;
  sizeBytes: number;
  localPath: string | null;
  objectKey: string | null;
  error: string | null;
  finishedAt: string | null;
};

let server: ServerProcess;
let call: Call;
let store: TestObjectStore;
let projectId: string;
let dbId: string;
let password: string;
let dbEnv: Record<string, string>;
const servers: ServerProcess[] = [];
// Host ports from a window of its own: other platforms on this machine (tests running at once) start at 20000.
const PORT_BASE = 40_000 + Math.floor(Math.random() * 90) * 100;
const SERVER_ENV = {
  BUILD_CONCURRENCY: '2',
  HEALTH_TIMEOUT_MS: '120000',
  STOP_GRACE_SECONDS: '5',
  HOST_PORT_RANGE: `${PORT_BASE}-${PORT_BASE + 99}`,
};

beforeAll(async () => {
  await provisionDocker({ images: 'busybox,debian,postgres' });
  store = await startObjectStore();
  server = await startServerProcess(SERVER_ENV);
  servers.push(server);
  call = api(server.url, server.token);
  projectId = (await call('POST', '/api/projects', { name: `backups-${Date.now()}` })).json.project.id;
  const created = await call('POST', `/api/projects/${projectId}/services`, {
    name: 'ledger db',
    repoUrl: 'database',
    repoFullName: 'database:postgres',
    branch: 'main',
  });
  expect(created.status, created.text).toBe(201);
  dbId = created.json.service.id;
  const result = await deploy(call, dbId, 5 * 60_000);
  expect(result.deployment.status, result.logs.join('\n')).toBe('succeeded');
  const env = (await call('GET', `/api/services/${dbId}/overview`)).json.env as Array<{ id: string; key: string }>;
  dbEnv = {};
  for (const v of env) dbEnv[v.key] = (await call('POST', `/api/services/${dbId}/env/${v.id}/reveal`)).json.value;
  password = dbEnv.POSTGRES_PASSWORD!;
}, 15 * 60_000);

afterAll(async () => {
  if (projectId && call) await call('DELETE', `/api/projects/${projectId}`).catch(() => undefined);
  for (const s of servers.reverse()) await s.dispose();
  await store?.dispose();
});

async function sql(statement: string): Promise<Array<Record<string, unknown>>> {
  const res = await call('POST', `/api/services/${dbId}/database/query`, { sql: statement });
  expect(res.status, `${statement}: ${res.text}`).toBe(200);
  return res.json.rows;
}

async function waitForBackup(id: string, timeoutMs = 120_000): Promise<Backup> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const list = (await call('GET', `/api/services/${dbId}/database/backups`)).json;
    const backup = (list.backups as Backup[]).find((b) => b.id === id);
    if (backup && backup.status !== 'running') return backup;
    if (Date.now() > deadline) throw new Error(`backup ${id} still running after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function backUp(storage: string): Promise<Backup> {
  const res = await call('POST', `/api/services/${dbId}/database/backups`, { storage });
  expect(res.status, res.text).toBe(201);
  expect(res.json.backup).toMatchObject({ status: 'running', storage, finishedAt: null, format: 'custom', trigger: 'manual' });
  return waitForBackup(res.json.backup.id);
}

async function until(check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 100));
  }
}

const SNAPSHOT = 'SELECT id, name, amount::text AS amount, tags, payload::text AS payload FROM ledger ORDER BY id';

describe('backups of a PostgreSQL service', () => {
  it('connects the object store from a real check, the secret write-only', { timeout: 60_000 }, async () => {
    const before = (await call('GET', `/api/services/${dbId}/database/backups`)).json;
    expect(before).toMatchObject({ backups: [], objectStore: { connected: false } });
    expect(before.settings).toMatchObject({ serviceId: dbId, storage: 'disk', automaticEnabled: false });
    const put = await call('PUT', '/api/settings', { objectStore: store.settings });
    expect(put.status, put.text).toBe(200);
    expect(put.json.settings.objectStore).toMatchObject({ bucket: store.bucket, hasSecretAccessKey: true });
    expect(put.text).not.toContain('secretAccessKey');
    const after = (await call('GET', `/api/services/${dbId}/database/backups`)).json;
    expect(after.objectStore).toEqual({ connected: true });
  });

  for (const storage of ['disk', 'object', 'disk+object'] as const) {
    it(`round-trips through storage ${storage}: back up, change and drop data, restore, same rows`, { timeout: 5 * 60_000 }, async () => {
      await sql('DROP TABLE IF EXISTS ledger');
      await sql('DROP TABLE IF EXISTS extra');
      await sql('CREATE TABLE ledger (id serial PRIMARY KEY, name text NOT NULL, amount numeric(12,2), tags text[], payload jsonb)');
      await sql(
        `INSERT INTO ledger (name, amount, tags, payload) SELECT 'row ' || g, g * 1.25, ARRAY['t' || g, '${storage}'], jsonb_build_object('g', g) FROM generate_series(1, 500) g`,
      );
      const original = await sql(SNAPSHOT);
      expect(original).toHaveLength(500);

      const backup = await backUp(storage);
      expect(backup.status, backup.error ?? '').toBe('succeeded');
      expect(backup.checksum).toMatch(/^sha256:[0-9a-f]{64}$/);
      expect(backup.sizeBytes).toBeGreaterThan(0);
      expect(backup.finishedAt).not.toBeNull();
      expect(backup.localPath !== null).toBe(storage !== 'object');
      expect(backup.objectKey !== null).toBe(storage !== 'disk');
      if (backup.localPath) {
        const bytes = readFileSync(backup.localPath);
        expect(bytes.length).toBe(backup.sizeBytes);
        expect(`sha256:${createHash('sha256').update(bytes).digest('hex')}`).toBe(backup.checksum);
        expect(bytes.subarray(0, 5).toString()).toBe('PGDMP');
      }
      if (backup.objectKey) expect(existsSync(path.join(store.dir, store.bucket, `${backup.objectKey}._S3rver_object`))).toBe(true);

      // The download is the stored bytes, with its size and a file name.
      const download = await fetch(`${server.url}/api/services/${dbId}/database/backups/${backup.id}/download`, {
        headers: { authorization: `Bearer ${server.token}` },
      });
      expect(download.status).toBe(200);
      expect(download.headers.get('content-length')).toBe(String(backup.sizeBytes));
      expect(download.headers.get('content-disposition')).toMatch(/^attachment; filename=".+\.dump"$/);
      const downloaded = Buffer.from(await download.arrayBuffer());
      expect(`sha256:${createHash('sha256').update(downloaded).digest('hex')}`).toBe(backup.checksum);

      await sql("UPDATE ledger SET name = 'changed' WHERE id <= 100");
      await sql('DELETE FROM ledger WHERE id > 400');
      await sql('CREATE TABLE extra (id int)');
      await sql('DROP TABLE ledger');

      const restored = await call('POST', `/api/services/${dbId}/database/backups/${backup.id}/restore`);
      expect(restored.status, restored.text).toBe(200);
      expect(restored.json).toMatchObject({ ok: true, backup: { id: backup.id, status: 'succeeded' } });
      expect(Number.isNaN(Date.parse(restored.json.restoredAt))).toBe(false);
      expect(await sql(SNAPSHOT)).toEqual(original);

      const logs = await call('GET', `/api/services/${dbId}/database/backups/${backup.id}/logs`);
      expect(logs.status).toBe(200);
      const text = (logs.json.logs as Array<{ line: string }>).map((l) => l.line).join('\n');
      expect(text).toMatch(/Backup succeeded/);
      expect(text).toMatch(/Checksum verified/);
      expect(text).toMatch(/Restore finished/);
      expect(text).not.toContain(password);
      expect(text).not.toContain(store.settings.secretAccessKey === 'S3RVER' ? '\u0000' : store.settings.secretAccessKey);
    });
  }

  it('refuses a corrupted and a truncated backup with 409 checksum_mismatch, touching nothing', { timeout: 3 * 60_000 }, async () => {
    await sql('DROP TABLE IF EXISTS marker');
    await sql('CREATE TABLE marker (note text)');
    const corrupted = await backUp('disk');
    const truncated = await backUp('disk');
    expect(corrupted.status).toBe('succeeded');
    await sql("INSERT INTO marker VALUES ('after the backups')");

    const bytes = readFileSync(corrupted.localPath!);
    bytes[Math.floor(bytes.length / 2)]! ^= 0xff;
    writeFileSync(corrupted.localPath!, bytes);
    truncateSync(truncated.localPath!, Math.floor(truncated.sizeBytes / 2));

    for (const backup of [corrupted, truncated]) {
      const res = await call('POST', `/api/services/${dbId}/database/backups/${backup.id}/restore`);
      expectErrorShape(res, 409, 'restore of a changed file');
      expect(res.json.error).toBe('checksum_mismatch');
    }
    expect(await sql('SELECT note FROM marker')).toEqual([{ note: 'after the backups' }]);
  });

  it('deletes a backup from every place it is stored', { timeout: 2 * 60_000 }, async () => {
    const backup = await backUp('disk+object');
    expect(backup.status).toBe('succeeded');
    const objectFile = path.join(store.dir, store.bucket, `${backup.objectKey}._S3rver_object`);
    expect(existsSync(objectFile)).toBe(true);
    const res = await call('DELETE', `/api/services/${dbId}/database/backups/${backup.id}`);
    expect(res.status, res.text).toBe(200);
    expect(res.json).toEqual({ ok: true });
    expect(existsSync(backup.localPath!)).toBe(false);
    expect(existsSync(objectFile)).toBe(false);
    const again = await call('DELETE', `/api/services/${dbId}/database/backups/${backup.id}`);
    expectErrorShape(again, 404, 'deleted twice');
  });

  it('changes the backup settings', async () => {
    const res = await call('PUT', `/api/services/${dbId}/database/backups/settings`, {
      storage: 'disk+object',
      dailyEnabled: false,
      keepWeekly: 2,
    });
    expect(res.status, res.text).toBe(200);
    expect(res.json.settings).toMatchObject({
      serviceId: dbId,
      storage: 'disk+object',
      dailyEnabled: false,
      weeklyEnabled: true,
      keepWeekly: 2,
      keepDaily: 7,
    });
    const unknown = await call('PUT', `/api/services/${dbId}/database/backups/settings`, { colour: 'red' });
    expectErrorShape(unknown, 400, 'unknown field');
    expect(unknown.json.details.field).toBe('colour');
  });

  it('leaves a backup the platform was stopped under failed, with the reason, and no partial file', { timeout: 3 * 60_000 }, async () => {
    await sql('DROP TABLE IF EXISTS held');
    await sql('CREATE TABLE held (id int)');
    const [container] = await containersWithLabel(`slipway.service=${dbId}`, false);
    expect(container).toBeDefined();
    // A transaction holding an exclusive lock: pg_dump waits for it, so the backup is surely running when the platform stops.
    const locker = spawn(
      'docker',
      [
        'exec',
        '-e',
        `PGPASSWORD=${password}`,
        container!,
        'psql',
        '-U',
        dbEnv.POSTGRES_USER!,
        '-d',
        dbEnv.POSTGRES_DB!,
        '-c',
        'BEGIN; LOCK TABLE held IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(120);',
      ],
      { stdio: 'ignore' },
    );
    try {
      await until(
        async () => (await sql("SELECT count(*)::int AS n FROM pg_locks WHERE relation = 'held'::regclass AND granted"))[0]!.n === 1,
      );
      const res = await call('POST', `/api/services/${dbId}/database/backups`, { storage: 'disk' });
      expect(res.status, res.text).toBe(201);
      const id = res.json.backup.id as string;
      await until(
        async () =>
          (await sql("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'pg_dump' AND wait_event_type = 'Lock'"))[0]!
            .n === 1,
      );
      await server.kill();
      server = await startServerProcess(SERVER_ENV, { dataDir: server.dataDir, token: server.token });
      servers.push(server);
      call = api(server.url, server.token);
      const backup = await waitForBackup(id);
      expect(backup.status).toBe('failed');
      expect(backup.error).toMatch(/platform stopped while this backup was running/);
      expect(backup.finishedAt).not.toBeNull();
      expect(existsSync(backup.localPath!)).toBe(false);
      expect(existsSync(`${backup.localPath!}.partial`)).toBe(false);
      const logs = (await call('GET', `/api/services/${dbId}/database/backups/${id}/logs`)).json.logs as Array<{ line: string }>;
      expect(logs.map((l) => l.line).join('\n')).toMatch(/platform stopped/);
    } finally {
      await sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(120)%' AND pid <> pg_backend_pid()");
      locker.kill();
    }
  });

  it('fails a backup whose object store is down, with the reason, and leaves no file', { timeout: 3 * 60_000 }, async () => {
    await store.stop();
    const list = (await call('GET', `/api/services/${dbId}/database/backups`)).json;
    await new Promise((r) => setTimeout(r, 5_500));
    expect((await call('GET', `/api/services/${dbId}/database/backups`)).json.objectStore.connected).toBe(false);
    expect(list.backups.length).toBeGreaterThan(0);
    for (const storage of ['object', 'disk+object']) {
      const backup = await backUp(storage);
      expect(backup.status).toBe('failed');
      expect(backup.error).toMatch(/object store/i);
      expect(backup.checksum).toBe('');
      if (backup.localPath) expect(existsSync(backup.localPath)).toBe(false);
    }
    // Nothing but the succeeded backups' files is on disk: no partial file was kept.
    const dir = path.join(server.dataDir, 'backups', dbId);
    const succeeded = new Set(
      ((await call('GET', `/api/services/${dbId}/database/backups`)).json.backups as Backup[])
        .filter((b) => b.status === 'succeeded' && b.localPath)
        .map((b) => path.basename(b.localPath!)),
    );
    for (const name of readdirSync(dir)) {
      expect(succeeded.has(name), name).toBe(true);
      expect(statSync(path.join(dir, name)).size).toBeGreaterThan(0);
    }
  });
});
