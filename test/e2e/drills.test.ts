import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy } from '../helpers/deployments.js';
import { provisionDocker } from '../helpers/docker.js';
import { expectErrorShape } from '../helpers/error-bodies.js';
import { api, startServerProcess, type ServerProcess } from '../helpers/server-process.js';

/*
 * Restore drills end to end, over real HTTP against the server as `npm start` runs it: a PostgreSQL
 * service (the stand-in image's PostgreSQL 15) deployed on the real Docker engine, backed up, then
 * drilled on demand: restored into a scratch container on a private network (no host port, no
 * domain), counted with psql against the counts recorded at backup time (a table whose name must be
 * quoted among them), removed. This is the PostgreSQL family's drill of record: test/integration/drills.test.ts
 * drills the other families. Then a backup
 * whose file was changed on disk fails its drill, and the listing counts it. One database for the file.
 */

const run = promisify(execFile);
type Call = ReturnType<typeof api>;
interface Drill {
  status: string;
  reason: string | null;
  durationMs: number | null;
  checksumOk: boolean | null;
  counts: Record<string, number> | null;
}
interface Backup {
  id: string;
  status: string;
  localPath: string | null;
  error: string | null;
  startedAt: string | null;
  finishedAt: string | null;
  counts: { unit: string; expected: Record<string, { min: number; max: number }> } | null;
  drill: Drill | null;
}

let server: ServerProcess;
let call: Call;
let projectId: string;
let dbId: string;
const PORT_BASE = 40_000 + Math.floor(Math.random() * 90) * 100;

beforeAll(async () => {
  await provisionDocker({ images: 'busybox,debian,postgres' });
  server = await startServerProcess({
    BUILD_CONCURRENCY: '2',
    HEALTH_TIMEOUT_MS: '120000',
    STOP_GRACE_SECONDS: '5',
    HOST_PORT_RANGE: `${PORT_BASE}-${PORT_BASE + 99}`,
  });
  call = api(server.url, server.token);
  projectId = (await call('POST', '/api/projects', { name: `drills-${Date.now()}` })).json.project.id;
  const created = await call('POST', `/api/projects/${projectId}/services`, {
    name: 'orders db',
    repoUrl: 'database',
    repoFullName: 'database:postgres',
    branch: 'main',
  });
  expect(created.status, created.text).toBe(201);
  dbId = created.json.service.id;
  const result = await deploy(call, dbId, 5 * 60_000);
  expect(result.deployment.status, result.logs.join('\n')).toBe('succeeded');
}, 15 * 60_000);

afterAll(async () => {
  if (projectId && call) await call('DELETE', `/api/projects/${projectId}`).catch(() => undefined);
  await server?.dispose();
});

async function sql(statement: string): Promise<Array<Record<string, unknown>>> {
  const res = await call('POST', `/api/services/${dbId}/database/query`, { sql: statement });
  expect(res.status, `${statement}: ${res.text}`).toBe(200);
  return res.json.rows;
}

async function listing(): Promise<{ backups: Backup[]; drills: { neverDrilled: number; failed: number } }> {
  const res = await call('GET', `/api/services/${dbId}/database/backups`);
  expect(res.status, res.text).toBe(200);
  return res.json;
}

