import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClickHouseDatabaseAdmin } from '../../adapters/databases/clickhouse.database-admin.js';
import { MysqlDatabaseAdmin } from '../../adapters/databases/mysql.database-admin.js';
import { PostgresDatabaseAdmin } from '../../adapters/databases/postgres.database-admin.js';
import type { SqlAdminOptions } from '../../adapters/databases/sql-admin-support.js';
import type { CellValue, DatabaseAdmin, DatabaseEndpoint, QueryLimits, TableRef } from '../../src/databases/database-admin.port.js';
import type { DatabaseEngine } from '../../src/domain/database-engines.js';
import { ConflictError, NotFoundError, NotRunningError, QueryError, ValidationError } from '../../src/domain/errors.js';

/**
 * The SQL adapters of the DatabaseAdmin port against real servers: containers of the images production
 * runs (`postgres:17`, `mysql:8.4`, `clickhouse/clickhouse-server:24`; here the stand-ins of Debian's
 * PostgreSQL 15, MariaDB 10.11 and ClickHouse 18.16), started per run as `sqladmin-*` and removed after.
 * PostgreSQL falls back to the tests' host server (PG_TEST_URL) when its image is not there.
 */

const ROOT = path.resolve(import.meta.dirname, '../..');
const run = promisify(execFile);
const LIMITS: QueryLimits = { timeoutMs: 10_000, rowCap: 1_000 };
const never = () => new AbortController().signal;
const ODD_TABLE = 'o"dd`\\';
const ODD_COLUMN = 'c"o`l\\';

type TestAdmin = DatabaseAdmin & { readonly openPools: number };

interface Engine {
  label: string;
  admin: TestAdmin;
  db: DatabaseEndpoint;
  /** The schema of the tables the tests create: `public`, the MySQL database, the ClickHouse database. */
  schema: string;
  makeAdmin(options: SqlAdminOptions): TestAdmin;
  sql: {
    /** `items (id <int> key, name <text>)`. */
    createItems: string;
    /** `lines (order_id, line_no, qty)` keyed by both ids. */
    createLines: string;
    /** `loose (a <int>, b <text>)` without a key. */
    createLoose: string;
    /** `blobs (id <int> key, body <long text>)`. */
    createBlobs: string;
    /** A table named ODD_TABLE with one int column ODD_COLUMN, no key: quotes, backticks and a backslash in both names. */
    createOdd: string;
    twoStatements: string;
    syntaxError: string;
    /** Runs longer than 5 s on the server. */
    slow: string;
    /** Returns 10 M rows. */
    tenMillionRows: string;
    /** Two result columns of the same name (none where the engine refuses that). */
    duplicateNames: string | null;
    /** Counts (as `n`) the statements running on the server whose text contains a marker, not itself. */
    running: (marker: string) => string;
  };
  cleanup: () => Promise<void>;
}

// ---- containers ----------------------------------------------------------------------------------

async function docker(...args: string[]): Promise<string> {
  const { stdout } = await run('docker', args, { maxBuffer: 16 * 1024 * 1024 });
  return stdout.trim();
}

async function imageExists(image: string): Promise<boolean> {
  return docker('image', 'inspect', image).then(
    () => true,
    () => false,
  );
}

/** Starts `image` as `sqladmin-<engine>-<random>` with the container port on a random host port. */
async function startContainer(
  engine: string,
  image: string,
  port: number,
  env: Record<string, string>,
): Promise<{ name: string; hostPort: number }> {
  const name = `sqladmin-${engine}-${randomBytes(4).toString('hex')}`;
  started.push(name);
  await docker(
    'run',
    '-d',
    '--name',
    name,
    '-p',
    `127.0.0.1::${port}`,
    ...Object.entries(env).flatMap(([k, v]) => ['-e', `${k}=${v}`]),
    image,
  );
  const mapping = await docker('port', name, `${port}/tcp`);
  const hostPort = Number(/:(\d+)\s*$/m.exec(mapping)?.[1]);
  if (!hostPort) throw new Error(`no host port for ${name}: ${mapping}`);
  return { name, hostPort };
}

async function removeContainer(name: string): Promise<void> {
  await docker('rm', '-f', '-v', name).catch(() => undefined);
}

/** Every container started, removed after all tests even when a suite's setup failed half-way. */
const started: string[] = [];
afterAll(async () => {
  await Promise.all(started.map(removeContainer));
});

/** Polls the adapter's own readiness check: the images initialise (and restart) before they serve. */
async function waitReady(admin: DatabaseAdmin, db: DatabaseEndpoint, timeoutMs = 120_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      return await admin.checkReady(db, AbortSignal.timeout(5_000));
    } catch (error) {
      last = error;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  throw new Error(`${db.engine} not ready: ${String(last)}`);
}

/** A port nothing listens on: a stopped server. */
async function closedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

function endpoint(engine: DatabaseEngine, host: string, port: number, env: Record<string, string>): DatabaseEndpoint {
  return { serviceId: `svc-${engine}-${randomBytes(3).toString('hex')}`, engine, host, port, env };
}

async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a rejection');
}

function rssMb(): number {
  return process.memoryUsage().rss / 1024 / 1024;
}

// ---- the cases every SQL engine passes ------------------------------------------------------------

