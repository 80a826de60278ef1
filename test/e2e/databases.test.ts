import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { networkInterfaces } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectErrorShape } from '../helpers/error-bodies.js';
import { deploy } from '../helpers/deployments.js';
import { docker, provisionDocker } from '../helpers/docker.js';
import { api, startServerProcess, type ServerProcess } from '../helpers/server-process.js';

/*
 * Database services end to end, over real HTTP, on real containers of the stand-in images
 * (test/provision/images.sh: PostgreSQL 15 as postgres:17 and as timescale, MariaDB 10.11 as
 * mysql:8.4, Redis 7, ClickHouse 18.16, and a MongoDB wire-protocol stand-in as mongo:7).
 * Per engine: deploy, the engine's own readiness check in the log, tables / rows / query / row
 * edits, a peer service of the project reaching it by its slug with the suggested URL, data kept
 * across a redeploy and a platform restart, and the host port bound to loopback unless public.
 */

type Call = ReturnType<typeof api>;

interface EngineCase {
  engine: 'postgres' | 'timescale' | 'mysql' | 'redis' | 'mongodb' | 'clickhouse';
  /** Statements that create the table the case works on (POST query). */
  seed: (env: Record<string, string>) => string[];
  /** The table id the tables endpoint lists, from the service's env. */
  table: (env: Record<string, string>) => string;
  /** A row to insert (POST rows), and how its primary key is named from the answer's id. */
  insert: Record<string, unknown>;
  primaryKey: (id: unknown) => Record<string, unknown>;
  /** A change to the inserted row (PATCH rows), or null when the engine refuses edits of this table. */
  update: Record<string, unknown> | null;
  /** How to find a value in rows: the column holding the row's text. */
  textColumn: string;
  /** A peer container of the project that writes `from-peer` through the suggested variable. */
  peer: { image: string; env: (slug: string, suggested: (key: string) => string) => Record<string, string>; command: string } | null;
  /** A query whose answer proves the peer's write arrived (its rows mention from-peer). */
  peerCheck: (env: Record<string, string>) => string;
  extra?: { postgresLogicalReplicationEnabled?: boolean; databasePublicEnabled?: boolean };
}

