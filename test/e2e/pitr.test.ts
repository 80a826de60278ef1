import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { deploy } from '../helpers/deployments.js';
import { ownPortRange, provisionDocker } from '../helpers/docker.js';
import { api, startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { until } from '../helpers/until.js';

/*
 * Point-in-time recovery's archiving on the real engine (npm start's build, the PostgreSQL stand-in):
 * turned on before the first deployment, the database starts with archive_mode and its spool volume;
 * the platform takes the base backup (pg_basebackup in the container) and ships the WAL to disk, and
 * GET .../pitr shows the window opening and moving on as segments are switched, with no lag left.
 */
const suffix = randomBytes(4).toString('hex');
let server: ServerProcess;
let call: ReturnType<typeof api>;
let projectId = '';

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
});

const poll = <T>(what: string, check: () => Promise<T>, timeoutMs = 60_000) => until(check, timeoutMs, what, 250);

it('archives a PostgreSQL service: base backup, WAL shipped to disk, the window opening and moving on', { timeout: 120_000 }, async () => {
  const created = await call('POST', `/api/projects/${projectId}/services`, {
    name: `ledger-${suffix}`,
    repoUrl: 'database',
    repoFullName: 'database:postgres',
    branch: 'main',
  });
  expect(created.status, created.text).toBe(201);
  const id = created.json.service.id as string;
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
  await sql('CREATE TABLE ledger (id serial PRIMARY KEY, note text NOT NULL)');
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

  // More writes, another switch: the window's end moves on.
  await new Promise((r) => setTimeout(r, 1_100));
  await sql("INSERT INTO ledger (note) VALUES ('later')");
  await sql('SELECT pg_switch_wal()');
  const moved = await poll('the window moving on', async () => {
    const p = await pitr();
    return Date.parse(p.window?.latest ?? '') > Date.parse(opened.window.latest) && p.lag.pendingSegments === 0 ? p : null;
  });
  expect(moved.archivedSegments).toBeGreaterThan(opened.archivedSegments);
});