async function until<T>(what: string, check: () => Promise<T | null>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== null) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not in time`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function backUp(): Promise<Backup> {
  const res = await call('POST', `/api/services/${dbId}/database/backups`, { storage: 'disk' });
  expect(res.status, res.text).toBe(201);
  return until(
    'backup',
    async () => (await listing()).backups.find((b) => b.id === res.json.backup.id && b.status !== 'running') ?? null,
    120_000,
  );
}

async function drilled(backupId: string): Promise<Backup> {
  const res = await call('POST', `/api/services/${dbId}/database/backups/${backupId}/drill`);
  expect(res.status, res.text).toBe(200);
  expect(res.json.backup.drill).toMatchObject({ status: 'queued', startedAt: null });
  return until(
    'drill',
    async () => {
      const backup = (await listing()).backups.find((b) => b.id === backupId);
      return backup?.drill && !['queued', 'running'].includes(backup.drill.status) ? backup : null;
    },
    4 * 60_000,
  );
}

/** This install's scratch databases still there (other installs on the host, other test files among them, drill too). */
async function scratchLeft(): Promise<string> {
  const instance = /"instanceId":"([a-z0-9]+)"/.exec(server.output())?.[1];
  if (!instance) throw new Error('the server did not log its instanceId');
  const filters = ['--filter', 'label=slipway.scratch=drill', '--filter', `label=slipway.scratch-instance=${instance}`];
  return (await run('docker', ['ps', '-a', ...filters, '--format', '{{.Names}}'])).stdout.trim();
}

describe('restore drills of a PostgreSQL service', () => {
  it('drills a backup on demand: restored in a scratch container, counted, passed, removed', { timeout: 6 * 60_000 }, async () => {
    await sql('CREATE TABLE orders (id int PRIMARY KEY, note text)');
    await sql("INSERT INTO orders SELECT g, 'order ' || g FROM generate_series(1, 250) g");
    await sql('CREATE TABLE customers (id int)');
    await sql('INSERT INTO customers SELECT generate_series(1, 12)');
    // A name psql must quote: counted and compared under its own name.
    await sql('CREATE TABLE "Mixed Case" (id int)');
    await sql('INSERT INTO "Mixed Case" VALUES (1), (2), (3)');
    const before = await listing();
    const backup = await backUp();
    expect(backup.status, backup.error ?? '').toBe('succeeded');
    expect(backup.counts).toEqual({
      unit: 'rows',
      expected: {
        'public.Mixed Case': { min: 3, max: 3 },
        'public.customers': { min: 12, max: 12 },
        'public.orders': { min: 250, max: 250 },
      },
    });
    expect(backup.drill).toBeNull();
    expect((await listing()).drills.neverDrilled).toBe(before.drills.neverDrilled + 1);

    const done = await drilled(backup.id);
    expect(done.drill, done.drill?.reason ?? '').toMatchObject({
      status: 'passed',
      reason: null,
      checksumOk: true,
      counts: { 'public.Mixed Case': 3, 'public.customers': 12, 'public.orders': 250 },
    });
    expect(done.drill!.durationMs).toBeGreaterThan(0);
    const after = await listing();
    expect(after.drills).toEqual({ neverDrilled: before.drills.neverDrilled, failed: 0 });
    // The service's overview counts them too.
    expect((await call('GET', `/api/services/${dbId}/overview`)).json.drills).toEqual(after.drills);

    const logs = await call('GET', `/api/services/${dbId}/database/backups/${backup.id}/logs`);
    const text = (logs.json.logs as Array<{ line: string }>).map((l) => l.line).join('\n');
    expect(text).toMatch(/Scratch database .* on its private network .* no port published/);
    expect(text).toMatch(/Restore drill passed in/);
    expect(text).toMatch(/Scratch database removed/);
    expect(await scratchLeft()).toBe('');
    // The original was never touched.
    expect(await sql('SELECT count(*)::int AS n FROM orders')).toEqual([{ n: 250 }]);
    const backupMs = Date.parse(backup.finishedAt!) - Date.parse(backup.startedAt!);
    console.log(`drill cost: backup ${backupMs} ms, its drill ${done.drill!.durationMs} ms`);
  });

  it('fails the drill of a backup whose file changed, and the listing counts it', { timeout: 4 * 60_000 }, async () => {
    const backup = await backUp();
    const bytes = readFileSync(backup.localPath!);
    bytes[Math.floor(bytes.length / 2)] = bytes[Math.floor(bytes.length / 2)]! ^ 0xff;
    writeFileSync(backup.localPath!, bytes);
    const done = await drilled(backup.id);
    expect(done.drill).toMatchObject({ status: 'failed', checksumOk: false, counts: null });
    expect(done.drill!.reason).toMatch(/changed or truncated/);
    expect((await listing()).drills.failed).toBe(1);
    expect((await call('GET', `/api/services/${dbId}/overview`)).json.drills.failed).toBe(1);
    expect(await scratchLeft()).toBe('');
  });

  it('refuses a drill while one is queued, of an unknown backup, and of a non-database service', { timeout: 60_000 }, async () => {
    // The backup whose drill passed, not the newest: that one's file was changed, so its drill fails at
    // the checksum within milliseconds and could end between the two requests. A sound drill starts a
    // scratch database, which takes seconds.
    const { backups } = await listing();
    const id = backups.find((b) => b.drill?.status === 'passed')!.id;
    const first = await call('POST', `/api/services/${dbId}/database/backups/${id}/drill`);
    expect(first.status, first.text).toBe(200);
    const second = await call('POST', `/api/services/${dbId}/database/backups/${id}/drill`);
    expectErrorShape(second, 409, 'second drill');
    const unknown = await call('POST', `/api/services/${dbId}/database/backups/nope/drill`);
    expectErrorShape(unknown, 404, 'unknown backup');
    const extra = await call('POST', `/api/services/${dbId}/database/backups/${id}/drill`, { now: true });
    expectErrorShape(extra, 400, 'unknown field');
    // Let the queued drill end before the database goes.
    await until(
      'drill',
      async () => {
        const b = (await listing()).backups.find((x) => x.id === id);
        return b?.drill && !['queued', 'running'].includes(b.drill.status) ? b : null;
      },
      4 * 60_000,
    );
  });
});