const CASES: EngineCase[] = [
  {
    engine: 'postgres',
    seed: () => ['CREATE TABLE items (id serial PRIMARY KEY, name text NOT NULL, big bigint, payload bytea, at timestamptz)'],
    table: () => 'public.items',
    insert: { name: 'first', big: '9007199254740993', payload: '\\x00ff', at: '2026-11-25T10:00:00Z' },
    primaryKey: (id) => ({ id }),
    update: { name: 'changed' },
    textColumn: 'name',
    peer: {
      image: 'postgres:17',
      env: (_slug, suggested) => ({ DATABASE_URL: suggested('DATABASE_URL') }),
      command: `psql "$DATABASE_URL" -v ON_ERROR_STOP=1 -c "INSERT INTO items (name) VALUES ('from-peer')" && sleep 3600`,
    },
    peerCheck: () => "SELECT name FROM items WHERE name = 'from-peer'",
  },
  {
    engine: 'timescale',
    seed: () => ['CREATE TABLE metrics (id bigserial PRIMARY KEY, name text NOT NULL, value double precision)'],
    table: () => 'public.metrics',
    insert: { name: 'cpu', value: 0.5 },
    primaryKey: (id) => ({ id }),
    update: { value: 0.75 },
    textColumn: 'name',
    peer: null,
    peerCheck: () => 'SHOW wal_level',
    extra: { postgresLogicalReplicationEnabled: true },
  },
  {
    engine: 'mysql',
    seed: () => ['CREATE TABLE items (id INT AUTO_INCREMENT PRIMARY KEY, name VARCHAR(200) NOT NULL, big BIGINT, at DATETIME)'],
    table: (env) => `${env.MYSQL_DATABASE}.items`,
    insert: { name: 'first', big: '9007199254740993', at: '2026-11-25 10:00:00' },
    primaryKey: (id) => ({ id }),
    update: { name: 'changed' },
    textColumn: 'name',
    peer: {
      image: 'mysql:8.4',
      env: (slug) => ({
        DB_USER: `\${${slug}.MYSQL_USER}`,
        DB_PASSWORD: `\${${slug}.MYSQL_PASSWORD}`,
        DB_NAME: `\${${slug}.MYSQL_DATABASE}`,
      }),
      command: `mysql -h "$DB_HOST" -u "$DB_USER" -p"$DB_PASSWORD" "$DB_NAME" -e "INSERT INTO items (name) VALUES ('from-peer')" && sleep 3600`,
    },
    peerCheck: () => "SELECT name FROM items WHERE name = 'from-peer'",
  },
  {
    engine: 'redis',
    seed: () => ['HSET user:1 name ada', 'HSET user:1 lang en'],
    table: () => 'db0.user:1',
    insert: { field: 'city', value: 'London' },
    primaryKey: () => ({ field: 'city' }),
    update: { value: 'Paris' },
    textColumn: 'value',
    peer: {
      image: 'redis:7',
      env: (_slug, suggested) => ({ REDIS_URL: suggested('REDIS_URL') }),
      command: `redis-cli -u "$REDIS_URL" HSET user:1 peer from-peer && sleep 3600`,
    },
    peerCheck: () => 'HGET user:1 peer',
    extra: { databasePublicEnabled: true },
  },
  {
    engine: 'mongodb',
    seed: () => ['{"create": "items"}'],
    table: () => 'test.items',
    insert: { name: 'first', n: 1 },
    primaryKey: (id) => ({ _id: id }),
    update: { name: 'changed' },
    textColumn: 'name',
    peer: null,
    peerCheck: () => '{"find": "items", "filter": {}}',
  },
  {
    engine: 'clickhouse',
    seed: (env) => [`CREATE TABLE ${env.CLICKHOUSE_DB}.events (id UInt64, name String) ENGINE = MergeTree ORDER BY id`],
    table: (env) => `${env.CLICKHOUSE_DB}.events`,
    insert: { id: 1, name: 'first' },
    primaryKey: (id) => {
      // The key as ClickHouse declares it (ORDER BY id), not null.
      expect(id).toBe(1);
      return { id };
    },
    update: { name: 'changed' },
    textColumn: 'name',
    peer: null,
    peerCheck: (env) => `SELECT count() AS n FROM ${env.CLICKHOUSE_DB}.events`,
  },
];

const ENV = { BUILD_CONCURRENCY: '2', HEALTH_TIMEOUT_MS: '120000', STOP_GRACE_SECONDS: '5', WORKER_SETTLE_MS: '1500' };
let server: ServerProcess;
let call: Call;
let projectId: string;
const servers: ServerProcess[] = [];

beforeAll(async () => {
  await provisionDocker({ images: 'busybox,debian,postgres,timescale,mysql,redis,clickhouse,mongo' });
  server = await startServerProcess(ENV);
  servers.push(server);
  call = api(server.url, server.token);
  projectId = (await call('POST', '/api/projects', { name: `databases-${Date.now()}` })).json.project.id;
}, 30 * 60_000);

afterAll(async () => {
  if (projectId && call) await call('DELETE', `/api/projects/${projectId}`).catch(() => undefined);
  for (const s of servers.reverse()) await s.dispose();
});

/** The service's env as its reveal endpoint gives it (values in clear: the test needs the database names). */
async function envOf(serviceId: string): Promise<Record<string, string>> {
  const { env } = (await call('GET', `/api/services/${serviceId}/overview`)).json;
  const out: Record<string, string> = {};
  for (const variable of env as Array<{ id: string; key: string }>) {
    out[variable.key] = (await call('POST', `/api/services/${serviceId}/env/${variable.id}/reveal`)).json.value;
  }
  return out;
}

function ok(res: { status: number; text: string }, label: string): void {
  expect(res.status, `${label}: ${res.text.slice(0, 500)}`).toBeLessThan(300);
}

