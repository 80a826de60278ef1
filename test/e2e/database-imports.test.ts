import { readdirSync, readFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deploy } from '../helpers/deployments.js';
import { expectErrorShape } from '../helpers/error-bodies.js';
import { provisionDocker } from '../helpers/docker.js';
import { api, startServerProcess, type ServerProcess } from '../helpers/server-process.js';

/*
 * Data imports end to end, over HTTP, on real containers of the stand-in images: a PostgreSQL source
 * service with 100,000 rows imported (pg_dump | pg_restore in the target's container) into another,
 * a Redis source with 100,000 keys in two logical databases (with TTLs) copied into another, and an
 * unreachable source failing within its connect timeout. The sources' passwords are then looked for
 * in every answer, the import logs, the server's output and the database file: never found.
 */

type Call = ReturnType<typeof api>;
const ENV = {
  BUILD_CONCURRENCY: '2',
  HEALTH_TIMEOUT_MS: '120000',
  STOP_GRACE_SECONDS: '5',
  DATABASE_IMPORT_CONNECT_TIMEOUT_MS: '3000',
  // Other installs run tests on this host at the same time: host ports of our own, away from the default range's start.
  HOST_PORT_RANGE: ((from) => `${from}-${from + 49}`)(30_000 + Math.floor(Math.random() * 600) * 50),
};
const ROWS = 100_000;
const KEYS = 100_000;

let server: ServerProcess;
const servers: ServerProcess[] = [];
let call: Call;
let projectId: string;
/** Every answer body the test saw, to look for secrets in. */
const seen: string[] = [];

beforeAll(async () => {
  await provisionDocker({ images: 'busybox,debian,postgres,redis' });
  server = await startServerProcess(ENV);
  servers.push(server);
  call = recording(api(server.url, server.token));
  projectId = (await call('POST', '/api/projects', { name: `imports-${Date.now()}` })).json.project.id;
}, 20 * 60_000);

afterAll(async () => {
  if (projectId && call) await call('DELETE', `/api/projects/${projectId}`).catch(() => undefined);
  for (const s of servers.reverse()) await s.dispose();
});

/** The API, each answer kept to look for secrets in. */
function recording(raw: Call): Call {
  return async (...args: Parameters<Call>) => {
    const res = await raw(...args);
    seen.push(res.text);
    return res;
  };
}

async function envOf(serviceId: string): Promise<Record<string, string>> {
  const { env } = (await call('GET', `/api/services/${serviceId}/overview`)).json;
  const out: Record<string, string> = {};
  for (const variable of env as Array<{ id: string; key: string }>)
    out[variable.key] = (await call('POST', `/api/services/${serviceId}/env/${variable.id}/reveal`)).json.value;
  return out;
}

async function database(engine: 'postgres' | 'redis', name: string) {
  const res = await call('POST', `/api/projects/${projectId}/services`, {
    name,
    repoUrl: 'database',
    repoFullName: `database:${engine}`,
    branch: 'main',
  });
  expect(res.status, res.text).toBe(201);
  const service = res.json.service as { id: string; slug: string; hostPort: number };
  const result = await deploy(call, service.id, 5 * 60_000);
  expect(result.deployment.status, result.logs.join('\n')).toBe('succeeded');
  return { ...service, env: await envOf(service.id) };
}

interface ImportRow {
  id: string;
  status: string;
  error: string | null;
  sourceLabel: string;
  source: string;
  startedAt: string | null;
  finishedAt: string | null;
}

