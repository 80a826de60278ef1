import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { DatabaseEngine } from '../../src/domain/database-engines.js';
import { deploy } from './deployments.js';
import { containersWithLabel, ownPortRange, provisionDocker } from './docker.js';
import { expectErrorShape } from './error-bodies.js';
import { startObjectStore, type TestObjectStore } from './object-store.js';
import { api, startServerProcess, type ServerProcess } from './server-process.js';
import { readSse } from './sse.js';

const run = promisify(execFile);

/**
 * Backups end to end for engines other than PostgreSQL (test/e2e/backups.test.ts has it): a platform
 * started as `npm start` does, database services deployed on the real Docker engine from the
 * stand-in images, a real S3-compatible server (s3rver on 127.0.0.1) through the AWS SDK. For each
 * engine and storage: write data, back up, change and drop data, restore, compare; a restore drill of a
 * backup (the engine family's drill of record: scratch container, the engine's own counts, drill.passed
 * on the event stream), on the same database container; a corrupted and a truncated backup refused
 * before the database is touched.
 */

type Call = ReturnType<typeof api>;

export interface Backup {
  id: string;
  status: string;
  storage: string;
  format: string;
  checksum: string;
  sizeBytes: number;
  localPath: string | null;
  objectKey: string | null;
  error: string | null;
  counts: { unit: string; expected: Record<string, { min: number; max: number }> } | null;
  drill: {
    status: string;
    reason: string | null;
    checksumOk: boolean | null;
    durationMs: number | null;
    counts: Record<string, number> | null;
  } | null;
}

/** A deployed database service, as the cases see it. */
export interface Database {
  id: string;
  hostPort: number;
  env: Record<string, string>;
  /** POST /database/query: the platform's own console (SQL, a Redis command, a MongoDB command). */
  query(text: string): Promise<{ rows: Array<Record<string, unknown>> }>;
}

export interface EngineCase<S> {
  engine: DatabaseEngine;
  format: string;
  /** How the downloaded file starts. */
  magic: (bytes: Buffer) => void;
  /** The password in env that must appear in no log line. */
  passwordKey: string;
  /** Writes the data set (its values carry `tag`: each storage's round trip has its own). */
  write(db: Database, tag: string): Promise<void>;
  /** Everything the backup must bring back, row by row (key by key, document by document). */
  snapshot(db: Database): Promise<S>;
  /** Compares a snapshot after the restore with the one before (TTLs go down meanwhile). */
  same?(after: S, before: S, elapsedSeconds: number): void;
  /** Changes, deletes and drops data, and adds something the backup does not have. */
  mangle(db: Database): Promise<void>;
  /** After a restore: anything else the engine promises (the container kept, the console working...). */
  afterRestore?(db: Database, ctx: { call: Call; storage: string }): Promise<void>;
}

interface Platform {
  server: ServerProcess;
  call: Call;
  store: TestObjectStore;
  projectId: string;
  databases: Map<DatabaseEngine, Database>;
}