function externalAddress(): string {
  const found = Object.entries(networkInterfaces())
    .filter(([name]) => !/^(docker|br-|veth)/.test(name))
    .flatMap(([, list]) => list ?? [])
    .find((a) => a.family === 'IPv4' && !a.internal);
  if (!found) throw new Error('no non-loopback IPv4 address on this machine');
  return found.address;
}

function connects(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: 2_000 });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

const created = new Map<string, { id: string; slug: string; hostPort: number; env: Record<string, string> }>();

describe.each(CASES)('$engine', (c) => {
  it('deploys, answers the engine readiness check, and is administered through the API', { timeout: 10 * 60_000 }, async () => {
    const res = await call('POST', `/api/projects/${projectId}/services`, {
      name: `${c.engine} db`,
      repoUrl: 'database',
      repoFullName: `database:${c.engine}`,
      branch: 'main',
      ...c.extra,
    });
    ok(res, 'create');
    const service = res.json.service;
    const result = await deploy(call, service.id, 5 * 60_000);
    expect(result.deployment.status, result.logs.join('\n')).toBe('succeeded');
    expect(result.logs.join('\n')).toMatch(/Database ready: .*answered/);
    const env = await envOf(service.id);
    created.set(c.engine, { id: service.id, slug: service.slug, hostPort: service.hostPort, env });

    for (const statement of c.seed(env))
      ok(await call('POST', `/api/services/${service.id}/database/query`, { sql: statement }), statement);
    const tables = (await call('GET', `/api/services/${service.id}/database/tables`)).json;
    expect(tables.engine).toBe(c.engine);
    expect(tables.tables.map((t: { id: string }) => t.id)).toContain(c.table(env));

    const inserted = await call('POST', `/api/services/${service.id}/database/rows`, { table: c.table(env), values: c.insert });
    ok(inserted, 'insert');
    expect(inserted.json).toMatchObject({ ok: true, table: c.table(env) });
    const key = c.primaryKey(inserted.json.id);

    const page = await call('GET', `/api/services/${service.id}/database/rows?table=${encodeURIComponent(c.table(env))}&limit=50&offset=0`);
    ok(page, 'rows');
    expect(page.json).toMatchObject({ engine: c.engine, table: c.table(env), limit: 50, offset: 0 });
    expect(page.json.total).toBeGreaterThanOrEqual(1);
    expect(page.json.columns.length).toBeGreaterThan(0);
    expect(JSON.stringify(page.json.rows)).toContain(String(c.insert[c.textColumn]));

    if (c.update) {
      ok(
        await call('PATCH', `/api/services/${service.id}/database/rows`, { table: c.table(env), primaryKey: key, values: c.update }),
        'update',
      );
      const after = (await call('GET', `/api/services/${service.id}/database/rows?table=${encodeURIComponent(c.table(env))}`)).json;
      expect(JSON.stringify(after.rows)).toContain(String(Object.values(c.update)[0]));
      ok(await call('DELETE', `/api/services/${service.id}/database/rows`, { table: c.table(env), primaryKey: key }), 'delete');
      const gone = (await call('GET', `/api/services/${service.id}/database/rows?table=${encodeURIComponent(c.table(env))}`)).json;
      expect(gone.total).toBe(page.json.total - 1);
      // Put one back: the restart checks below look for it.
      ok(await call('POST', `/api/services/${service.id}/database/rows`, { table: c.table(env), values: c.insert }), 'insert again');
    }

    const unknown = await call('GET', `/api/services/${service.id}/database/rows?table=${encodeURIComponent(`${c.table(env)}_nope`)}`);
    expectErrorShape(unknown, 404, 'unknown table');
    const bad = await call('POST', `/api/services/${service.id}/database/query`, {
      sql: c.engine === 'mongodb' ? '{"find": ' : c.engine === 'redis' ? 'NOSUCHCOMMAND x' : 'SELEC 1',
    });
    expectErrorShape(bad, 400, 'bad statement');
    expect(bad.json.error).toBe(c.engine === 'mongodb' ? 'validation_error' : 'query_error');
  });

  // Only where the stand-in image has a client to connect with (see docs/databases.md).
  if (c.peer)
    it('is reached by a peer service of the project through its slug and the suggested variable', { timeout: 5 * 60_000 }, async () => {
      const db = created.get(c.engine)!;
      const suggestions = (await call('GET', `/api/projects/${projectId}/database-variable-suggestions`)).json.suggestions as Array<{
        key: string;
        value: string;
      }>;
      const ours = suggestions.filter((s) => s.value.includes(`\${${db.slug}.`));
      expect(ours.length, JSON.stringify(suggestions)).toBeGreaterThan(0);
      // The suggested URL as it is: references to the database's variables, its slug as the host.
      const suggested = (key: string) => {
        const found = ours.find((s) => s.value.startsWith(key === 'REDIS_URL' ? 'redis://' : 'postgres')) ?? ours[0]!;
        expect(found.value).toContain(`@${db.slug}:`);
        return found.value;
      };
      const peer = c.peer!;
      const res = await call('POST', `/api/projects/${projectId}/services`, {
        name: `${c.engine} peer`,
        repoUrl: 'container-image',
        containerImage: peer.image,
        runtimeMode: 'worker',
        startCommand: peer.command,
      });
      ok(res, 'peer create');
      const peerId = res.json.service.id;
      for (const [key, value] of Object.entries({ ...peer.env(db.slug, suggested), DB_HOST: db.slug }))
        ok(await call('POST', `/api/services/${peerId}/env`, { key, value }), `env ${key}`);
      const result = await deploy(call, peerId, 3 * 60_000);
      expect(result.deployment.status, result.logs.join('\n')).toBe('succeeded');
      let seen = '';
      for (let i = 0; i < 60 && !seen.includes('from-peer'); i++) {
        seen = (await call('POST', `/api/services/${db.id}/database/query`, { sql: c.peerCheck(db.env) })).text;
        if (!seen.includes('from-peer')) await new Promise((r) => setTimeout(r, 500));
      }
      expect(seen).toContain('from-peer');
      await call('DELETE', `/api/services/${peerId}`);
    });
});