function sharedCases(get: () => Engine): void {
  const t = (name: string): TableRef => ({ schema: get().schema, name });
  const q = (text: string, limits: Partial<QueryLimits> = {}, signal = never()) =>
    get().admin.query(get().db, text, { ...LIMITS, ...limits }, signal);

  beforeAll(async () => {
    const { admin, db, sql } = get();
    for (const ddl of [sql.createItems, sql.createLines, sql.createLoose, sql.createBlobs, sql.createOdd]) await q(ddl);
    for (let i = 1; i <= 25; i++) await admin.insertRow(db, t('items'), { id: i, name: `item ${i}` }, never());
  });

  it('checkReady answers with the server version', async () => {
    expect(await get().admin.checkReady(get().db, never())).toMatch(/^SELECT 1 answered \(.+\d.+\)$/);
  });

  it('lists the user tables of the service database only, with row counts', async () => {
    const tables = await get().admin.listTables(get().db, {}, never());
    const schema = get().schema;
    expect(tables.find((x) => x.name === 'items')).toEqual({ id: `${schema}.items`, name: 'items', schema, rowCount: 25 });
    expect(tables.map((x) => x.name)).toEqual(expect.arrayContaining(['items', 'lines', 'loose', 'blobs']));
    expect(tables.every((x) => x.schema === schema)).toBe(true);
    expect(tables.map((x) => x.schema)).not.toContain('information_schema');
  });

  it('reads pages in key order with the total and the engine type names', async () => {
    const { admin, db } = get();
    const page = await admin.readRows(db, t('items'), { limit: 10, offset: 20 }, never());
    expect(page.total).toBe(25);
    expect(page.rows.map((r) => r.id)).toEqual([21, 22, 23, 24, 25]);
    expect(page.rows[0]).toEqual({ id: 21, name: 'item 21' });
    expect(page.columns.map((c) => c.name)).toEqual(['id', 'name']);
    expect(page.columns[0]!.type.length).toBeGreaterThan(2);
    const first = await admin.readRows(db, t('items'), { limit: 3, offset: 0 }, never());
    expect(first.rows.map((r) => r.id)).toEqual([1, 2, 3]);
    // The API's bound of a page (ROWS_PAGE_LIMIT), the same in every adapter.
    for (const limit of [0, 501])
      expect(await rejection(admin.readRows(db, t('items'), { limit, offset: 0 }, never()))).toBeInstanceOf(ValidationError);
    expect(await rejection(admin.readRows(db, t('items'), { limit: 10, offset: -1 }, never()))).toBeInstanceOf(ValidationError);
  });

  it('treats injected table names as unknown tables', async () => {
    const { admin, db } = get();
    for (const name of ['items; DROP TABLE items', '"items"', '`items`', 'items --', "items' OR '1'='1"]) {
      const error = await rejection(admin.readRows(db, t(name), { limit: 5, offset: 0 }, never()));
      expect(error).toBeInstanceOf(NotFoundError);
      expect((error as NotFoundError).details).toEqual({ resource: 'table', id: `${get().schema}.${name}` });
      expect(await rejection(admin.insertRow(db, t(name), { id: 99 }, never()))).toBeInstanceOf(NotFoundError);
    }
    expect(await rejection(admin.readRows(db, { schema: 'nope', name: 'items' }, { limit: 5, offset: 0 }, never()))).toBeInstanceOf(
      NotFoundError,
    );
    expect((await admin.readRows(db, t('items'), { limit: 1, offset: 0 }, never())).total).toBe(25);
  });

  it('quotes names with quotes, backticks and backslashes read from the catalog', async () => {
    const { admin, db } = get();
    const ref = t(ODD_TABLE);
    for (let i = 0; i < 5; i++) await admin.insertRow(db, ref, { [ODD_COLUMN]: i }, never());
    expect((await admin.listTables(db, {}, never())).find((x) => x.name === ODD_TABLE)).toEqual({
      id: `${get().schema}.${ODD_TABLE}`,
      name: ODD_TABLE,
      schema: get().schema,
      rowCount: 5,
    });
    const page = await admin.readRows(db, ref, { limit: 2, offset: 2 }, never());
    expect(page.rows).toEqual([{ [ODD_COLUMN]: 2 }, { [ODD_COLUMN]: 3 }]);
    expect(page.columns.map((c) => c.name)).toEqual([ODD_COLUMN]);
  });

  it('binds values (stored literally) and refuses unknown column names', async () => {
    const { admin, db } = get();
    const evil = `x'); DROP TABLE items; -- \\ " \` $1 ? {p1:String}`;
    await admin.insertRow(db, t('loose'), { a: 7, b: evil }, never());
    const page = await admin.readRows(db, t('loose'), { limit: 100, offset: 0 }, never());
    expect(page.rows).toContainEqual({ a: 7, b: evil });
    const error = await rejection(admin.insertRow(db, t('loose'), { a: 1, 'b) VALUES (1, 2); --': 'x' }, never()));
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).details).toMatchObject({ field: 'values' });
    expect(error.message).toBe('unknown column "b) VALUES (1, 2); --"');
    expect((await admin.readRows(db, t('items'), { limit: 1, offset: 0 }, never())).total).toBe(25);
  });

  it('runs a select and a write statement', async () => {
    const select = await q(`SELECT id, name FROM items WHERE id <= 3 ORDER BY id`);
    expect(select.rows).toEqual([
      { id: 1, name: 'item 1' },
      { id: 2, name: 'item 2' },
      { id: 3, name: 'item 3' },
    ]);
    expect(select.columns.map((c) => c.name)).toEqual(['id', 'name']);
    expect(select.truncated).toBe(false);
    expect(select.rowCount).toBe(3);
    await q(`INSERT INTO loose (a, b) VALUES (100, 'from a query')`);
    expect((await q(`SELECT b FROM loose WHERE a = 100`)).rows).toEqual([{ b: 'from a query' }]);
    const duplicateNames = get().sql.duplicateNames;
    if (duplicateNames) {
      const dupes = await q(duplicateNames);
      expect(dupes.columns.map((c) => c.name)).toEqual(['a', 'a_2']);
      expect(dupes.rows).toEqual([{ a: 1, a_2: 2 }]);
    }
  });

  it('reports a syntax error with the engine text and refuses two statements', async () => {
    const error = await rejection(q(get().sql.syntaxError));
    expect(error).toBeInstanceOf(QueryError);
    expect(error.message).toMatch(/syntax/i);
    const two = await rejection(q(get().sql.twoStatements));
    expect(two instanceof QueryError || two instanceof ValidationError).toBe(true);
    expect((await get().admin.readRows(get().db, t('items'), { limit: 1, offset: 0 }, never())).total).toBe(25);
  });

  /** The statement `slow`/`tenMillionRows` (each names its column after a marker) no longer runs on the server. */
  async function endsOnServer(marker: string): Promise<void> {
    const deadline = Date.now() + 3_000;
    let n = -1;
    while (Date.now() < deadline) {
      n = Number((await q(get().sql.running(marker))).rows[0]!.n);
      if (n === 0) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(n).toBe(0);
  }

  it('cancels a statement at its timeout', async () => {
    const started = Date.now();
    const error = await rejection(q(get().sql.slow, { timeoutMs: 500 }));
    expect(error).toBeInstanceOf(QueryError);
    expect(Date.now() - started).toBeLessThan(4_000);
    // The connection is usable afterwards, with the normal timeout again.
    expect((await q('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
  });

  it('reads only rowCap rows of a 10 M row result, fast and with flat memory', async () => {
    const before = rssMb();
    const started = Date.now();
    const result = await q(get().sql.tenMillionRows, { rowCap: 1_000, timeoutMs: 60_000 });
    const elapsed = Date.now() - started;
    expect(result.truncated).toBe(true);
    expect(result.rows).toHaveLength(1_000);
    expect(result.rowCount).toBe(1_000);
    expect(elapsed).toBeLessThan(3_000);
    expect(rssMb() - before).toBeLessThan(60);
    await endsOnServer('sqladmin_big');
    const small = await q(`SELECT id FROM items ORDER BY id`, { rowCap: 25 });
    expect(small.truncated).toBe(false);
    expect(small.rows).toHaveLength(25);
    const cut = await q(`SELECT id FROM items ORDER BY id`, { rowCap: 24 });
    expect(cut.truncated).toBe(true);
    expect(cut.rows).toHaveLength(24);
  });

  it('ends a long statement promptly on abort', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 300).unref();
    const started = Date.now();
    const error = await rejection(q(get().sql.slow, { timeoutMs: 60_000 }, controller.signal));
    expect(error.name).toBe('AbortError');
    expect(Date.now() - started).toBeLessThan(3_000);
    await endsOnServer('sqladmin_slow');
    expect((await q('SELECT 2 AS two')).rows).toEqual([{ two: 2 }]);
    const aborted = AbortSignal.abort();
    expect((await rejection(get().admin.listTables(get().db, {}, aborted))).name).toBe('AbortError');
  });

  it('stores and reads back a 10 MB value', async () => {
    const { admin, db } = get();
    const big = 'ab'.repeat(5 * 1024 * 1024);
    await admin.insertRow(db, t('blobs'), { id: 1, body: big }, never());
    const page = await admin.readRows(db, t('blobs'), { limit: 1, offset: 0 }, never());
    expect((page.rows[0]!.body as string).length).toBe(big.length);
    expect(page.rows[0]!.body === big).toBe(true);
  });

  it('answers NotRunningError for a stopped server', async () => {
    const { admin, db } = get();
    const stopped = { ...db, serviceId: `${db.serviceId}-stopped`, port: await closedPort() };
    expect(await rejection(admin.checkReady(stopped, never()))).toBeInstanceOf(NotRunningError);
    expect(await rejection(admin.listTables(stopped, {}, never()))).toBeInstanceOf(NotRunningError);
  });

  it('gives up on a server that accepts connections and never answers', async () => {
    const sockets: net.Socket[] = [];
    const silent = net.createServer((socket) => sockets.push(socket));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    try {
      const admin = get().makeAdmin({ connectTimeoutMs: 500 });
      const db = { ...get().db, serviceId: `${get().db.serviceId}-silent`, port: (silent.address() as net.AddressInfo).port };
      const started = Date.now();
      expect(await rejection(admin.checkReady(db, never()))).toBeInstanceOf(NotRunningError);
      expect(Date.now() - started).toBeLessThan(3_000);
      await admin.closeAll();
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((r) => silent.close(() => r()));
    }
  });

  it('refuses a wrong password as a QueryError without echoing it', async () => {
    const { admin, db } = get();
    const wrong = {
      ...db,
      serviceId: `${db.serviceId}-wrongpw`,
      env: Object.fromEntries(Object.entries(db.env).map(([k, v]) => [k, /PASSWORD/.test(k) ? 'Wr0ng-Secret-pw' : v])),
    };
    const error = await rejection(admin.checkReady(wrong, never()));
    expect(error).toBeInstanceOf(QueryError);
    expect(error.message).not.toContain('Wr0ng-Secret-pw');
    await admin.release(wrong.serviceId);
  });

  it('keeps one pool per service, reused, and closes it when idle', async () => {
    const admin = get().makeAdmin({ idleMs: 1_000 });
    const db = get().db;
    await admin.checkReady(db, never());
    await admin.listTables(db, {}, never());
    await Promise.all([admin.readRows(db, t('items'), { limit: 2, offset: 0 }, never()), admin.checkReady(db, never())]);
    expect(admin.openPools).toBe(1);
    // The first service stays in use (a slow statement) while the second opens, so however long opening
    // takes on a busy machine, the first pool cannot have gone idle meanwhile.
    const busy = new AbortController();
    const slow = admin.query(db, get().sql.slow, LIMITS, busy.signal).catch(() => undefined);
    await admin.checkReady({ ...db, serviceId: `${db.serviceId}-other` }, never());
    expect(admin.openPools).toBe(2);
    busy.abort(new Error('done'));
    await slow;
    const idleSince = Date.now();
    while (admin.openPools > 0 && Date.now() - idleSince < 15_000) await new Promise((r) => setTimeout(r, 100));
    expect(admin.openPools).toBe(0);
    await admin.checkReady(db, never());
    expect(admin.openPools).toBe(1);
    await admin.closeAll();
    expect(admin.openPools).toBe(0);
  });

  it('inserts, updates and deletes by primary key, also a composite one', async () => {
    const { admin, db } = get();
    expect(await admin.insertRow(db, t('items'), { id: 500, name: 'five hundred' }, never())).toEqual({ id: 500 });
    await admin.updateRow(db, t('items'), { id: 500 }, { name: 'renamed' }, never());
    expect((await q('SELECT name FROM items WHERE id = 500')).rows).toEqual([{ name: 'renamed' }]);
    await admin.deleteRow(db, t('items'), { id: 500 }, never());
    expect((await q('SELECT name FROM items WHERE id = 500')).rows).toEqual([]);
    expect(await rejection(admin.deleteRow(db, t('items'), { id: 500 }, never()))).toBeInstanceOf(NotFoundError);
    expect(await rejection(admin.updateRow(db, t('items'), { id: 500 }, { name: 'x' }, never()))).toBeInstanceOf(NotFoundError);

    expect(await admin.insertRow(db, t('lines'), { order_id: 1, line_no: 2, qty: 5 }, never())).toEqual({
      id: { order_id: 1, line_no: 2 },
    });
    await admin.insertRow(db, t('lines'), { order_id: 1, line_no: 3, qty: 6 }, never());
    await admin.updateRow(db, t('lines'), { line_no: 2, order_id: 1 }, { qty: 50 }, never());
    const lines = await admin.readRows(db, t('lines'), { limit: 10, offset: 0 }, never());
    expect(lines.rows).toEqual([
      { order_id: 1, line_no: 2, qty: 50 },
      { order_id: 1, line_no: 3, qty: 6 },
    ]);
    expect(lines.columns.map((c) => [c.name, c.primary])).toEqual([
      ['order_id', true],
      ['line_no', true],
      ['qty', false],
    ]);
    const partial = await rejection(admin.updateRow(db, t('lines'), { order_id: 1 }, { qty: 1 }, never()));
    expect(partial).toBeInstanceOf(ValidationError);
    expect((partial as ValidationError).details).toMatchObject({ field: 'primaryKey' });
    const extra = await rejection(admin.deleteRow(db, t('lines'), { order_id: 1, line_no: 2, qty: 50 }, never()));
    expect((extra as ValidationError).details).toMatchObject({ field: 'primaryKey' });
    const unknown = await rejection(admin.deleteRow(db, t('lines'), { order_id: 1, 'line_no = line_no OR 1=1 --': 2 }, never()));
    expect(unknown.message).toBe('unknown column "line_no = line_no OR 1=1 --"');
    const badValue = await rejection(admin.updateRow(db, t('lines'), { order_id: 1, line_no: 2 }, { 'qty = 0 --': 1 }, never()));
    expect((badValue as ValidationError).details).toMatchObject({ field: 'values' });
    await admin.deleteRow(db, t('lines'), { order_id: 1, line_no: 2 }, never());
    expect((await admin.readRows(db, t('lines'), { limit: 10, offset: 0 }, never())).rows).toEqual([{ order_id: 1, line_no: 3, qty: 6 }]);

    const noKey = await rejection(admin.updateRow(db, t('loose'), { a: 7 }, { b: 'y' }, never()));
    expect(noKey).toBeInstanceOf(ValidationError);
    expect((noKey as ValidationError).details).toMatchObject({ field: 'table' });
    expect(noKey.message).toMatch(/^table "loose" has no primary key/);
    expect(await rejection(admin.deleteRow(db, t('loose'), { a: 7 }, never()))).toBeInstanceOf(ValidationError);
  });
}

// ---- PostgreSQL -------------------------------------------------------------------------------------

describe('PostgreSQL', () => {
  let engine: Engine;
  const get = () => engine;

  beforeAll(async () => {
    const env = { POSTGRES_USER: 'sqladmin', POSTGRES_PASSWORD: `pw-${randomBytes(8).toString('hex')}`, POSTGRES_DB: 'sqladmin_app' };
    let db: DatabaseEndpoint;
    let cleanup: () => Promise<void>;
    const admin = new PostgresDatabaseAdmin();
    if (await imageExists('postgres:17')) {
      const container = await startContainer('postgres', 'postgres:17', 5432, env);
      db = endpoint('postgres', '127.0.0.1', container.hostPort, env);
      cleanup = () => removeContainer(container.name);
    } else {
      // The host's test server: a role and a database of our own, dropped after.
      const serverUrl =
        process.env.PG_TEST_URL ?? execFileSync('bash', [path.join(ROOT, 'test/provision/postgres.sh')], { encoding: 'utf8' }).trim();
      const suffix = randomBytes(4).toString('hex');
      env.POSTGRES_USER = `sqladmin_${suffix}`;
      env.POSTGRES_DB = `sqladmin_${suffix}`;
      const superuser = new pg.Client({ connectionString: serverUrl });
      await superuser.connect();
      await superuser.query(`CREATE ROLE ${env.POSTGRES_USER} LOGIN PASSWORD '${env.POSTGRES_PASSWORD}'`);
      await superuser.query(`CREATE DATABASE ${env.POSTGRES_DB} OWNER ${env.POSTGRES_USER}`);
      await superuser.end();
      const url = new URL(serverUrl);
      db = endpoint('postgres', url.hostname, Number(url.port), env);
      cleanup = async () => {
        const client = new pg.Client({ connectionString: serverUrl });
        await client.connect();
        await client.query(`DROP DATABASE IF EXISTS ${env.POSTGRES_DB} WITH (FORCE)`);
        await client.query(`DROP ROLE IF EXISTS ${env.POSTGRES_USER}`);
        await client.end();
      };
    }
    engine = {
      label: 'postgres',
      admin,
      db,
      schema: 'public',
      makeAdmin: (options) => new PostgresDatabaseAdmin(options),
      sql: {
        createItems: 'CREATE TABLE items (id integer PRIMARY KEY, name text)',
        createLines: 'CREATE TABLE lines (order_id integer, line_no integer, qty integer, PRIMARY KEY (order_id, line_no))',
        createLoose: 'CREATE TABLE loose (a integer, b text)',
        createBlobs: 'CREATE TABLE blobs (id integer PRIMARY KEY, body text)',
        createOdd: 'CREATE TABLE "o""dd`\\" ("c""o`l\\" integer)',
        twoStatements: 'SELECT 1; DROP TABLE items',
        syntaxError: 'SELEKT 1',
        slow: 'SELECT pg_sleep(10) AS sqladmin_slow',
        tenMillionRows: 'SELECT generate_series(1, 10000000) AS sqladmin_big',
        duplicateNames: 'SELECT 1 AS a, 2 AS a',
        running: (marker) =>
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%${marker}%' AND pid <> pg_backend_pid()`,
      },
      cleanup,
    };
    await waitReady(admin, db);
  }, 180_000);

  afterAll(async () => {
    await engine?.admin.closeAll();
    await engine?.cleanup();
  });

  sharedCases(get);

  it('carries what JSON cannot: bytea, bigint, numeric, timestamps, dates, json, arrays', async () => {
    const { admin, db } = engine;
    const q = (text: string) => admin.query(db, text, LIMITS, never());
    await q(`CREATE TABLE kinds (
      id bigint PRIMARY KEY, big bigint, b bytea, n numeric(30,10), ts timestamptz, t timestamp, d date,
      j jsonb, js json, ints integer[], texts text[], bigs bigint[], v varchar(20), u uuid, f float8)`);
    const values: Record<string, CellValue> = {
      id: '9007199254740993',
      big: '-9223372036854775808',
      b: '\\x00ff10',
      n: '12345678901234567890.1234567890',
      ts: '2024-01-02T03:04:05.123456Z',
      t: '2024-01-02T03:04:05.5',
      d: '2024-01-02',
      j: { a: [1, 'two', null], b: { c: true } },
      js: ['x', 1],
      ints: [1, 2, 3],
      texts: ['a', null, 'b,c', 'd"e'],
      bigs: ['9007199254740993', 5],
      v: 'short',
      u: '7f1b5a2e-0c7e-4f52-9a49-0d3c7d1a9e11',
      f: 1.5,
    };
    expect(await admin.insertRow(db, { schema: 'public', name: 'kinds' }, values, never())).toEqual({ id: '9007199254740993' });
    const page = await admin.readRows(db, { schema: 'public', name: 'kinds' }, { limit: 5, offset: 0 }, never());
    expect(page.rows).toEqual([{ ...values, bigs: ['9007199254740993', 5] }]);
    expect(Object.fromEntries(page.columns.map((c) => [c.name, c.type]))).toEqual({
      id: 'bigint',
      big: 'bigint',
      b: 'bytea',
      n: 'numeric(30,10)',
      ts: 'timestamp with time zone',
      t: 'timestamp without time zone',
      d: 'date',
      j: 'jsonb',
      js: 'json',
      ints: 'integer[]',
      texts: 'text[]',
      bigs: 'bigint[]',
      v: 'character varying(20)',
      u: 'uuid',
      f: 'double precision',
    });
    expect(page.columns.find((c) => c.primary)?.name).toBe('id');
    const result = await q('SELECT id, big, b, n, ts, d, j, ints, v, 5::int8 AS small FROM kinds');
    expect(result.rows[0]).toEqual({
      id: values.id,
      big: values.big,
      b: values.b,
      n: values.n,
      ts: values.ts,
      d: values.d,
      j: values.j,
      ints: values.ints,
      v: 'short',
      small: 5,
    });
    expect(result.columns.map((c) => c.type)).toEqual([
      'bigint',
      'bigint',
      'bytea',
      'numeric(30,10)',
      'timestamp with time zone',
      'date',
      'jsonb',
      'integer[]',
      'character varying(20)',
      'bigint',
    ]);
    await admin.updateRow(db, { schema: 'public', name: 'kinds' }, { id: '9007199254740993' }, { j: 'just a string', b: '\\x' }, never());
    expect((await q(`SELECT j, b FROM kinds`)).rows).toEqual([{ j: 'just a string', b: '\\x' }]);
  });

  it('pages floats, bigints and timestamps at their edges as the query console does', async () => {
    const { admin, db } = engine;
    const q = (text: string) => admin.query(db, text, LIMITS, never());
    await q('CREATE TABLE edges (id int PRIMARY KEY, f float8, r real, big bigint, ts timestamptz, t timestamp, fa float8[])');
    await q(`INSERT INTO edges VALUES
      (1, 'NaN', 'Infinity', 9007199254740991, '2024-01-02 03:04:05+00', '2024-01-02 03:04:05', '{NaN,-Infinity,1.5}'),
      (2, '-Infinity', -0.5, -9007199254740992, 'infinity', '-infinity', NULL),
      (3, 1e300, NULL, 1234567890123456, '2024-01-02 03:04:05.1+00', NULL, '{}')`);
    const expected = [
      {
        id: 1,
        f: 'NaN',
        r: 'Infinity',
        big: 9007199254740991,
        ts: '2024-01-02T03:04:05Z',
        t: '2024-01-02T03:04:05',
        fa: ['NaN', '-Infinity', 1.5],
      },
      { id: 2, f: '-Infinity', r: -0.5, big: '-9007199254740992', ts: 'infinity', t: '-infinity', fa: null },
      { id: 3, f: 1e300, r: null, big: 1234567890123456, ts: '2024-01-02T03:04:05.1Z', t: null, fa: [] },
    ];
    const page = await admin.readRows(db, { schema: 'public', name: 'edges' }, { limit: 5, offset: 0 }, never());
    expect(page.rows).toEqual(expected);
    expect(JSON.parse(JSON.stringify(page.rows))).toEqual(expected);
    expect((await q('SELECT * FROM edges ORDER BY id')).rows).toEqual(expected);
  });

  it('hides system schemas and orders a table without key by its row address', async () => {
    const { admin, db } = engine;
    const tables = await admin.listTables(db, {}, never());
    expect(tables.some((x) => x.schema === 'pg_catalog' || x.schema === 'information_schema')).toBe(false);
    expect(
      await rejection(admin.readRows(db, { schema: 'pg_catalog', name: 'pg_class' }, { limit: 1, offset: 0 }, never())),
    ).toBeInstanceOf(NotFoundError);
    await admin.query(db, 'CREATE SCHEMA "odd ""schema"""', LIMITS, never());
    await admin.query(db, 'CREATE TABLE "odd ""schema"""."we""ird" ("co""l" int)', LIMITS, never());
    const ref = { schema: 'odd "schema"', name: 'we"ird' };
    expect((await admin.listTables(db, {}, never())).find((x) => x.name === 'we"ird')).toEqual({
      id: 'odd "schema".we"ird',
      ...ref,
      rowCount: 0,
    });
    for (let i = 0; i < 5; i++) await admin.insertRow(db, ref, { 'co"l': i }, never());
    const rows = (await admin.readRows(db, ref, { limit: 2, offset: 2 }, never())).rows;
    expect(rows).toEqual([{ 'co"l': 2 }, { 'co"l': 3 }]);
  });

  it('reports the SQLSTATE of an engine error and runs statements outside a transaction', async () => {
    const { admin, db } = engine;
    const error = await rejection(admin.query(db, 'SELECT * FROM missing_table', LIMITS, never()));
    expect(error).toBeInstanceOf(QueryError);
    expect(error.message).toBe('relation "missing_table" does not exist');
    expect((error as QueryError).details).toMatchObject({ code: '42P01', position: 15 });
    const two = await rejection(admin.query(db, 'SELECT 1; SELECT 2', LIMITS, never()));
    expect(two.message).toMatch(/multiple commands/);
    // VACUUM refuses to run inside a transaction block: the statement runs on its own.
    await admin.query(db, 'VACUUM items', LIMITS, never());
    // Session changes do not leak into the next call on the pooled connection.
    await admin.query(db, `SET search_path TO nowhere`, LIMITS, never());
    await admin.query(db, `BEGIN`, LIMITS, never());
    expect((await admin.query(db, 'SELECT count(*) AS n FROM items', LIMITS, never())).rows).toEqual([{ n: 25 }]);
    const copy = await rejection(admin.query(db, 'COPY items FROM STDIN', LIMITS, never()));
    expect(copy.message).toMatch(/COPY FROM STDIN is not available/);
    const timeout = await rejection(admin.query(db, 'SELECT pg_sleep(5)', { timeoutMs: 300, rowCap: 10 }, never()));
    expect((timeout as QueryError).details).toMatchObject({ code: '57014' });
  });

  it('keeps memory flat on a materialised 10 M row set too', async () => {
    const before = rssMb();
    const result = await engine.admin.query(
      engine.db,
      "SELECT g, repeat('x', 100) AS pad FROM generate_series(1, 10000000) g",
      { rowCap: 1_000, timeoutMs: 60_000 },
      never(),
    );
    expect(result.truncated).toBe(true);
    expect(result.rows).toHaveLength(1_000);
    expect(rssMb() - before).toBeLessThan(60);
  });
});

// ---- MySQL / MariaDB --------------------------------------------------------------------------------

describe('MySQL', () => {
  let engine: Engine;
  const get = () => engine;

  beforeAll(async () => {
    const env = {
      MYSQL_DATABASE: 'sqladmin_app',
      MYSQL_USER: 'sqladmin',
      MYSQL_PASSWORD: `pw-${randomBytes(8).toString('hex')}`,
      MYSQL_ROOT_PASSWORD: `root-${randomBytes(8).toString('hex')}`,
    };
    const admin = new MysqlDatabaseAdmin();
    const container = await startContainer('mysql', 'mysql:8.4', 3306, env);
    const db = endpoint('mysql', '127.0.0.1', container.hostPort, env);
    const cleanup = () => removeContainer(container.name);
    engine = {
      label: 'mysql',
      admin,
      db,
      schema: 'sqladmin_app',
      makeAdmin: (options) => new MysqlDatabaseAdmin(options),
      sql: {
        createItems: 'CREATE TABLE items (id INT PRIMARY KEY, name TEXT)',
        createLines: 'CREATE TABLE `lines` (order_id INT, line_no INT, qty INT, PRIMARY KEY (order_id, line_no))',
        createLoose: 'CREATE TABLE loose (a INT, b TEXT)',
        createBlobs: 'CREATE TABLE blobs (id INT PRIMARY KEY, body LONGTEXT)',
        createOdd: 'CREATE TABLE `o"dd``\\` (`c"o``l\\` INT)',
        twoStatements: 'SELECT 1; DROP TABLE items',
        syntaxError: 'SELEKT 1',
        slow: 'SELECT SLEEP(10) AS sqladmin_slow',
        tenMillionRows: 'SELECT seq AS sqladmin_big FROM seq_1_to_10000000',
        duplicateNames: 'SELECT 1 AS a, 2 AS a',
        running: (marker) =>
          `SELECT COUNT(*) AS n FROM information_schema.PROCESSLIST WHERE INFO LIKE '%${marker}%' AND ID <> CONNECTION_ID()`,
      },
      cleanup,
    };
    await waitReady(admin, db);
  }, 180_000);

  afterAll(async () => {
    await engine?.admin.closeAll();
    await engine?.cleanup();
  });

  sharedCases(get);

  it('carries what JSON cannot: BLOB, BIGINT, DECIMAL, DATETIME, TIMESTAMP, DATE, JSON', async () => {
    const { admin, db } = engine;
    const ref = { schema: 'sqladmin_app', name: 'kinds' };
    const q = (text: string) => admin.query(db, text, LIMITS, never());
    await q(`CREATE TABLE kinds (
      id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY, big BIGINT, ubig BIGINT UNSIGNED, b BLOB, n DECIMAL(30,10),
      dt DATETIME(6), ts TIMESTAMP(3) NULL, d DATE, j JSON, v VARCHAR(20), f DOUBLE, e ENUM('a','b'), vb VARBINARY(8))`);
    const values: Record<string, CellValue> = {
      big: '-9223372036854775808',
      ubig: '18446744073709551615',
      b: '\\x00ff10',
      n: '12345678901234567890.1234567890',
      dt: '2024-01-02T03:04:05.123456',
      ts: '2024-01-02T03:04:05.123Z',
      d: '2024-01-02',
      j: { a: [1, 'two', null] },
      v: 'short',
      f: 1.5,
      e: 'b',
      vb: '\\x0102',
    };
    expect(await admin.insertRow(db, ref, values, never())).toEqual({ id: 1 });
    const page = await admin.readRows(db, ref, { limit: 5, offset: 0 }, never());
    const row = page.rows[0]!;
    expect({ ...row, j: typeof row.j === 'string' ? JSON.parse(row.j) : row.j }).toEqual({ id: 1, ...values });
    const types = Object.fromEntries(page.columns.map((c) => [c.name, c.type]));
    expect(types).toMatchObject({
      id: 'bigint(20) unsigned',
      b: 'blob',
      n: 'decimal(30,10)',
      dt: 'datetime(6)',
      ts: 'timestamp(3)',
      d: 'date',
      v: 'varchar(20)',
      e: "enum('a','b')",
    });
    expect(page.columns.find((c) => c.primary)?.name).toBe('id');
    const result = await q('SELECT id, big, ubig, b, n, dt, ts, d, v, e, vb, 5 AS small FROM kinds');
    expect(result.rows[0]).toEqual({
      id: 1,
      big: values.big,
      ubig: values.ubig,
      b: values.b,
      n: values.n,
      dt: values.dt,
      ts: values.ts,
      d: values.d,
      v: 'short',
      e: 'b',
      vb: '\\x0102',
      small: 5,
    });
    expect(result.columns.map((c) => c.type)).toEqual([
      'bigint unsigned',
      'bigint',
      'bigint unsigned',
      'blob',
      'decimal',
      'datetime',
      'timestamp',
      'date',
      'varchar',
      'enum',
      'varbinary',
      expect.stringMatching(/int/),
    ]);
    expect(await admin.insertRow(db, ref, { v: 'second' }, never())).toEqual({ id: 2 });
    await admin.updateRow(db, ref, { id: 2 }, { v: 'second' }, never()); // unchanged value: still found
  });

  it('keeps user session changes out of the pooled connections', async () => {
    const { admin, db } = engine;
    await admin.query(db, 'SET @x = 5', LIMITS, never());
    await admin.query(db, 'USE information_schema', LIMITS, never());
    await admin.query(db, 'START TRANSACTION', LIMITS, never());
    const r = await admin.query(db, 'SELECT @x AS x, DATABASE() AS db, @@session.time_zone AS tz', LIMITS, never());
    expect(r.rows).toEqual([{ x: null, db: 'sqladmin_app', tz: '+00:00' }]);
    const error = await rejection(admin.query(db, 'SELECT * FROM missing_table', LIMITS, never()));
    expect(error).toBeInstanceOf(QueryError);
    expect(error.message).toBe("Table 'sqladmin_app.missing_table' doesn't exist");
    expect((error as QueryError).details).toMatchObject({ code: 'ER_NO_SUCH_TABLE', sqlState: '42S02' });
    expect(await rejection(admin.query(db, "LOAD DATA LOCAL INFILE '/etc/passwd' INTO TABLE loose", LIMITS, never()))).toBeInstanceOf(
      QueryError,
    );
    expect(await rejection(admin.readRows(db, { schema: 'mysql', name: 'user' }, { limit: 1, offset: 0 }, never()))).toBeInstanceOf(
      NotFoundError,
    );
    expect(await rejection(admin.readRows(db, { schema: 'sqladmin_app', name: 'ITEMS' }, { limit: 1, offset: 0 }, never()))).toBeInstanceOf(
      NotFoundError,
    );
  });
});

// ---- ClickHouse ---------------------------------------------------------------------------------------

describe('ClickHouse', () => {
  let engine: Engine;
  const get = () => engine;

  beforeAll(async () => {
    const env = {
      CLICKHOUSE_DB: 'sqladmin_app',
      CLICKHOUSE_USER: 'sqladmin',
      CLICKHOUSE_PASSWORD: `pw-${randomBytes(8).toString('hex')}`,
      CLICKHOUSE_DEFAULT_ACCESS_MANAGEMENT: '1',
    };
    const admin = new ClickHouseDatabaseAdmin();
    const container = await startContainer('clickhouse', 'clickhouse/clickhouse-server:24', 8123, env);
    const db = endpoint('clickhouse', '127.0.0.1', container.hostPort, env);
    engine = {
      label: 'clickhouse',
      admin,
      db,
      schema: 'sqladmin_app',
      makeAdmin: (options) => new ClickHouseDatabaseAdmin(options),
      sql: {
        createItems: 'CREATE TABLE items (id UInt32, name String) ENGINE = MergeTree ORDER BY id',
        createLines: 'CREATE TABLE lines (order_id UInt32, line_no UInt32, qty Int32) ENGINE = MergeTree ORDER BY (order_id, line_no)',
        createLoose: 'CREATE TABLE loose (a Int32, b String) ENGINE = Log',
        createBlobs: 'CREATE TABLE blobs (id UInt32, body String) ENGINE = MergeTree ORDER BY id',
        createOdd: 'CREATE TABLE `o"dd``\\\\` (`c"o``l\\\\` Int32) ENGINE = Memory',
        twoStatements: 'SELECT 1; DROP TABLE items',
        syntaxError: 'SELEKT 1',
        slow: 'SELECT count() AS sqladmin_slow FROM numbers(100000000000)',
        tenMillionRows: 'SELECT number AS sqladmin_big FROM numbers(10000000)',
        duplicateNames: null,
        running: (marker) =>
          `SELECT count() AS n FROM system.processes WHERE query LIKE '%${marker}%' AND query NOT LIKE '%system.processes%'`,
      },
      cleanup: () => removeContainer(container.name),
    };
    await waitReady(admin, db);
  }, 180_000);

  afterAll(async () => {
    await engine?.admin.closeAll();
    await engine?.cleanup();
  });

  sharedCases(get);

  it('carries what JSON cannot: UInt64, Int64, DateTime (also in another zone), Date, arrays, nulls, bytes', async () => {
    const { admin, db } = engine;
    const ref = { schema: 'sqladmin_app', name: 'kinds' };
    const q = (text: string) => admin.query(db, text, LIMITS, never());
    await q(`CREATE TABLE kinds (
      id UInt64, big Int64, u64 UInt64, dt DateTime, berlin DateTime('Europe/Berlin'), d Date, tags Array(String),
      nums Array(UInt64), maybe Nullable(String), f Float64, fixed FixedString(3), e Enum8('a' = 1, 'b' = 2)
    ) ENGINE = MergeTree ORDER BY id`);
    const values: Record<string, CellValue> = {
      id: 1,
      big: '-9223372036854775808',
      u64: '18446744073709551615',
      dt: '2024-01-02T03:04:05Z',
      berlin: '2024-07-02T03:04:05Z',
      d: '2024-01-02',
      tags: ['a', "b'c", 'd\te'],
      nums: ['9007199254740993', 5],
      maybe: null,
      f: 1.5,
      fixed: 'abc',
      e: 'b',
    };
    expect(await admin.insertRow(db, ref, values, never())).toEqual({ id: 1 });
    const page = await admin.readRows(db, ref, { limit: 5, offset: 0 }, never());
    expect(page.rows).toEqual([values]);
    expect(Object.fromEntries(page.columns.map((c) => [c.name, c.type]))).toMatchObject({
      id: 'UInt64',
      u64: 'UInt64',
      dt: 'DateTime',
      berlin: "DateTime('Europe/Berlin')",
      tags: 'Array(String)',
      maybe: 'Nullable(String)',
      e: "Enum8('a' = 1, 'b' = 2)",
    });
    expect(page.columns.filter((c) => c.primary).map((c) => c.name)).toEqual(['id']);
    const result = await q(
      `SELECT u64, berlin, tags, (1, 'x') AS pair, toString(berlin) AS wall, inf AS infinite, unhex('00ff') AS bytes, toUInt64(5) AS small FROM kinds`,
    );
    expect(result.rows[0]).toEqual({
      u64: values.u64,
      berlin: values.berlin,
      tags: values.tags,
      pair: [1, 'x'],
      wall: '2024-07-02 05:04:05',
      infinite: 'Infinity',
      bytes: '\\x00ff',
      small: 5,
    });
    expect(result.columns.map((c) => c.type)).toEqual([
      'UInt64',
      "DateTime('Europe/Berlin')",
      'Array(String)',
      'Tuple(UInt8, String)',
      'String',
      'Float64',
      'String',
      'UInt64',
    ]);
  });

  it('reports the declared primary key, not the whole sorting key, and answers an inserted row by it', async () => {
    const { admin, db } = engine;
    const q = (text: string) => admin.query(db, text, LIMITS, never());
    const ref = { schema: 'sqladmin_app', name: 'keyed' };
    await q('CREATE TABLE keyed (id UInt32, name String, qty Int32) ENGINE = MergeTree PRIMARY KEY id ORDER BY (id, name)');
    expect(await admin.insertRow(db, ref, { id: '7', name: 'seven', qty: 1 }, never())).toEqual({ id: 7 });
    const page = await admin.readRows(db, ref, { limit: 10, offset: 0 }, never());
    expect(page.columns.map((c) => [c.name, c.primary])).toEqual([
      ['id', true],
      ['name', false],
      ['qty', false],
    ]);
    await admin.updateRow(db, ref, { id: 7 }, { qty: 70 }, never());
    expect((await q('SELECT qty FROM keyed WHERE id = 7')).rows).toEqual([{ qty: 70 }]);
    // `name` sorts the table: ClickHouse cannot update it in place, and says nothing ran.
    const sorted = await rejection(admin.updateRow(db, ref, { id: 7 }, { name: 'renamed' }, never()));
    expect(sorted).toBeInstanceOf(ValidationError);
    expect((sorted as ValidationError).details).toMatchObject({ field: 'values' });
    expect(sorted.message).toMatch(/"name" is part of the table's sorting or partition key/);

    const uuids = { schema: 'sqladmin_app', name: 'uuids' };
    await q(
      'CREATE TABLE uuids (id UUID DEFAULT generateUUIDv4(), at DateTime DEFAULT now(), n UInt8) ENGINE = MergeTree ORDER BY (id, at)',
    );
    const { id } = await admin.insertRow(db, uuids, { n: 1 }, never());
    expect(id).toMatchObject({ id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/) });
    expect((id as { at: string }).at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/);
    // The answered key is the stored one: the row is read, changed and deleted by it.
    expect((await admin.readRows(db, uuids, { limit: 5, offset: 0 }, never())).rows).toEqual([{ ...(id as object), n: 1 }]);
    await admin.updateRow(db, uuids, id as Record<string, CellValue>, { n: 2 }, never());
    expect((await q('SELECT n FROM uuids')).rows).toEqual([{ n: 2 }]);
    await admin.deleteRow(db, uuids, id as Record<string, CellValue>, never());
    expect((await q('SELECT count() AS n FROM uuids')).rows).toEqual([{ n: 0 }]);
  });

  it('changes and deletes one row by key through awaited mutations, refusing a key that several rows share', async () => {
    const { admin, db } = engine;
    const q = (text: string) => admin.query(db, text, LIMITS, never());
    const ref = { schema: 'sqladmin_app', name: 'dupes' };
    await q('CREATE TABLE dupes (id UInt32, v String) ENGINE = MergeTree ORDER BY id');
    await q("INSERT INTO dupes VALUES (1, 'a'), (2, 'b'), (2, 'c')");
    for (const attempt of [
      () => admin.updateRow(db, ref, { id: 2 }, { v: 'x' }, never()),
      () => admin.deleteRow(db, ref, { id: 2 }, never()),
    ]) {
      const error = await rejection(attempt());
      expect(error).toBeInstanceOf(ConflictError);
      expect(error.message).toMatch(/^2 rows of table "dupes" have the key \{"id":2\}/);
      expect((error as ConflictError).details).toEqual({ rows: 2 });
    }
    expect(await rejection(admin.deleteRow(db, ref, { id: 3 }, never()))).toBeInstanceOf(NotFoundError);
    // Awaited: the next read sees the change, with nothing pending in the server.
    await admin.updateRow(db, ref, { id: 1 }, { v: 'changed' }, never());
    expect((await q('SELECT v FROM dupes WHERE id = 1')).rows).toEqual([{ v: 'changed' }]);
    await admin.deleteRow(db, ref, { id: 1 }, never());
    expect((await q('SELECT id, v FROM dupes ORDER BY v')).rows).toEqual([
      { id: 2, v: 'b' },
      { id: 2, v: 'c' },
    ]);
    expect((await q("SELECT count() AS n FROM system.mutations WHERE table = 'dupes' AND NOT is_done")).rows).toEqual([{ n: 0 }]);
  });

  it('binds key and values: quotes, backslashes, tabs and a DateTime key in another zone', async () => {
    const { admin, db } = engine;
    const q = (text: string) => admin.query(db, text, LIMITS, never());
    const ref = { schema: 'sqladmin_app', name: 'named' };
    await q("CREATE TABLE named (k String, at DateTime('Europe/Berlin'), v String) ENGINE = MergeTree ORDER BY (k, at)");
    const k = "it's \\ a `key`\t'); DROP TABLE named; --";
    const key = { k, at: '2024-07-02T03:04:05Z' };
    expect(await admin.insertRow(db, ref, { ...key, v: 'first' }, never())).toEqual({ id: key });
    await admin.insertRow(db, ref, { k, at: '2024-07-02T03:04:06Z', v: 'second' }, never());
    const sneaky = "o'k\\'); ALTER TABLE named DELETE WHERE 1; --\n";
    await admin.updateRow(db, ref, key, { v: sneaky }, never());
    expect((await admin.readRows(db, ref, { limit: 5, offset: 0 }, never())).rows).toEqual([
      { ...key, v: sneaky },
      { k, at: '2024-07-02T03:04:06Z', v: 'second' },
    ]);
    await admin.deleteRow(db, ref, key, never());
    expect((await admin.readRows(db, ref, { limit: 5, offset: 0 }, never())).rows).toEqual([
      { k, at: '2024-07-02T03:04:06Z', v: 'second' },
    ]);
    const loose = await rejection(admin.deleteRow(db, { schema: 'sqladmin_app', name: 'loose' }, { a: 1 }, never()));
    expect(loose.message).toMatch(/^table "loose" has no primary key/);
  });

  it('shows a result in a format of the statement as its lines, and DDL as nothing', async () => {
    const { admin, db } = engine;
    const json = await admin.query(db, 'SELECT 1 AS a FORMAT JSONEachRow', LIMITS, never());
    expect(json.rows).toEqual([{ result: '{"a":1}' }]);
    const ddl = await admin.query(db, 'CREATE TABLE IF NOT EXISTS scratch (x UInt8) ENGINE = Memory', LIMITS, never());
    expect(ddl).toEqual({ columns: [], rows: [], rowCount: 0, truncated: false });
    const error = await rejection(admin.query(db, 'SELECT * FROM missing_table', LIMITS, never()));
    expect(error).toBeInstanceOf(QueryError);
    expect(error.message).toMatch(/missing_table doesn't exist/);
    expect((error as QueryError).details).toMatchObject({ code: 60 });
    expect(await rejection(admin.readRows(db, { schema: 'system', name: 'tables' }, { limit: 1, offset: 0 }, never()))).toBeInstanceOf(
      NotFoundError,
    );
    expect(await rejection(admin.updateRow(db, { schema: 'sqladmin_app', name: 'nope' }, { id: 1 }, { x: 1 }, never()))).toBeInstanceOf(
      NotFoundError,
    );
  });
});