/** The round trips of each case, in one platform with one service per engine. */
export function backupRoundTrips(cases: Array<EngineCase<unknown>>): void {
  const platform = {} as Platform;

  beforeAll(async () => {
    await provisionDocker({ images: `busybox,debian,${cases.map((c) => (c.engine === 'mongodb' ? 'mongo' : c.engine)).join(',')}` });
    platform.store = await startObjectStore();
    platform.server = await startServerProcess({
      BUILD_CONCURRENCY: String(cases.length),
      HEALTH_TIMEOUT_MS: '180000',
      STOP_GRACE_SECONDS: '5',
      HOST_PORT_RANGE: ownPortRange(),
    });
    const call = api(platform.server.url, platform.server.token);
    platform.call = call;
    const put = await call('PUT', '/api/settings', { objectStore: platform.store.settings });
    expect(put.status, put.text).toBe(200);
    platform.projectId = (
      await call('POST', '/api/projects', { name: `backups-${cases.map((c) => c.engine).join('-')}-${Date.now()}` })
    ).json.project.id;
    platform.databases = new Map();
    await Promise.all(
      cases.map(async (c) => {
        const created = await call('POST', `/api/projects/${platform.projectId}/services`, {
          name: `${c.engine} db`,
          repoUrl: 'database',
          repoFullName: `database:${c.engine}`,
          branch: 'main',
        });
        expect(created.status, created.text).toBe(201);
        const service = created.json.service as { id: string; hostPort: number };
        const result = await deploy(call, service.id, 8 * 60_000);
        expect(result.deployment.status, result.logs.join('\n')).toBe('succeeded');
        const env: Record<string, string> = {};
        for (const v of (await call('GET', `/api/services/${service.id}/overview`)).json.env as Array<{ id: string; key: string }>)
          env[v.key] = (await call('POST', `/api/services/${service.id}/env/${v.id}/reveal`)).json.value;
        platform.databases.set(c.engine, {
          id: service.id,
          hostPort: service.hostPort,
          env,
          query: async (text) => {
            const res = await call('POST', `/api/services/${service.id}/database/query`, { sql: text });
            expect(res.status, `${text}: ${res.text}`).toBe(200);
            return res.json;
          },
        });
      }),
    );
  }, 20 * 60_000);

  afterAll(async () => {
    if (platform.projectId) await platform.call('DELETE', `/api/projects/${platform.projectId}`).catch(() => undefined);
    await platform.server?.dispose();
    await platform.store?.dispose();
  });

  const backUp = async (db: Database, storage: string): Promise<Backup> => {
    const res = await platform.call('POST', `/api/services/${db.id}/database/backups`, { storage });
    expect(res.status, res.text).toBe(201);
    const id = res.json.backup.id as string;
    const deadline = Date.now() + 180_000;
    for (;;) {
      const list = (await platform.call('GET', `/api/services/${db.id}/database/backups`)).json.backups as Backup[];
      const backup = list.find((b) => b.id === id);
      if (backup && backup.status !== 'running') return backup;
      if (Date.now() > deadline) throw new Error(`backup ${id} still running`);
      await new Promise((r) => setTimeout(r, 250));
    }
  };

  const logsOf = async (db: Database, backupId: string) =>
    ((await platform.call('GET', `/api/services/${db.id}/database/backups/${backupId}/logs`)).json.logs as Array<{ line: string }>)
      .map((l) => l.line)
      .join('\n');

  for (const c of cases) {
    const db = () => platform.databases.get(c.engine)!;
    const same = (after: unknown, before: unknown, elapsed: number) =>
      c.same ? c.same(after, before, elapsed) : expect(after).toEqual(before);

    for (const storage of ['disk', 'object', 'disk+object']) {
      it(`${c.engine}: round-trips through storage ${storage}`, { timeout: 5 * 60_000 }, async () => {
        await c.write(db(), storage.replace('+', '-'));
        const before = await c.snapshot(db());
        const at = Date.now();
        const backup = await backUp(db(), storage);
        expect(backup.status, backup.error ?? '').toBe('succeeded');
        expect(backup).toMatchObject({ format: c.format, storage, error: null });
        expect(backup.checksum).toMatch(/^sha256:[0-9a-f]{64}$/);
        expect(backup.localPath !== null).toBe(storage !== 'object');
        expect(backup.objectKey !== null).toBe(storage !== 'disk');
        if (backup.objectKey)
          expect(existsSync(path.join(platform.store.dir, platform.store.bucket, `${backup.objectKey}._S3rver_object`))).toBe(true);

        const download = await fetch(`${platform.server.url}/api/services/${db().id}/database/backups/${backup.id}/download`, {
          headers: { authorization: `Bearer ${platform.server.token}` },
        });
        expect(download.status).toBe(200);
        const bytes = Buffer.from(await download.arrayBuffer());
        expect(bytes.length).toBe(backup.sizeBytes);
        expect(`sha256:${createHash('sha256').update(bytes).digest('hex')}`).toBe(backup.checksum);
        c.magic(bytes);

        await c.mangle(db());
        const restored = await platform.call('POST', `/api/services/${db().id}/database/backups/${backup.id}/restore`);
        expect(restored.status, restored.text).toBe(200);
        expect(restored.json).toMatchObject({ ok: true, backup: { id: backup.id, status: 'succeeded' } });
        expect(Number.isNaN(Date.parse(restored.json.restoredAt))).toBe(false);
        same(await c.snapshot(db()), before, (Date.now() - at) / 1000 + 2);
        await c.afterRestore?.(db(), { call: platform.call, storage });

        const text = await logsOf(db(), backup.id);
        expect(text).toMatch(/Backup succeeded/);
        expect(text).toMatch(/Checksum verified/);
        expect(text).toMatch(/Restore finished/);
        expect(text).not.toContain(db().env[c.passwordKey]);
        expect(text).not.toContain(platform.store.settings.secretAccessKey);
      });
    }

    it(`${c.engine}: drills a backup: restored into a scratch container, counted with the engine's own means, passed, removed`, {
      timeout: 5 * 60_000,
    }, async () => {
      await c.write(db(), 'drill');
      const backup = await backUp(db(), 'disk');
      expect(backup.status, backup.error ?? '').toBe('succeeded');
      expect(backup.drill).toBeNull();
      const expected = backup.counts?.expected ?? {};
      expect(
        Object.values(expected).some((r) => r.max > 0),
        JSON.stringify(backup.counts),
      ).toBe(true);
      const queued = await platform.call('POST', `/api/services/${db().id}/database/backups/${backup.id}/drill`);
      expect(queued.status, queued.text).toBe(200);
      // The drill's end is awaited as the event it publishes (the stream from its start: no race with a quick drill).
      const stream = await readSse(`${platform.server.url}/api/events/stream`, {
        token: platform.server.token,
        headers: { 'last-event-id': '0' },
        timeoutMs: 4 * 60_000,
        until: (frames) => frames.some((f) => f.event === 'event' && /^drill\./.test(f.data.type) && f.data.data.backupId === backup.id),
      });
      const event = stream.frames.find((f) => f.event === 'event' && /^drill\./.test(f.data.type) && f.data.data.backupId === backup.id);
      const text = await logsOf(db(), backup.id);
      expect(event?.data, text).toMatchObject({ type: 'drill.passed', data: { serviceId: db().id, backupId: backup.id, reason: null } });
      const list = (await platform.call('GET', `/api/services/${db().id}/database/backups`)).json.backups as Backup[];
      const drilled = list.find((b) => b.id === backup.id)!;
      expect(drilled.drill, text).toMatchObject({ status: 'passed', reason: null, checksumOk: true });
      for (const [name, { min, max }] of Object.entries(expected)) {
        expect(drilled.drill!.counts![name] ?? 0, name).toBeGreaterThanOrEqual(min);
        expect(drilled.drill!.counts![name] ?? 0, name).toBeLessThanOrEqual(max);
      }
      expect(text).toMatch(/Scratch database .* on its private network .* no port published/);
      expect(text).toMatch(/Scratch database removed/);
      expect(text).not.toContain(db().env[c.passwordKey]);
      expect(await scratchLeft(platform.server)).toBe('');
    });

    it(`${c.engine}: refuses a corrupted and a truncated backup with 409 checksum_mismatch, touching nothing`, {
      timeout: 5 * 60_000,
    }, async () => {
      const corrupted = await backUp(db(), 'disk');
      const truncated = await backUp(db(), 'disk');
      expect([corrupted.status, truncated.status]).toEqual(['succeeded', 'succeeded']);
      await c.mangle(db());
      const current = await c.snapshot(db());
      const at = Date.now();
      const bytes = readFileSync(corrupted.localPath!);
      bytes[Math.floor(bytes.length / 2)]! ^= 0xff;
      writeFileSync(corrupted.localPath!, bytes);
      truncateSync(truncated.localPath!, Math.floor(truncated.sizeBytes / 2));
      for (const backup of [corrupted, truncated]) {
        const res = await platform.call('POST', `/api/services/${db().id}/database/backups/${backup.id}/restore`);
        expectErrorShape(res, 409, 'restore of a changed file');
        expect(res.json.error).toBe('checksum_mismatch');
        expect(await logsOf(db(), backup.id)).toMatch(/Refused: the stored file is/);
      }
      same(await c.snapshot(db()), current, (Date.now() - at) / 1000 + 2);
    });

    it(`${c.engine}: takes automatic backups (no longer refused)`, async () => {
      const res = await platform.call('PUT', `/api/services/${db().id}/database/backups/settings`, {
        automaticEnabled: true,
        storage: 'disk',
      });
      expect(res.status, res.text).toBe(200);
      expect(res.json.settings).toMatchObject({ automaticEnabled: true });
      const off = await platform.call('PUT', `/api/services/${db().id}/database/backups/settings`, { automaticEnabled: false });
      expect(off.status, off.text).toBe(200);
    });
  }
}

/** This install's drill scratch containers still there (other installs on the host, other test files among them, drill too). */
async function scratchLeft(server: ServerProcess): Promise<string> {
  const instance = /"instanceId":"([a-z0-9]+)"/.exec(server.output())?.[1];
  if (!instance) throw new Error('the server did not log its instanceId');
  const filters = ['--filter', 'label=slipway.scratch=drill', '--filter', `label=slipway.scratch-instance=${instance}`];
  return (await run('docker', ['ps', '-a', ...filters, '--format', '{{.Names}}'])).stdout.trim();
}

/** The service's current containers, by name (running ones). */
export function runningContainers(serviceId: string): Promise<string[]> {
  return containersWithLabel(`slipway.service=${serviceId}`, false);
}