describe('clickhouse rows by key', () => {
  it('marks the declared key primary and refuses an edit of a key that several rows share with 409', async () => {
    const db = created.get('clickhouse')!;
    const table = `${db.env.CLICKHOUSE_DB}.shared_keys`;
    const sql = (statement: string) => call('POST', `/api/services/${db.id}/database/query`, { sql: statement });
    ok(await sql(`CREATE TABLE ${table} (id UInt32, at DateTime, v String) ENGINE = MergeTree PRIMARY KEY id ORDER BY (id, at)`), 'create');
    ok(await sql(`INSERT INTO ${table} VALUES (1, now(), 'a'), (1, now(), 'b'), (2, now(), 'c')`), 'seed');
    const page = (await call('GET', `/api/services/${db.id}/database/rows?table=${encodeURIComponent(table)}`)).json;
    expect(page.columns.map((c: { name: string; primary: boolean }) => [c.name, c.primary])).toEqual([
      ['id', true],
      ['at', false],
      ['v', false],
    ]);
    const shared = await call('PATCH', `/api/services/${db.id}/database/rows`, { table, primaryKey: { id: 1 }, values: { v: 'x' } });
    expectErrorShape(shared, 409, 'shared key');
    expect(shared.json.error).toBe('conflict');
    expect(shared.json.message).toMatch(/^2 rows of table "shared_keys" have the key/);
    expect(shared.json.details).toMatchObject({ rows: 2 });
    expectErrorShape(await call('DELETE', `/api/services/${db.id}/database/rows`, { table, primaryKey: { id: 1 } }), 409, 'shared key');
    expectErrorShape(await call('DELETE', `/api/services/${db.id}/database/rows`, { table, primaryKey: { id: 3 } }), 404, 'no row');
    ok(await call('DELETE', `/api/services/${db.id}/database/rows`, { table, primaryKey: { id: 2 } }), 'delete one');
    const left = (await sql(`SELECT v FROM ${table} ORDER BY v`)).json.rows;
    expect(left).toEqual([{ v: 'a' }, { v: 'b' }]);
  });
});

