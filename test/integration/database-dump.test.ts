import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import { createClient as createClickHouse } from '@clickhouse/client';
import Docker from 'dockerode';
import { Redis } from 'ioredis';
import { MongoClient } from 'mongodb';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NATIVE_MAGIC } from '../../adapters/databases/clickhouse.database-dump.js';
import { DockerExecDatabaseDump } from '../../adapters/databases/docker-exec.database-dump.js';
import { type DatabaseEngine, ENGINE_SPECS } from '../../src/domain/database-engines.js';
import type { DumpTarget } from '../../src/backups/database-dump.port.js';
import { provisionDocker } from '../helpers/docker.js';
import { canonicalDocuments, typedOrders } from '../helpers/mongo-documents.js';
import { redisKeys } from '../helpers/redis-keys.js';

/**
 * The DatabaseDump adapter (docker exec of each engine's own tools) against real servers: containers
 * of the images production runs, here the stand-ins (PostgreSQL 15, MariaDB 10.11 with its mysqldump,
 * Redis 7.0 with the platform's `--appendonly yes` command, ClickHouse 18.16 with its clickhouse-client,
 * the MongoDB wire-protocol stand-in with its mongodump/mongorestore stand-ins), started as the
 * platform starts them (init, restart unless-stopped) and removed after. Each: write data, dump,
 * change and drop data, restore, compare through the engine's own driver; and what the tools must
 * refuse. Passwords hold quotes, a backslash, `#`, `&` and `<`: they reach the tools by env or file only.
 */

const run = promisify(execFile);
const docker = new Docker();
const dumps = new DockerExecDatabaseDump(docker);
const PASSWORD = `p"a'ss\\w#rd &<x> ${randomBytes(3).toString('hex')}`;
const started: string[] = [];

async function dockerCli(...args: string[]): Promise<string> {
  const { stdout } = await run('docker', args, { maxBuffer: 16 * 1024 * 1024 });
  return stdout.trim();
}