async function waitForImport(serviceId: string, importId: string, timeoutMs: number): Promise<ImportRow> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await call('GET', `/api/services/${serviceId}/database/imports`);
    expect(res.status, res.text).toBe(200);
    const found = (res.json.imports as ImportRow[]).find((i) => i.id === importId);
    expect(found, res.text).toBeDefined();
    if (found!.status !== 'running') return found!;
    if (Date.now() > deadline) throw new Error(`import ${importId} still running after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function logsOf(serviceId: string, importId: string): Promise<string> {
  const res = await call('GET', `/api/services/${serviceId}/database/imports/${importId}/logs`);
  expect(res.status, res.text).toBe(200);
  return (res.json.logs as Array<{ line: string }>).map((l) => l.line).join('\n');
}

const secrets: string[] = [];

describe('postgres-url', () => {
  let source: Awaited<ReturnType<typeof database>>;
  let target: Awaited<ReturnType<typeof database>>;

  beforeAll(async () => {
    [source, target] = await Promise.all([database('postgres', 'import source'), database('postgres', 'import target')]);
    secrets.push(source.env.POSTGRES_PASSWORD!, target.env.POSTGRES_PASSWORD!);
    for (const sql of [
      `CREATE TABLE big (id integer PRIMARY KEY, label text NOT NULL, at timestamptz DEFAULT now())`,
      `INSERT INTO big (id, label) SELECT g, md5(g::text) FROM generate_series(1, ${ROWS}) g`,
      `CREATE INDEX big_label ON big (label)`,
    ]) {
      const res = await call('POST', `/api/services/${source.id}/database/query`, { sql });
      expect(res.status, res.text).toBe(200);
    }
    // Something already in the target that the import replaces.
    await call('POST', `/api/services/${target.id}/database/query`, { sql: 'CREATE TABLE big (id integer)' });
  }, 15 * 60_000);

  it('copies 100,000 rows from a source server into the service', { timeout: 10 * 60_000 }, async () => {
    const sourceUrl = `postgres://${source.env.POSTGRES_USER}:${encodeURIComponent(source.env.POSTGRES_PASSWORD!)}@${source.slug}:5432/${source.env.POSTGRES_DB}`;
    const res = await call('POST', `/api/services/${target.id}/database/import/postgres-url`, { sourceUrl });
    expect(res.status, res.text).toBe(201);
    expect(Object.keys(res.json.result).sort()).toEqual(['createdAt', 'id', 'source', 'status']);
    expect(res.json.result).toMatchObject({ status: 'running', source: 'postgres-url' });

    const again = await call('POST', `/api/services/${target.id}/database/import/postgres-url`, { sourceUrl });
    expectErrorShape(again, 409, 'a second import while one runs');

    const done = await waitForImport(target.id, res.json.result.id, 8 * 60_000);
    const log = await logsOf(target.id, done.id);
    expect(done.status, `${done.error}\n${log}`).toBe('succeeded');
    expect(done).toMatchObject({ error: null, source: 'postgres-url', sourceLabel: `${source.slug}:5432/${source.env.POSTGRES_DB}` });
    expect(done.finishedAt).not.toBeNull();
    const count = await call('POST', `/api/services/${target.id}/database/query`, {
      sql: 'SELECT count(*)::int AS n, count(DISTINCT label)::int AS labels, max(id) AS top FROM big WHERE label = md5(id::text)',
    });
    expect(count.json.rows, count.text).toEqual([{ n: ROWS, labels: ROWS, top: ROWS }]);
    const index = await call('POST', `/api/services/${target.id}/database/query`, {
      sql: "SELECT indexname FROM pg_indexes WHERE tablename = 'big' ORDER BY indexname",
    });
    expect(index.json.rows).toEqual([{ indexname: 'big_label' }, { indexname: 'big_pkey' }]);
  });

  it('fails a source that never answers within its connect timeout, with the reason', { timeout: 5 * 60_000 }, async () => {
    // A peer of the project that accepts connections and never says a word.
    const silent = await call('POST', `/api/projects/${projectId}/services`, {
      name: 'silent',
      repoUrl: 'container-image',
      containerImage: 'busybox:1',
      runtimeMode: 'worker',
      startCommand: 'while true; do sleep 3600 | nc -l -p 5432; done',
    });
    expect(silent.status, silent.text).toBe(201);
    const deployed = await deploy(call, silent.json.service.id, 3 * 60_000);
    expect(deployed.deployment.status, deployed.logs.join('\n')).toBe('succeeded');
    const password = 'unreachable-Secret-9f8e7d';
    secrets.push(password);
    const started = Date.now();
    const res = await call('POST', `/api/services/${target.id}/database/import/postgres-url`, {
      sourceUrl: `postgresql://someone:${password}@${silent.json.service.slug}:5432/app`,
    });
    expect(res.status, res.text).toBe(201);
    const done = await waitForImport(target.id, res.json.result.id, 60_000);
    expect(done.status).toBe('failed');
    expect(Date.now() - started).toBeLessThan(30_000);
    // DATABASE_IMPORT_CONNECT_TIMEOUT_MS is 3 s: libpq's connect_timeout.
    expect(Date.now() - started).toBeGreaterThanOrEqual(2_500);
    expect(done.error).toMatch(/pg_dump could not dump the source.*timeout/i);
    expect(done.sourceLabel).toBe(`${silent.json.service.slug}:5432/app`);
  });

  it('refuses what it cannot import, naming the field', async () => {
    const bad = await call('POST', `/api/services/${target.id}/database/import/postgres-url`, {
      sourceUrl: 'mysql://u:hidden-pw-1234@db:3306/x',
    });
    expectErrorShape(bad, 400, 'a mysql URL');
    expect(bad.text).not.toContain('hidden-pw-1234');
    const unknown = await call('POST', `/api/services/${target.id}/database/import/postgres-url`, {
      sourceUrl: 'postgres://h/db',
      extra: 1,
    });
    expectErrorShape(unknown, 400, 'unknown field');
    expect(unknown.json.details.field).toBe('extra');
  });
});