describe('across redeploys and restarts', () => {
  it("keeps every database's data across a redeploy", { timeout: 10 * 60_000 }, async () => {
    for (const c of CASES) {
      const db = created.get(c.engine);
      expect(db, `${c.engine} was created`).toBeDefined();
      const result = await deploy(call, db!.id, 5 * 60_000);
      expect(result.deployment.status, `${c.engine}: ${result.logs.join('\n')}`).toBe('succeeded');
      const rows = (await call('GET', `/api/services/${db!.id}/database/rows?table=${encodeURIComponent(c.table(db!.env))}`)).json;
      expect(JSON.stringify(rows.rows), c.engine).toContain(String(c.insert[c.textColumn]));
    }
  });

  it('keeps serving and keeps the data across a platform restart', { timeout: 5 * 60_000 }, async () => {
    await server.kill();
    server = await startServerProcess(ENV, { dataDir: server.dataDir, token: server.token });
    servers.push(server);
    call = api(server.url, server.token);
    for (const c of CASES) {
      const db = created.get(c.engine)!;
      let res = await call('GET', `/api/services/${db.id}/database/rows?table=${encodeURIComponent(c.table(db.env))}`);
      // The runner finds the containers that kept running as it starts.
      for (let i = 0; i < 40 && res.status === 409; i++) {
        await new Promise((r) => setTimeout(r, 250));
        res = await call('GET', `/api/services/${db.id}/database/rows?table=${encodeURIComponent(c.table(db.env))}`);
      }
      ok(res, `${c.engine} after restart`);
      expect(JSON.stringify(res.json.rows), c.engine).toContain(String(c.insert[c.textColumn]));
    }
  });

  it('starts postgres and timescale with wal_level=logical only when asked', async () => {
    const logical = await call('POST', `/api/services/${created.get('timescale')!.id}/database/query`, { sql: 'SHOW wal_level' });
    expect(logical.json.rows).toEqual([{ wal_level: 'logical' }]);
    const plain = await call('POST', `/api/services/${created.get('postgres')!.id}/database/query`, { sql: 'SHOW wal_level' });
    expect(plain.json.rows).toEqual([{ wal_level: 'replica' }]);
  });

  it('binds the host port to loopback unless the database is public', async () => {
    const outside = externalAddress();
    const pg = created.get('postgres')!;
    const redis = created.get('redis')!;
    expect(await connects('127.0.0.1', pg.hostPort)).toBe(true);
    expect(await connects(outside, pg.hostPort)).toBe(false);
    expect(await connects(outside, redis.hostPort)).toBe(true);
    const { service } = (await call('GET', `/api/services/${redis.id}/overview`)).json;
    expect(service.databasePublicEnabled).toBe(true);
  });
});