/** A database container as the platform runs one: the engine's image and command, init, restart unless-stopped. */
async function startDatabase(engine: DatabaseEngine, env: Record<string, string>): Promise<{ id: string; port: number }> {
  const spec = ENGINE_SPECS[engine];
  const name = `dumptest-${engine}-${randomBytes(4).toString('hex')}`;
  started.push(name);
  const port = engine === 'clickhouse' ? 8123 : spec.internalPort;
  // A fixed host port: an ephemeral one would change when the Redis restore restarts the container.
  const hostPort = await freePort();
  const command = spec.command?.({ logicalReplication: false }) ?? [];
  const id = await dockerCli(
    'run',
    '-d',
    '--init',
    '--restart',
    'unless-stopped',
    '--name',
    name,
    '-p',
    `127.0.0.1:${hostPort}:${port}`,
    ...Object.entries(env).flatMap(([k, v]) => ['-e', `${k}=${v}`]),
    spec.image,
    ...command,
  );
  return { id, port: hostPort };
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function until<T>(what: string, check: () => Promise<T>, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`${what}: not ready in time (${String(last)})`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

interface Logged {
  lines: string[];
  log: (line: string) => void;
}

function logged(): Logged {
  const lines: string[] = [];
  return { lines, log: (line) => lines.push(line) };
}

/** A dump of `target` as bytes, as the backup job reads it (the stream to its end, then the tool's exit). */
async function dumpOf(target: DumpTarget, logs = logged()): Promise<Buffer> {
  const running = await dumps.dump(target, AbortSignal.timeout(120_000), logs.log);
  const chunks: Buffer[] = [];
  await pipeline(
    running.stream,
    new Writable({
      write(chunk, _e, cb) {
        chunks.push(chunk);
        cb();
      },
    }),
  );
  await running.done;
  return Buffer.concat(chunks);
}

async function restoreFrom(target: DumpTarget, bytes: Buffer, logs = logged()): Promise<void> {
  // Small pieces: the tools get their input in many writes, as from a file.
  const pieces = Array.from({ length: Math.ceil(bytes.length / 4096) }, (_, i) => bytes.subarray(i * 4096, (i + 1) * 4096));
  await dumps.restore(target, Readable.from(pieces), AbortSignal.timeout(300_000), logs.log);
}

/** Nothing of the password in a log line, and no option file left in the container. */
async function expectNoSecretsLeft(containerId: string, logs: Logged): Promise<void> {
  for (const line of logs.lines) expect(line).not.toContain(PASSWORD);
  expect(await dockerCli('exec', containerId, 'ls', '-a', '/tmp')).not.toMatch(/slipway-/);
}

beforeAll(async () => {
  await provisionDocker({ images: 'postgres,mysql,redis,clickhouse,mongo' });
}, 20 * 60_000);

afterAll(async () => {
  await Promise.all(started.map((name) => dockerCli('rm', '-f', '-v', name).catch(() => undefined)));
});

describe('PostgreSQL (pg_dump -Fc / pg_restore)', () => {
  let target: DumpTarget;
  let client: pg.Client;

  beforeAll(async () => {
    const env = { POSTGRES_DB: 'shop', POSTGRES_USER: 'shop', POSTGRES_PASSWORD: PASSWORD };
    const { id, port } = await startDatabase('postgres', env);
    target = { engine: 'postgres', containerId: id, env };
    client = await until('postgres', async () => {
      const c = new pg.Client({ host: '127.0.0.1', port, user: 'shop', password: PASSWORD, database: 'shop' });
      await c.connect();
      return c;
    });
  }, 180_000);

  afterAll(async () => {
    await client?.end();
  });

  it('round-trips rows, and refuses a truncated archive', { timeout: 120_000 }, async () => {
    await client.query('CREATE TABLE items (id int PRIMARY KEY, name text, data bytea)');
    await client.query("INSERT INTO items SELECT g, 'item ' || g, decode(md5(g::text), 'hex') FROM generate_series(1, 300) g");
    const before = (await client.query('SELECT * FROM items ORDER BY id')).rows;
    const logs = logged();
    const bytes = await dumpOf(target, logs);
    expect(bytes.subarray(0, 5).toString()).toBe('PGDMP');
    await client.query('DELETE FROM items WHERE id > 100');
    await client.query("UPDATE items SET name = 'changed'");
    await restoreFrom(target, bytes, logs);
    expect((await client.query('SELECT * FROM items ORDER BY id')).rows).toEqual(before);
    await expect(restoreFrom(target, bytes.subarray(0, bytes.length >> 1))).rejects.toThrow(/pg_restore exited/);
    expect((await client.query('SELECT count(*)::int AS n FROM items')).rows[0].n).toBe(300);
    await expectNoSecretsLeft(target.containerId, logs);
  });
});

describe('PostgreSQL counts (psql, count(*) of every table)', () => {
  it('counts the rows of every table of every user schema, quoted names included', { timeout: 120_000 }, async () => {
    const env = { POSTGRES_DB: 'shop', POSTGRES_USER: 'shop', POSTGRES_PASSWORD: PASSWORD };
    const { id, port } = await startDatabase('postgres', env);
    const client = await until('postgres', async () => {
      const c = new pg.Client({ host: '127.0.0.1', port, user: 'shop', password: PASSWORD, database: 'shop' });
      await c.connect();
      return c;
    });
    try {
      await client.query('CREATE SCHEMA "odd schema"');
      await client.query('CREATE TABLE "odd schema"."Mixed ""Case""" (n int)');
      await client.query('INSERT INTO "odd schema"."Mixed ""Case""" SELECT generate_series(1, 7)');
      await client.query('CREATE TABLE plain (n int)');
      await client.query('CREATE TABLE parted (n int) PARTITION BY RANGE (n)');
      await client.query('CREATE TABLE parted_low PARTITION OF parted FOR VALUES FROM (0) TO (100)');
      await client.query('INSERT INTO parted SELECT generate_series(1, 42)');
      const logs = logged();
      const counted = await dumps.count({ engine: 'postgres', containerId: id, env, host: null }, AbortSignal.timeout(60_000), logs.log);
      expect(counted).toEqual({ unit: 'rows', counts: { 'odd schema.Mixed "Case"': 7, 'public.parted': 42, 'public.plain': 0 } });
      await expectNoSecretsLeft(id, logs);
    } finally {
      await client.end();
    }
  });
});

describe('MySQL (mysqldump --single-transaction / mysql; MariaDB 10.11 here)', () => {
  let target: DumpTarget;
  let conn: mysql.Connection;

  beforeAll(async () => {
    const env = { MYSQL_DATABASE: 'shop', MYSQL_USER: 'shop', MYSQL_PASSWORD: PASSWORD, MYSQL_ROOT_PASSWORD: `root-${PASSWORD}` };
    const { id, port } = await startDatabase('mysql', env);
    target = { engine: 'mysql', containerId: id, env };
    conn = await until('mysql', () =>
      mysql.createConnection({ host: '127.0.0.1', port, user: 'shop', password: PASSWORD, database: 'shop', supportBigNumbers: true }),
    );
  }, 180_000);

  afterAll(async () => {
    await conn?.end();
  });

  it('round-trips rows (text, binary, decimals, emoji), and a trigger with them', { timeout: 120_000 }, async () => {
    await conn.query(
      'CREATE TABLE items (id int PRIMARY KEY, name varchar(100) CHARACTER SET utf8mb4, data varbinary(64), price decimal(12,2), note text)',
    );
    await conn.query('CREATE TABLE audit (n int)');
    await conn.query('CREATE TRIGGER items_audit AFTER INSERT ON items FOR EACH ROW INSERT INTO audit VALUES (NEW.id)');
    for (let i = 1; i <= 200; i++)
      await conn.execute('INSERT INTO items VALUES (?, ?, ?, ?, ?)', [
        i,
        `item ${i} ✓ 🚀 'q' "d" \\`,
        Buffer.from([0, i % 256, 255, 10, 13, 39]),
        (i * 1.25).toFixed(2),
        i % 3 ? null : 'line\nbreak\ttab',
      ]);
    const snapshot = async () => (await conn.query('SELECT * FROM items ORDER BY id'))[0];
    const before = await snapshot();
    const logs = logged();
    const bytes = await dumpOf(target, logs);
    expect(bytes.toString('utf8')).toMatch(/CREATE TABLE `items`/);
    await conn.query('DELETE FROM items WHERE id > 50');
    await conn.query("UPDATE items SET name = 'changed'");
    await conn.query('DROP TRIGGER items_audit');
    await restoreFrom(target, bytes, logs);
    expect(await snapshot()).toEqual(before);
    await conn.query('INSERT INTO items (id) VALUES (1000)');
    expect((await conn.query('SELECT count(*) AS n FROM audit WHERE n = 1000'))[0]).toEqual([{ n: 1 }]);
    await expectNoSecretsLeft(target.containerId, logs);
    expect(logs.lines.join('\n')).toMatch(/--defaults-extra-file=\/tmp\/slipway-[0-9a-f]+\.cnf/);
  });

  it('counts the rows of every base table (COUNT(*), not the estimate)', { timeout: 60_000 }, async () => {
    await conn.query('CREATE TABLE `odd ``name` (n int)');
    await conn.query('INSERT INTO `odd ``name` VALUES (1), (2), (3)');
    await conn.query('CREATE VIEW items_view AS SELECT id FROM items');
    const logs = logged();
    const counted = await dumps.count({ ...target, host: null }, AbortSignal.timeout(60_000), logs.log);
    const count = async (table: string) =>
      Number(((await conn.query(`SELECT count(*) AS n FROM ${table}`)) as never as [[{ n: number }]])[0][0].n);
    expect(counted).toEqual({
      unit: 'rows',
      counts: { 'shop.audit': await count('audit'), 'shop.items': await count('items'), 'shop.odd `name': 3 },
    });
    await expectNoSecretsLeft(target.containerId, logs);
  });

  it('fails with the tool message when the root password is wrong', async () => {
    const wrong = { ...target, env: { ...target.env, MYSQL_ROOT_PASSWORD: 'not it' } };
    await expect(dumpOf(wrong)).rejects.toThrow(/mysqldump exited with 2: .*Access denied/);
  });
});

describe('Redis (redis-cli --rdb, restored as the AOF base with a restart)', () => {
  let target: DumpTarget;
  let port: number;
  let redis: Redis;

  beforeAll(async () => {
    const env = { REDIS_PASSWORD: PASSWORD };
    const started = await startDatabase('redis', env);
    port = started.port;
    target = { engine: 'redis', containerId: started.id, env };
    redis = new Redis({ host: '127.0.0.1', port, password: PASSWORD, lazyConnect: true, maxRetriesPerRequest: 50 });
    // Its reconnections while the restore restarts the server are expected; each command still fails loudly.
    redis.on('error', () => undefined);
    await until('redis', async () => {
      await redis.connect().catch(() => undefined);
      return redis.ping();
    });
  }, 120_000);

  afterAll(() => {
    redis?.disconnect();
  });

  /** Every key of logical databases 0 and 3: its type, value and whether its TTL is kept. */
  async function snapshot(): Promise<Record<string, unknown>> {
    const { values, ttls } = await redisKeys(redis, [0, 3]);
    // No expiry (-1) stays; an expiry is kept when it is still above an hour less 5 minutes (they were set at 1 and 2 hours).
    return { values, ttls: Object.fromEntries(Object.entries(ttls).map(([k, ttl]) => [k, ttl < 0 ? ttl : ttl > 3_300_000])) };
  }

  it('round-trips every key with its TTL, keeps the container and its command, and AOF on', { timeout: 180_000 }, async () => {
    for (let i = 0; i < 500; i++) await redis.set(`str:${i}`, `value ${i}`);
    await redis.set('bin', Buffer.from([0, 1, 2, 255, 10]));
    await redis.set('ttl:1', 'expires', 'EX', 3600);
    await redis.hset('hash', { a: '1', b: 'two' });
    await redis.rpush('list', 'x', 'y', 'z');
    await redis.sadd('set', 'm1', 'm2');
    await redis.zadd('zset', 1, 'one', 2.5, 'two');
    await redis.select(3);
    await redis.set('in-db-3', 'here', 'EX', 7200);
    await redis.select(0);
    const before = await snapshot();
    const inspect = (await docker.getContainer(target.containerId).inspect()) as Docker.ContainerInspectInfo;

    const logs = logged();
    const bytes = await dumpOf(target, logs);
    expect(bytes.subarray(0, 5).toString()).toBe('REDIS');
    // The RDB ends with its EOF opcode and an 8-byte checksum: the transfer's end mark was cut off.
    expect(bytes[bytes.length - 9]).toBe(0xff);

    await redis.flushall();
    await redis.set('after', 'the backup');
    await restoreFrom(target, bytes, logs);
    expect(await until('redis after the restore', () => redis.ping())).toBe('PONG');
    expect(await snapshot()).toEqual(before);
    expect(await redis.get('after')).toBeNull();
    expect(await redis.config('GET', 'appendonly')).toEqual(['appendonly', 'yes']);

    const after = (await docker.getContainer(target.containerId).inspect()) as Docker.ContainerInspectInfo;
    expect(after.State.Running).toBe(true);
    expect(after.Id).toBe(inspect.Id);
    expect(after.Config.Cmd).toEqual(inspect.Config.Cmd);
    expect(after.RestartCount).toBe(inspect.RestartCount);
    expect(await dockerCli('exec', target.containerId, 'ls', '/data')).not.toMatch(/slipway/);
    expect(logs.lines.join('\n')).toMatch(/Redis is back with the restored data \(db0 keys=506.*db3 keys=1/);

    // The restored data is the AOF's base now: a write after it and another restart keep both.
    await redis.set('written', 'after the restore');
    await dockerCli('restart', target.containerId);
    expect(await until('redis after a restart', () => redis.ping())).toBe('PONG');
    expect(await redis.get('written')).toBe('after the restore');
    expect(await redis.get('str:42')).toBe('value 42');
    await redis.del('written');
    await expectNoSecretsLeft(target.containerId, logs);
  });

  it('counts keys per logical database, the ones with a TTL as their floor', { timeout: 60_000 }, async () => {
    await redis.flushall();
    for (let i = 0; i < 5; i++) await redis.set(`count:${i}`, 'v');
    await redis.set('count:ttl', 'v', 'EX', 3600);
    await redis.select(2);
    await redis.set('other', 'v');
    await redis.select(0);
    const counted = await dumps.count({ ...target, host: null }, AbortSignal.timeout(60_000), () => undefined);
    expect(counted).toEqual({ unit: 'keys', counts: { db0: 6, db2: 1 }, floors: { db0: 5, db2: 1 } });
  });

  it('refuses a broken snapshot before the server is touched', { timeout: 60_000 }, async () => {
    const bytes = await dumpOf(target);
    const broken = Buffer.from(bytes);
    broken[Math.floor(broken.length / 2)]! ^= 0xff;
    const pid = await dockerCli('inspect', '-f', '{{.State.StartedAt}}', target.containerId);
    await redis.set('untouched', 'yes');
    await expect(restoreFrom(target, broken)).rejects.toThrow(/redis-check-rdb exited/);
    expect(await redis.get('untouched')).toBe('yes');
    expect(await dockerCli('inspect', '-f', '{{.State.StartedAt}}', target.containerId)).toBe(pid);
    expect(await redis.config('GET', 'appendonly')).toEqual(['appendonly', 'yes']);
    expect(await dockerCli('exec', target.containerId, 'ls', '/data')).not.toMatch(/slipway/);
    await redis.del('untouched');
  });
});

describe('ClickHouse (clickhouse-client: SHOW CREATE + FORMAT Native, framed)', () => {
  let target: DumpTarget;
  let ch: ReturnType<typeof createClickHouse>;

  beforeAll(async () => {
    const env = {
      CLICKHOUSE_DB: 'shop',
      CLICKHOUSE_USER: 'shop',
      CLICKHOUSE_PASSWORD: PASSWORD,
      CLICKHOUSE_DEFAULT_ACCESS_MANAGEMENT: '1',
    };
    const { id, port } = await startDatabase('clickhouse', env);
    target = { engine: 'clickhouse', containerId: id, env };
    ch = createClickHouse({ url: `http://127.0.0.1:${port}`, username: 'shop', password: PASSWORD, database: 'shop' });
    await until('clickhouse', async () => (await ch.query({ query: 'SELECT 1', format: 'JSONEachRow' })).json());
  }, 180_000);

  afterAll(async () => {
    await ch?.close();
  });

  const rows = async (table: string) => (await ch.query({ query: `SELECT * FROM ${table} ORDER BY id`, format: 'JSONEachRow' })).json();
  const command = (query: string) => ch.command({ query });

  it('round-trips tables, their rows and views, in creation order', { timeout: 120_000 }, async () => {
    await command(
      'CREATE TABLE events (id UInt64, name String, at DateTime, tags Array(String), amount Nullable(Float64)) ENGINE = MergeTree ORDER BY id',
    );
    await command('CREATE TABLE totals (id UInt64, n UInt64) ENGINE = MergeTree ORDER BY id');
    await command('CREATE TABLE notes (id UInt32, body String) ENGINE = TinyLog');
    await command('CREATE MATERIALIZED VIEW events_to_totals TO totals AS SELECT id, toUInt64(length(name)) AS n FROM events');
    await command('CREATE VIEW big_events AS SELECT id, name FROM events WHERE id > 100');
    await ch.insert({
      table: 'events',
      values: Array.from({ length: 3000 }, (_, i) => ({
        id: i,
        name: `event ${i}\t"quoted"\n\\ ✓`,
        at: 1_700_000_000 + i,
        tags: [`t${i % 7}`, 'x'],
        amount: i % 5 ? i / 4 : null,
      })),
      format: 'JSONEachRow',
    });
    await ch.insert({
      table: 'notes',
      values: [
        { id: 1, body: 'one' },
        { id: 2, body: 'two\0zero' },
      ],
      format: 'JSONEachRow',
    });
    const before = {
      events: await rows('events'),
      totals: await rows('totals'),
      notes: await rows('notes'),
      view: await rows('big_events'),
    };
    expect(before.totals).toHaveLength(3000);

    const logs = logged();
    const bytes = await dumpOf(target, logs);
    expect(bytes.subarray(0, NATIVE_MAGIC.length).toString()).toBe(NATIVE_MAGIC);

    await command('DROP TABLE big_events');
    await command('DROP TABLE events');
    await command('TRUNCATE TABLE notes');
    await command('CREATE TABLE extra (id UInt8) ENGINE = TinyLog');
    await restoreFrom(target, bytes, logs);

    expect(await rows('events')).toEqual(before.events);
    expect(await rows('totals')).toEqual(before.totals);
    expect(await rows('notes')).toEqual(before.notes);
    expect(await rows('big_events')).toEqual(before.view);
    // The materialized view is back after the rows: it works, and it did not count the restored rows twice.
    await ch.insert({
      table: 'events',
      values: [{ id: 5000, name: 'new', at: 1_800_000_000, tags: [], amount: 1 }],
      format: 'JSONEachRow',
    });
    expect(await rows('totals')).toHaveLength(3001);
    // Tables made after the backup are kept.
    expect(await rows('extra')).toEqual([]);
    await expectNoSecretsLeft(target.containerId, logs);
  });

  it('counts the rows of the tables that hold rows', { timeout: 60_000 }, async () => {
    const counted = await dumps.count({ ...target, host: null }, AbortSignal.timeout(60_000), () => undefined);
    expect(counted.unit).toBe('rows');
    const listed = (await (
      await ch.query({ query: 'SELECT name, engine FROM system.tables WHERE database = currentDatabase()', format: 'JSONEachRow' })
    ).json()) as Array<{ name: string; engine: string }>;
    const expected: Record<string, number> = {};
    for (const { name, engine } of listed) {
      if (!/MergeTree$|^(TinyLog|StripeLog|Log|Memory)$/.test(engine) || name.startsWith('.inner')) continue;
      const [row] = (await (await ch.query({ query: `SELECT count() AS n FROM \`${name}\``, format: 'JSONEachRow' })).json()) as Array<{
        n: string;
      }>;
      expected[`shop.${name}`] = Number(row?.n);
    }
    expect(Object.keys(expected).length).toBeGreaterThan(0);
    expect(counted.counts).toEqual(expected);
  });

  it('refuses a dump cut short', async () => {
    const bytes = await dumpOf(target);
    await expect(restoreFrom(target, bytes.subarray(0, bytes.length - 20))).rejects.toThrow(/dump ends|stream ends/);
  });
});

describe('MongoDB (mongodump --archive / mongorestore --drop; the stand-in tools against the stand-in server)', () => {
  let target: DumpTarget;
  let mongo: MongoClient;

  beforeAll(async () => {
    const env = { MONGO_INITDB_ROOT_USERNAME: 'root', MONGO_INITDB_ROOT_PASSWORD: PASSWORD };
    const { id, port } = await startDatabase('mongodb', env);
    target = { engine: 'mongodb', containerId: id, env };
    mongo = new MongoClient(`mongodb://root:${encodeURIComponent(PASSWORD)}@127.0.0.1:${port}/?authSource=admin`, {
      serverSelectionTimeoutMS: 2_000,
    });
    await until('mongodb', async () => {
      await mongo.connect();
      return mongo.db('admin').command({ ping: 1 });
    });
  }, 120_000);

  afterAll(async () => {
    await mongo?.close();
  });

  const documents = (db: string, collection: string) => canonicalDocuments(mongo, db, collection);

  it('round-trips documents with their BSON types, and empty collections', { timeout: 120_000 }, async () => {
    const shop = mongo.db('shop');
    await shop.collection('orders').insertMany(typedOrders(1500, 'integration'));
    await shop.createCollection('empty');
    await mongo
      .db('crm')
      .collection('people')
      .insertOne({ _id: 'ada' as never, name: 'Ada', langs: ['en', 'fr'] });
    const before = { orders: await documents('shop', 'orders'), people: await documents('crm', 'people') };

    const logs = logged();
    const bytes = await dumpOf(target, logs);
    expect(bytes.readUInt32LE(0)).toBe(0x8199e26d);

    await shop.collection('orders').deleteMany({ n: { $gt: 10 } });
    await shop.collection('orders').updateMany({}, { $set: { changed: true } });
    await shop.collection('empty').drop();
    await mongo.db('crm').collection('people').drop();
    await shop.collection('later').insertOne({ made: 'after the backup' });
    await restoreFrom(target, bytes, logs);

    expect(await documents('shop', 'orders')).toEqual(before.orders);
    expect(await documents('crm', 'people')).toEqual(before.people);
    expect((await shop.listCollections().toArray()).map((c) => c.name).sort()).toEqual(['empty', 'later', 'orders']);
    expect(logs.lines.join('\n')).toMatch(/1501 document\(s\) restored successfully/);
    await expectNoSecretsLeft(target.containerId, logs);
  });

  it('counts the documents of every collection over the wire', { timeout: 60_000 }, async () => {
    const host = await dockerCli('inspect', '-f', '{{.NetworkSettings.IPAddress}}', target.containerId);
    const counted = await dumps.count({ ...target, host }, AbortSignal.timeout(60_000), () => undefined);
    expect(counted).toEqual({ unit: 'documents', counts: { 'crm.people': 1, 'shop.empty': 0, 'shop.later': 1, 'shop.orders': 1500 } });
  });

  it('refuses a broken archive with the tool message', async () => {
    const bytes = await dumpOf(target);
    await expect(restoreFrom(target, bytes.subarray(0, bytes.length - 10))).rejects.toThrow(
      /mongorestore exited with 1: .*corruption found in archive/s,
    );
  });
});