describe('redis-url', () => {
  let source: Awaited<ReturnType<typeof database>>;
  let target: Awaited<ReturnType<typeof database>>;

  beforeAll(async () => {
    [source, target] = await Promise.all([database('redis', 'redis source'), database('redis', 'redis target')]);
    secrets.push(source.env.REDIS_PASSWORD!, target.env.REDIS_PASSWORD!);
    const seed = async (db: number, count: number, prefix: string) => {
      const client = new Redis({ host: '127.0.0.1', port: source.hostPort, password: source.env.REDIS_PASSWORD, db, lazyConnect: true });
      await client.connect();
      for (let from = 0; from < count; from += 5_000) {
        const batch = client.pipeline();
        for (let i = from; i < Math.min(from + 5_000, count); i++) batch.set(`${prefix}:${i}`, `value-${i}`);
        await batch.exec();
      }
      await client.hset(`${prefix}:hash`, { a: '1', b: '2' });
      await client.rpush(`${prefix}:list`, 'x', 'y', 'z');
      await client.set(`${prefix}:ttl`, 'expires', 'PX', 3_600_000);
      client.disconnect();
    };
    await seed(0, KEYS - 10_000, 'zero');
    await seed(3, 10_000, 'three');
  }, 15 * 60_000);

  it('copies 100,000 keys with their TTLs, logical databases kept', { timeout: 10 * 60_000 }, async () => {
    const sourceUrl = `redis://default:${encodeURIComponent(source.env.REDIS_PASSWORD!)}@127.0.0.1:${source.hostPort}`;
    const res = await call('POST', `/api/services/${target.id}/database/import/redis-url`, { sourceUrl });
    expect(res.status, res.text).toBe(201);
    expect(res.json.result).toMatchObject({ status: 'running', source: 'redis-url' });
    const done = await waitForImport(target.id, res.json.result.id, 8 * 60_000);
    const log = await logsOf(target.id, done.id);
    expect(done.status, `${done.error}\n${log}`).toBe('succeeded');
    expect(done.sourceLabel).toBe(`127.0.0.1:${source.hostPort}`);

    const check = async (db: number) => {
      const client = new Redis({ host: '127.0.0.1', port: target.hostPort, password: target.env.REDIS_PASSWORD, db, lazyConnect: true });
      await client.connect();
      try {
        return { size: await client.dbsize(), client: client };
      } catch (error) {
        client.disconnect();
        throw error;
      }
    };
    const zero = await check(0);
    const three = await check(3);
    try {
      expect(zero.size).toBe(KEYS - 10_000 + 3);
      expect(three.size).toBe(10_000 + 3);
      expect(await zero.client.get('zero:12345')).toBe('value-12345');
      expect(await three.client.get('three:9999')).toBe('value-9999');
      expect(await three.client.get('zero:1')).toBeNull();
      expect(await zero.client.hgetall('zero:hash')).toEqual({ a: '1', b: '2' });
      expect(await zero.client.lrange('zero:list', 0, -1)).toEqual(['x', 'y', 'z']);
      const ttl = await zero.client.pttl('zero:ttl');
      expect(ttl).toBeGreaterThan(3_000_000);
      expect(ttl).toBeLessThanOrEqual(3_600_000);
      expect(await zero.client.pttl('zero:1')).toBe(-1);
    } finally {
      zero.client.disconnect();
      three.client.disconnect();
    }
  });

  it('fails a source that never answers within its connect timeout', { timeout: 2 * 60_000 }, async () => {
    // Accepts connections and never says a word (the platform itself connects to Redis sources).
    const sockets: Socket[] = [];
    const silent: Server = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const port = (silent.address() as { port: number }).port;
    try {
      const started = Date.now();
      const res = await call('POST', `/api/services/${target.id}/database/import/redis-url`, {
        sourceUrl: `redis://default:unreachable-Redis-Secret-42@127.0.0.1:${port}/0`,
      });
      secrets.push('unreachable-Redis-Secret-42');
      expect(res.status, res.text).toBe(201);
      const done = await waitForImport(target.id, res.json.result.id, 60_000);
      expect(done.status).toBe('failed');
      expect(Date.now() - started).toBeGreaterThanOrEqual(2_500);
      expect(Date.now() - started).toBeLessThan(20_000);
      expect(done.error).toBe('Could not connect to the source: no answer within 3 s');
      expect(sockets.length).toBeGreaterThan(0);
    } finally {
      for (const socket of sockets) socket.destroy();
      silent.close();
    }
  });

  it('fails, with the reason, an import the platform was stopped in the middle of', { timeout: 3 * 60_000 }, async () => {
    // A source that never answers keeps the import running for the connect timeout (3 s): the platform is killed meanwhile.
    const silent: Server = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const res = await call('POST', `/api/services/${target.id}/database/import/redis-url`, {
        sourceUrl: `redis://default:interrupted-Secret-77@127.0.0.1:${(silent.address() as { port: number }).port}`,
      });
      secrets.push('interrupted-Secret-77');
      expect(res.status, res.text).toBe(201);
      await server.kill();
      server = await startServerProcess(ENV, { dataDir: server.dataDir, token: server.token });
      servers.push(server);
      call = recording(api(server.url, server.token));
      const done = await waitForImport(target.id, res.json.result.id, 60_000);
      expect(done.status).toBe('failed');
      expect(done.error).toBe('The server stopped while this import ran; it was not finished. Start the import again.');
      expect(done.finishedAt).not.toBeNull();
      expect(await logsOf(target.id, done.id)).toContain('The server stopped while this import ran');
    } finally {
      silent.close();
    }
  });

  it('answers 400 for a postgres URL into a redis service', async () => {
    const res = await call('POST', `/api/services/${target.id}/database/import/postgres-url`, { sourceUrl: 'postgres://h/db' });
    expectErrorShape(res, 400, 'wrong engine');
  });
});