describe('bad input and failure (postgres)', () => {
  const id = () => created.get('postgres')!.id;
  const rows = (table: string, query = '') => call('GET', `/api/services/${id()}/database/rows?table=${encodeURIComponent(table)}${query}`);

  it('treats table names as identifiers checked against the catalog, and values as values', async () => {
    for (const table of ['public.items; DROP TABLE items', 'public."items"', "public.items' OR '1'='1", 'pg_catalog.pg_authid']) {
      expectErrorShape(await rows(table), 404, table);
    }
    const sneaky = "x'); DROP TABLE items; --";
    ok(await call('POST', `/api/services/${id()}/database/rows`, { table: 'public.items', values: { name: sneaky } }), 'insert sneaky');
    const found = await call('POST', `/api/services/${id()}/database/query`, { sql: 'SELECT count(*)::int AS n FROM items' });
    expect(found.json.rows[0].n).toBeGreaterThan(0);
    expect(JSON.stringify((await rows('public.items', '&limit=500')).json.rows)).toContain(sneaky.replace(/'/g, "'"));
    expectErrorShape(
      await call('POST', `/api/services/${id()}/database/rows`, {
        table: 'public.items',
        values: { 'name" text); DROP TABLE items; --': 'x' },
      }),
      400,
      'column name',
    );
    for (const query of ['&limit=0', '&limit=501', '&offset=-1', '&limit=abc']) {
      const res = await rows('public.items', query);
      expectErrorShape(res, 400, query);
      expect(res.json.details.field).toBe(query.includes('offset') ? 'offset' : 'limit');
    }
  });

  it('reads back a 10 MB value; a 10 MB request body is refused with 413', { timeout: 60_000 }, async () => {
    ok(
      await call('POST', `/api/services/${id()}/database/query`, { sql: 'CREATE TABLE blobs (id serial PRIMARY KEY, v text)' }),
      'create blobs',
    );
    ok(
      await call('POST', `/api/services/${id()}/database/query`, { sql: "INSERT INTO blobs (v) VALUES (repeat('x', 10485760))" }),
      'insert 10 MB',
    );
    const page = await rows('public.blobs');
    ok(page, 'read 10 MB');
    expect(page.json.rows[0].v.length).toBe(10_485_760);
    const tooBig = await call('POST', `/api/services/${id()}/database/rows`, {
      table: 'public.blobs',
      values: { v: 'y'.repeat(10_485_760) },
    });
    expectErrorShape(tooBig, 413, '10 MB body');
  });

  it('caps a query of 10 million rows, with the platform memory flat', { timeout: 120_000 }, async () => {
    const rss = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${server.child.pid}/status`, 'utf8'))![1]) * 1024;
    const before = rss();
    const res = await call('POST', `/api/services/${id()}/database/query`, {
      sql: 'SELECT g, md5(g::text) AS h FROM generate_series(1, 10000000) g',
    });
    ok(res, '10 M rows');
    expect(res.json).toMatchObject({ rowCount: 1000, truncated: true });
    expect(res.json.rows).toHaveLength(1000);
    expect(rss() - before).toBeLessThan(64 * 1024 * 1024);
  });

  it('answers 409 not_running for a stopped database, and an error (never a hang) for one stopped mid-query', {
    timeout: 120_000,
  }, async () => {
    const sleeping = call('POST', `/api/services/${id()}/database/query`, { sql: 'SELECT pg_sleep(20)' });
    await new Promise((r) => setTimeout(r, 1_000));
    const { deployments } = (await call('GET', `/api/services/${id()}/deployments`)).json;
    const container = deployments.find((d: { status: string }) => d.status === 'succeeded').containerName as string;
    await docker('stop', '-t', '5', container);
    const interrupted = await sleeping;
    expect([400, 409]).toContain(interrupted.status);
    expectErrorShape(interrupted, interrupted.status, 'stopped mid-query');
    const after = await call('GET', `/api/services/${id()}/database/tables`);
    expectErrorShape(after, 409, 'stopped');
    expect(after.json.error).toBe('not_running');
    // A redeploy brings it back with its data.
    const result = await deploy(call, id(), 3 * 60_000);
    expect(result.deployment.status, result.logs.join('\n')).toBe('succeeded');
    expect((await rows('public.items')).status).toBe(200);
  });

  it('ends a query whose database is deleted mid-request, and forgets the database', { timeout: 120_000 }, async () => {
    const db = created.get('mysql')!;
    const sleeping = call('POST', `/api/services/${db.id}/database/query`, { sql: 'SELECT SLEEP(12)' });
    await new Promise((r) => setTimeout(r, 1_000));
    const deleting = Date.now();
    ok(await call('DELETE', `/api/services/${db.id}`), 'delete mysql');
    const interrupted = await sleeping;
    // The server went with its container: the statement ended there, well before its 12 s.
    expect(Date.now() - deleting).toBeLessThan(9_000);
    expect(interrupted.status).toBeGreaterThanOrEqual(400);
    expectErrorShape(interrupted, interrupted.status, 'deleted mid-query');
    expectErrorShape(await call('GET', `/api/services/${db.id}/database/tables`), 404, 'deleted');
    const volumes = await docker('volume', 'ls', '-q', '--filter', `name=${db.id}`);
    expect(volumes).toBe('');
    const health = await call('GET', '/api/health');
    expect(health.status).toBe(200);
  });
});
