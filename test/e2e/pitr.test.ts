import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { deploy } from '../helpers/deployments.js';
import { ownPortRange, provisionDocker } from '../helpers/docker.js';
import { api, startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { until } from '../helpers/until.js';
import { startObjectStore, type TestObjectStore } from '../helpers/object-store.js';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';

/*
 * Point-in-time recovery's archiving on the real engine (npm start's build, the PostgreSQL stand-in):
 * turned on before the first deployment, the database starts with archive_mode and its spool volume;
 * the platform takes the base backup (pg_basebackup in the container) and ships the WAL to disk, and
 * GET .../pitr shows the window opening and moving on as segments are switched, with no lag left.
 * Then the restore: rows written with their times, a second noted, more rows and a dropped table,
 * and POST .../pitr/restore to that second makes a new service holding exactly the rows written by then;
 * then the same second in place (replace with confirm): the original itself holds exactly those rows again.
 * The same database then archives to S3 (s3rver): rows written and shipped, the store stopped (the database
 * keeps serving, GET .../pitr shows the WAL waiting, lagging, with the reason), a second noted, more rows and
 * the table dropped, the store started again (the archive catches up), and a restore to that second holds
 * exactly the rows written by then.
 */
const suffix = randomBytes(4).toString('hex');
let server: ServerProcess;
let call: ReturnType<typeof api>;
let projectId = '';
let store: TestObjectStore | null = null;
// The database the first test makes and restores in place; the S3 test goes on with it (one platform, one database).
let dbId = '';
let inPlaceFinishedAt = 0;

beforeAll(async () => {
  await provisionDocker({ images: 'postgres' });
  server = await startServerProcess({
    BUILD_CONCURRENCY: '1',
    PITR_INTERVAL_MS: '500',
    STOP_GRACE_SECONDS: '1',
    HOST_PORT_RANGE: ownPortRange(),
  });
  call = api(server.url, server.token);
  projectId = (await call('POST', '/api/projects', { name: `pitr-${suffix}` })).json.project.id;
}, 120_000);

afterAll(async () => {
  if (call && projectId) await call('DELETE', `/api/projects/${projectId}`);
  await server?.dispose();
  await store?.dispose();
});

const poll = <T>(what: string, check: () => Promise<T>, timeoutMs = 60_000) => until(check, timeoutMs, what, 250);

it('archives a PostgreSQL service to disk, and restores it to a second into a new service, then in place', {
  timeout: 300_000,
}, async () => {
  const created = await call('POST', `/api/projects/${projectId}/services`, {
    name: `ledger-${suffix}`,
    repoUrl: 'database',
    repoFullName: 'database:postgres',
    branch: 'main',
  });
  expect(created.status, created.text).toBe(201);
  const id = created.json.service.id as string;
  dbId = id;
  const on = await call('PUT', `/api/services/${id}/database/pitr`, { enabled: true, storage: 'disk', retentionDays: 3 });
  expect(on.status, on.text).toBe(200);
  expect(on.json.pitr).toMatchObject({ enabled: true, storage: 'disk', retentionDays: 3, window: null });
  const result = await deploy(call, id, 90_000);
  expect(result.deployment.status, result.logs.join('\n')).toBe('succeeded');
  expect(result.logs.join('\n')).toMatch(/archive_mode=on/);

  const sql = async (statement: string) => {
    const res = await call('POST', `/api/services/${id}/database/query`, { sql: statement });
    expect(res.status, `${statement}: ${res.text}`).toBe(200);
    return res.json.rows as Array<Record<string, unknown>>;
  };
  const pitr = async () => (await call('GET', `/api/services/${id}/database/pitr`)).json.pitr;
  const base = await poll('the base backup', async () => (await pitr()).lastBaseBackup);
  expect(base).toMatchObject({ status: 'succeeded', kind: 'base', storage: 'disk' });

  // The window starts the second after the base backup ended: the writes come after that second.
  await new Promise((r) => setTimeout(r, Math.max(0, Date.parse(base.finishedAt) + 1_100 - Date.now())));
  await sql('CREATE TABLE ledger (id serial PRIMARY KEY, note text NOT NULL, written timestamptz NOT NULL DEFAULT clock_timestamp())');
  await sql("INSERT INTO ledger (note) SELECT 'row ' || g FROM generate_series(1, 100) g");
  await sql('SELECT pg_switch_wal()');
  let seen: unknown = null;
  const opened = await poll('the window', async () => {
    const p = await pitr();
    seen = p;
    return p.window && p.archivedSegments >= 2 && p.lag.pendingSegments === 0 ? p : null;
  }).catch((error: Error) => {
    throw new Error(`${error.message}: ${JSON.stringify(seen)}`);
  });
  expect(Date.parse(opened.window.earliest)).toBeGreaterThanOrEqual(Date.parse(base.finishedAt) - 1_000);
  expect(opened.lag).toMatchObject({ lagging: false, lastError: null });

  // A second noted after the first rows; more rows, a dropped table, another switch: the window's end moves on.
  const noted = new Date(Math.floor(Date.now() / 1000) * 1000 + 1000);
  await new Promise((r) => setTimeout(r, Math.max(0, noted.getTime() + 300 - Date.now())));
  const before = (await sql(`SELECT id FROM ledger WHERE written <= '${noted.toISOString()}' ORDER BY id`)).map((r) => Number(r.id));
  expect(before).toHaveLength(100);
  await sql("INSERT INTO ledger (note) VALUES ('later')");
  await sql('DROP TABLE ledger');
  await sql('SELECT pg_switch_wal()');
  const moved = await poll('the window moving on', async () => {
    const p = await pitr();
    return Date.parse(p.window?.latest ?? '') >= noted.getTime() && p.lag.pendingSegments === 0 ? p : null;
  });
  expect(moved.archivedSegments).toBeGreaterThan(opened.archivedSegments);

  // Outside the window: a 422 that gives it.
  const future = await call('POST', `/api/services/${id}/database/pitr/restore`, { at: new Date(Date.now() + 3_600_000).toISOString() });
  expect(future.status, future.text).toBe(422);
  expect(future.json).toMatchObject({ error: 'outside_window' });
  expect(future.json.details.window).toMatchObject({ earliest: expect.any(String), latest: expect.any(String) });

  const queued = await call('POST', `/api/services/${id}/database/pitr/restore`, { at: noted.toISOString() });
  expect(queued.status, queued.text).toBeLessThan(300);
  const restoreId = queued.json.restore.id as string;
  const targetId = queued.json.restore.targetServiceId as string;
  expect(targetId).not.toBe(id);
  const done = await poll(
    'the restore',
    async () => {
      const r = ((await pitr()).restores as Array<Record<string, unknown>>).find((x) => x.id === restoreId);
      return r && r.status !== 'queued' && r.status !== 'running' ? r : null;
    },
    90_000,
  );
  expect(done, JSON.stringify(done)).toMatchObject({ status: 'succeeded', error: null });
  // The exact second reached: the last commit applied, at or before the second asked for.
  expect(Date.parse(done.reachedAt as string)).toBeLessThanOrEqual(noted.getTime());

  // The new service runs on the recovered data: exactly the rows written by that second; the original lost its table.
  const restored = async (statement: string) => {
    const res = await call('POST', `/api/services/${targetId}/database/query`, { sql: statement });
    return res.status === 200 ? (res.json.rows as Array<Record<string, unknown>>) : null;
  };
  const rows = await poll('the restored service answering', () => restored('SELECT id FROM ledger ORDER BY id'), 60_000);
  expect(rows.map((r) => Number(r.id))).toEqual(before);
  expect(await restored("SELECT count(*)::int AS n FROM ledger WHERE note = 'later'")).toEqual([{ n: 0 }]);
  const original = await call('POST', `/api/services/${id}/database/query`, { sql: 'SELECT 1 FROM ledger' });
  expect(original.status).not.toBe(200);

  // In place (replace): refused without the service's name as confirm; with it, the original itself holds
  // exactly those rows again, its table back, once the restore swapped it onto the recovered volume.
  const unconfirmed = await call('POST', `/api/services/${id}/database/pitr/restore`, { at: noted.toISOString(), replace: true });
  expect(unconfirmed.status, unconfirmed.text).toBe(400);
  expect(unconfirmed.json.details.field).toBe('confirm');
  const misnamed = await call('POST', `/api/services/${id}/database/pitr/restore`, {
    at: noted.toISOString(),
    replace: true,
    confirm: 'ledger',
  });
  expect(misnamed.status, misnamed.text).toBe(400);
  expect(misnamed.json.details.field).toBe('confirm');
  const inPlace = await call('POST', `/api/services/${id}/database/pitr/restore`, {
    at: noted.toISOString(),
    replace: true,
    confirm: `ledger-${suffix}`,
  });
  expect(inPlace.status, inPlace.text).toBe(201);
  expect(inPlace.json.restore).toMatchObject({ replace: true, targetServiceId: id, status: 'queued' });
  const replaced = await poll(
    'the in-place restore',
    async () => {
      const r = ((await pitr()).restores as Array<Record<string, unknown>>).find((x) => x.id === inPlace.json.restore.id);
      return r && r.status !== 'queued' && r.status !== 'running' ? r : null;
    },
    120_000,
  );
  expect(replaced, JSON.stringify(replaced)).toMatchObject({ status: 'succeeded', error: null });
  inPlaceFinishedAt = Date.parse(replaced.finishedAt as string);
  // Its log over the API: the new volume filled beside the original, the second reached, the swap.
  const logs = await call('GET', `/api/services/${id}/database/pitr/restores/${inPlace.json.restore.id}/logs`);
  expect(logs.status, logs.text).toBe(200);
  expect((logs.json.logs as Array<{ line: string }>).map((l) => l.line).join('\n')).toMatch(
    /in place .* into the new volume[\s\S]*Reached [\s\S]*Swapping [\s\S]*runs on the restored data/,
  );
  const back = await poll('the original answering with its table back', async () => {
    const res = await call('POST', `/api/services/${id}/database/query`, { sql: 'SELECT id FROM ledger ORDER BY id' });
    return res.status === 200 ? (res.json.rows as Array<Record<string, unknown>>) : null;
  });
  expect(back.map((r) => Number(r.id))).toEqual(before);
});

it('archives to S3, keeps serving while S3 is down, catches up, and restores a second from that archive', {
  timeout: 300_000,
}, async () => {
  expect(dbId, 'the first test made the database').not.toBe('');
  const id = dbId;
  const sql = async (statement: string) => {
    const res = await call('POST', `/api/services/${id}/database/query`, { sql: statement });
    expect(res.status, `${statement}: ${res.text}`).toBe(200);
    return res.json.rows as Array<Record<string, unknown>>;
  };
  const pitr = async () => (await call('GET', `/api/services/${id}/database/pitr`)).json.pitr;
  const s3 = await startObjectStore(`pitr-${suffix}`);
  store = s3;
  const settings = await call('PUT', '/api/settings', { objectStore: s3.settings });
  expect(settings.status, settings.text).toBe(200);
  const on = await call('PUT', `/api/services/${id}/database/pitr`, { enabled: true, storage: 'object', retentionDays: 3 });
  expect(on.status, on.text).toBe(200);
  expect(on.json.pitr).toMatchObject({ enabled: true, storage: 'object' });
  // The in-place restore began a new timeline: the base backup taken after it opens the window the writes go in.
  const base = await poll('the base backup after the in-place restore', async () => {
    const b = (await pitr()).lastBaseBackup;
    return b && Date.parse(b.finishedAt) > inPlaceFinishedAt ? b : null;
  });
  await new Promise((r) => setTimeout(r, Math.max(0, Date.parse(base.finishedAt) + 1_100 - Date.now())));
  const walDir = path.join(s3.dir, s3.bucket, 'pitr', id, 'wal');
  const objects = () => (existsSync(walDir) ? readdirSync(walDir).filter((f) => f.endsWith('._S3rver_object')).length : 0);

  await sql('CREATE TABLE s3ledger (id serial PRIMARY KEY, note text NOT NULL, written timestamptz NOT NULL DEFAULT clock_timestamp())');
  await sql("INSERT INTO s3ledger (note) SELECT 'row ' || g FROM generate_series(1, 50) g");
  await sql('SELECT pg_switch_wal()');
  await poll('WAL in the bucket', async () => {
    const p = await pitr();
    return objects() > 0 && p.lag.pendingSegments === 0 && p.lag.lastError === null ? p : null;
  });

  // S3 down: the database keeps serving; the WAL waits in the spool, shown lagging with the reason.
  await s3.stop();
  const shipped = objects();
  await sql("INSERT INTO s3ledger (note) SELECT 'down ' || g FROM generate_series(1, 50) g");
  await sql('SELECT pg_switch_wal()');
  const lagging = await poll('the lag shown', async () => {
    const p = await pitr();
    return p.lag.pendingSegments > 0 && p.lag.lagging ? p : null;
  });
  expect(lagging.lag.lastError).toMatch(/not stored/);
  const noted = new Date(Math.floor(Date.now() / 1000) * 1000 + 1000);
  await new Promise((r) => setTimeout(r, Math.max(0, noted.getTime() + 300 - Date.now())));
  const before = (await sql(`SELECT id FROM s3ledger WHERE written <= '${noted.toISOString()}' ORDER BY id`)).map((r) => Number(r.id));
  expect(before).toHaveLength(100);
  await sql("INSERT INTO s3ledger (note) VALUES ('later')");
  await sql('DROP TABLE s3ledger');
  await sql('SELECT pg_switch_wal()');
  expect(await sql('SELECT 1 AS up')).toEqual([{ up: 1 }]);
  expect(objects()).toBe(shipped);

  // S3 back: the archive catches up, nothing lost, and the window reaches past the noted second.
  await s3.start();
  const caught = await poll('the archive catching up', async () => {
    const p = await pitr();
    return p.lag.pendingSegments === 0 && p.lag.lastError === null && Date.parse(p.window?.latest ?? '') >= noted.getTime() ? p : null;
  });
  expect(caught.lag.lagging).toBe(false);
  expect(objects()).toBeGreaterThan(shipped);

  const queued = await call('POST', `/api/services/${id}/database/pitr/restore`, { at: noted.toISOString() });
  expect(queued.status, queued.text).toBe(201);
  const targetId = queued.json.restore.targetServiceId as string;
  const done = await poll(
    'the restore from S3',
    async () => {
      const r = ((await pitr()).restores as Array<Record<string, unknown>>).find((x) => x.id === queued.json.restore.id);
      return r && r.status !== 'queued' && r.status !== 'running' ? r : null;
    },
    90_000,
  );
  expect(done, JSON.stringify(done)).toMatchObject({ status: 'succeeded', error: null });
  expect(Date.parse(done.reachedAt as string)).toBeLessThanOrEqual(noted.getTime());
  const rows = await poll('the restored service answering', async () => {
    const res = await call('POST', `/api/services/${targetId}/database/query`, { sql: 'SELECT id FROM s3ledger ORDER BY id' });
    return res.status === 200 ? (res.json.rows as Array<Record<string, unknown>>) : null;
  });
  expect(rows.map((r) => Number(r.id))).toEqual(before);
});