describe('secrets', () => {
  it('never shows a source password in an answer, a log line, the server output or a database row', async () => {
    expect(secrets.length).toBeGreaterThanOrEqual(5);
    // The import logs too, through the API.
    const services = (await call('GET', `/api/projects`)).json.projects.flatMap((p: { services: Array<{ id: string }> }) => p.services);
    for (const service of services) {
      const list = await call('GET', `/api/services/${service.id}/database/imports`);
      if (list.status !== 200) continue;
      for (const i of list.json.imports as Array<{ id: string }>) await logsOf(service.id, i.id);
    }
    const output = servers.map((s) => s.output()).join('\n');
    const files = readdirSync(server.dataDir)
      .filter((f) => f.startsWith('slipway.db'))
      .map((f) => readFileSync(path.join(server.dataDir, f)).toString('latin1'))
      .join('\n');
    expect(files.length).toBeGreaterThan(0);
    // The reveal answers are the one place meant to carry the services' own passwords.
    const answers = seen.filter((text) => !text.startsWith('{"key"')).join('\n');
    for (const secret of secrets) {
      expect(answers.includes(secret), `an answer holds ${secret.slice(0, 3)}…`).toBe(false);
      expect(output.includes(secret), `the server output holds ${secret.slice(0, 3)}…`).toBe(false);
      expect(files.includes(secret), `the database file holds ${secret.slice(0, 3)}…`).toBe(false);
    }
    expect(seen.length).toBeGreaterThan(0);
  });
});
