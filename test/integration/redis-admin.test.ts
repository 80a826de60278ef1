import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { RedisDatabaseAdmin } from '../../adapters/databases/redis.database-admin.js';
import { checkCommand, splitCommandLine } from '../../adapters/databases/redis-command-line.js';
import type { DatabaseEndpoint, QueryLimits } from '../../src/databases/database-admin.port.js';
import { NotFoundError, NotRunningError, QueryError, ValidationError } from '../../src/domain/errors.js';
import { startTestRedis, testClient, type TestRedis } from '../helpers/redis-server.js';

/** The Redis adapter of the DatabaseAdmin port against a real server (see test/helpers/redis-server.ts). */
let server: TestRedis;
let db: DatabaseEndpoint;
let admin: RedisDatabaseAdmin;
let seed: Redis;
let seed1: Redis;
const never = new AbortController().signal;
const limits: QueryLimits = { timeoutMs: 5000, rowCap: 1000 };

beforeAll(async () => {
  server = await startTestRedis();
  console.log(`redis-admin tests run against ${server.via}`);
  db = { serviceId: 'svc-redis', engine: 'redis', host: server.host, port: server.port, env: { REDIS_PASSWORD: server.password } };
  admin = new RedisDatabaseAdmin();
  seed = testClient(server, 0);
  seed1 = testClient(server, 1);
  await Promise.all([seed.connect(), seed1.connect()]);
  await seed.flushall();
}, 120_000);

afterAll(async () => {
  await admin?.closeAll();
  seed?.disconnect();
  seed1?.disconnect();
  await server?.remove();
}, 60_000);

async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a rejection');
}

const t = (name: string, schema = 'db0') => ({ schema, name });

describe('the command line', () => {
  const split = (text: string) => splitCommandLine(text).map((b) => b.toString('utf8'));

  it('splits like redis-cli: double quotes with escapes, single quotes literal', () => {
    expect(split(`SET "a b" 'c d'`)).toEqual(['SET', 'a b', 'c d']);
    expect(split(`  GET   key:1.x  \n`)).toEqual(['GET', 'key:1.x']);
    expect(split(`SET k "line\\nbreak\\t\\"q\\" \\\\ \\x41\\x4a \\z"`)).toEqual(['SET', 'k', 'line\nbreak\t"q" \\ AJ z']);
    expect(split(`SET k 'it\\'s \\n "raw"'`)).toEqual(['SET', 'k', `it's \\n "raw"`]);
    expect(split(`SET foo"bar baz" ""`)).toEqual(['SET', 'foobar baz', '']);
    expect(split(`SET "é ✓ 😀" x`)).toEqual(['SET', 'é ✓ 😀', 'x']);
    expect(splitCommandLine(`SET k "\\xff\\x00"`)[2]).toEqual(Buffer.from([0xff, 0x00]));
    expect(split(`SET k "multi\nline"`)).toEqual(['SET', 'k', 'multi\nline']);
  });

  it('refuses unbalanced quotes, text after a closing quote and a second line', () => {
    for (const text of [`GET "abc`, `GET 'abc`, `GET "a"b`, `GET 'a'b`, `GET a\nGET b`, `GET "a\\"`]) {
      const error = (() => {
        try {
          splitCommandLine(text);
        } catch (e) {
          return e as ValidationError;
        }
        throw new Error(`accepted ${JSON.stringify(text)}`);
      })();
      expect(error).toBeInstanceOf(ValidationError);
      expect(error.details.field).toBe('sql');
    }
  });

  it('denies commands that take over the connection or endanger the server, and allows the rest', () => {
    const denied = [
      'SUBSCRIBE c',
      'psubscribe p*',
      'SSUBSCRIBE c',
      'MONITOR',
      'SELECT 1',
      'QUIT',
      'SHUTDOWN NOSAVE',
      'DEBUG SLEEP 0',
      'SYNC',
      'PSYNC ? -1',
      'REPLICAOF host 6379',
      'SLAVEOF NO ONE',
      'CLIENT KILL ID 1',
      'client pause 100',
      'CLIENT',
      'CONFIG SET requirepass x',
      'ACL SETUSER default off',
      'MULTI',
      'EXEC',
      'WATCH k',
      'AUTH x',
      'HELLO 2',
      'MODULE LOAD /x.so',
      'RESET',
      '',
    ];
    for (const text of denied) expect(() => checkCommand(splitCommandLine(text)), text).toThrow(ValidationError);
    const allowed = [
      'FLUSHALL',
      'FLUSHDB ASYNC',
      'CONFIG GET maxmemory',
      'CLIENT LIST',
      'client id',
      'ACL WHOAMI',
      'BLPOP k 1',
      'EVAL "return 1" 0',
      'KEYS *',
      'DBSIZE',
    ];
    for (const text of allowed) expect(() => checkCommand(splitCommandLine(text)), text).not.toThrow();
  });
});

describe('tables and rows', () => {
  beforeAll(async () => {
    await seed.hset('user:1.profile name', { a: '1', b: '2', c: '3', d: '4', e: Buffer.from([0xff, 0x00, 0x41]) });
    await seed.rpush('list', ...Array.from({ length: 10 }, (_, i) => `item-${i}`));
    await seed.sadd('tags', ...Array.from({ length: 25 }, (_, i) => `m${String(24 - i).padStart(2, '0')}`));
    await seed.zadd('scores', '1.5', 'alice', '-2', 'bob', 'inf', 'carol', '0', 'dave');
    await seed.set('greeting', 'hello wörld');
    for (let i = 0; i < 5; i++) await seed.xadd('events', '*', 'n', String(i), 'kind', 'tick');
    await seed.set(Buffer.from([0xc3, 0x28]), Buffer.from([0x00, 0xfe]));
    await seed1.hset('only-in-1', 'f', 'one');
  });

  it('lists the keys of database 0 with their length, sorted, and database 1 apart', async () => {
    const tables = await admin.listTables(db, {}, never);
    expect(tables).toEqual([
      { id: 'db0.events', name: 'events', schema: 'db0', rowCount: 5 },
      { id: 'db0.greeting', name: 'greeting', schema: 'db0', rowCount: 1 },
      { id: 'db0.list', name: 'list', schema: 'db0', rowCount: 10 },
      { id: 'db0.scores', name: 'scores', schema: 'db0', rowCount: 4 },
      { id: 'db0.tags', name: 'tags', schema: 'db0', rowCount: 25 },
      { id: 'db0.user:1.profile name', name: 'user:1.profile name', schema: 'db0', rowCount: 5 },
      { id: 'db0.\\xc328', name: '\\xc328', schema: 'db0', rowCount: 1 },
    ]);
    expect(await admin.listTables(db, { logicalDatabase: 1 }, never)).toEqual([
      { id: 'db1.only-in-1', name: 'only-in-1', schema: 'db1', rowCount: 1 },
    ]);
    expect(await admin.listTables(db, { logicalDatabase: 5 }, never)).toEqual([]);
    const error = await rejection(admin.listTables(db, { logicalDatabase: 16 }, never));
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).details.field).toBe('logicalDatabase');
  });

  it('pages a hash by field, keeping binary values in the \\x form, under a key with dots, colons and spaces', async () => {
    const page = await admin.readRows(db, t('user:1.profile name'), { limit: 2, offset: 1 }, never);
    expect(page.columns).toEqual([
      { name: 'field', type: 'string', primary: true },
      { name: 'value', type: 'string', primary: false },
    ]);
    expect(page).toMatchObject({
      rows: [
        { field: 'b', value: '2' },
        { field: 'c', value: '3' },
      ],
      total: 5,
    });
    const last = await admin.readRows(db, t('user:1.profile name'), { limit: 10, offset: 4 }, never);
    expect(last.rows).toEqual([{ field: 'e', value: '\\xff0041' }]);
  });

  it('pages a list by index', async () => {
    const page = await admin.readRows(db, t('list'), { limit: 4, offset: 3 }, never);
    expect(page.columns.map((c) => [c.name, c.type, c.primary])).toEqual([
      ['index', 'integer', true],
      ['value', 'string', false],
    ]);
    expect(page.rows).toEqual([3, 4, 5, 6].map((i) => ({ index: i, value: `item-${i}` })));
    expect(page.total).toBe(10);
    expect((await admin.readRows(db, t('list'), { limit: 5, offset: 8 }, never)).rows.map((r) => r.index)).toEqual([8, 9]);
    for (const name of ['list', 'scores', 'tags', 'events', 'greeting', 'user:1.profile name']) {
      const first = await admin.readRows(db, t(name), { limit: 1, offset: 0 }, never);
      expect(first.rows, name).toHaveLength(1);
      expect(first.total, name).toBe((await admin.readRows(db, t(name), { limit: 100, offset: 0 }, never)).total);
    }
    // The API's bound of a page (ROWS_PAGE_LIMIT), the same in every adapter.
    for (const limit of [0, 501]) {
      const error = await admin.readRows(db, t('list'), { limit, offset: 0 }, never).catch((e: unknown) => e);
      expect(error, String(limit)).toBeInstanceOf(ValidationError);
    }
  });

  it('pages a set in one stable order', async () => {
    const seen: string[] = [];
    for (let offset = 0; offset < 25; offset += 7) {
      const page = await admin.readRows(db, t('tags'), { limit: 7, offset }, never);
      expect(page.total).toBe(25);
      seen.push(...page.rows.map((r) => r.member as string));
    }
    expect(seen).toEqual(Array.from({ length: 25 }, (_, i) => `m${String(i).padStart(2, '0')}`));
    expect((await admin.readRows(db, t('tags'), { limit: 1, offset: 0 }, never)).columns).toEqual([
      { name: 'member', type: 'string', primary: true },
    ]);
  });

  it('pages a sorted set by rank with scores', async () => {
    const page = await admin.readRows(db, t('scores'), { limit: 10, offset: 0 }, never);
    expect(page.columns.map((c) => [c.name, c.type, c.primary])).toEqual([
      ['member', 'string', true],
      ['score', 'double', false],
    ]);
    expect(page.rows).toEqual([
      { member: 'bob', score: -2 },
      { member: 'dave', score: 0 },
      { member: 'alice', score: 1.5 },
      { member: 'carol', score: 'inf' },
    ]);
    expect((await admin.readRows(db, t('scores'), { limit: 2, offset: 1 }, never)).rows.map((r) => r.member)).toEqual(['dave', 'alice']);
  });

  it('reads a string as one row without a primary key', async () => {
    expect(await admin.readRows(db, t('greeting'), { limit: 10, offset: 0 }, never)).toEqual({
      columns: [{ name: 'value', type: 'string', primary: false }],
      rows: [{ value: 'hello wörld' }],
      total: 1,
    });
    expect((await admin.readRows(db, t('greeting'), { limit: 10, offset: 1 }, never)).rows).toEqual([]);
  });

  it('pages a stream by entry with its fields as an object', async () => {
    const all = await admin.readRows(db, t('events'), { limit: 100, offset: 0 }, never);
    expect(all.columns.map((c) => [c.name, c.type, c.primary])).toEqual([
      ['id', 'stream-id', true],
      ['fields', 'hash', false],
    ]);
    expect(all.total).toBe(5);
    expect(all.rows.map((r) => r.fields)).toEqual([0, 1, 2, 3, 4].map((n) => ({ n: String(n), kind: 'tick' })));
    const page = await admin.readRows(db, t('events'), { limit: 2, offset: 2 }, never);
    expect(page.rows).toEqual(all.rows.slice(2, 4));
    expect(page.rows[0]!.id).toMatch(/^\d+-\d+$/);
  });

  it('reads a key whose name is not UTF-8 by its \\x form, and keys of database 1', async () => {
    expect((await admin.readRows(db, t('\\xc328'), { limit: 1, offset: 0 }, never)).rows).toEqual([{ value: '\\x00fe' }]);
    expect((await admin.readRows(db, t('only-in-1', 'db1'), { limit: 10, offset: 0 }, never)).rows).toEqual([{ field: 'f', value: 'one' }]);
  });

  it('answers NotFoundError for a key that does not exist and for a schema that is no database', async () => {
    for (const [schema, name] of [
      ['db0', 'nope'],
      ['db0', 'only-in-1'],
      ['db16', 'list'],
      ['db01', 'list'],
      ['public', 'list'],
      ['db', 'list'],
    ] as const) {
      const error = await rejection(admin.readRows(db, { schema, name }, { limit: 1, offset: 0 }, never));
      expect(error, `${schema}.${name}`).toBeInstanceOf(NotFoundError);
      expect((error as NotFoundError).details).toEqual({ resource: 'table', id: `${schema}.${name}` });
    }
  });

  it('caps the key list (a constructor option)', async () => {
    const seed2 = testClient(server, 2);
    await seed2.connect();
    const pipeline = seed2.pipeline();
    for (let i = 0; i < 200; i++) pipeline.set(`k:${i}`, 'v');
    await pipeline.exec();
    seed2.disconnect();
    const capped = new RedisDatabaseAdmin({ maxKeys: 50 });
    try {
      const tables = await capped.listTables(db, { logicalDatabase: 2 }, never);
      expect(tables).toHaveLength(50);
      expect(new Set(tables.map((x) => x.id)).size).toBe(50);
      expect(tables.map((x) => x.name)).toEqual([...tables.map((x) => x.name)].sort());
      expect(tables.every((x) => x.schema === 'db2' && x.rowCount === 1)).toBe(true);
      expect(await admin.listTables(db, { logicalDatabase: 2 }, never)).toHaveLength(200);
    } finally {
      await capped.closeAll();
    }
  });
});

describe('writing rows', () => {
  beforeAll(async () => {
    await seed.del('w:hash', 'w:list', 'w:set', 'w:zset', 'w:stream', 'w:string');
    await seed.hset('w:hash', 'keep', 'k');
    await seed.rpush('w:list', 'a', 'b', 'c', 'a');
    await seed.sadd('w:set', 'x');
    await seed.zadd('w:zset', '0', 'zero');
    await seed.xadd('w:stream', '*', 'f', 'v');
    await seed.set('w:string', 'one value');
  });

  it('hash: HSETNX insert, HSET update (value and rename), HDEL delete', async () => {
    expect(await admin.insertRow(db, t('w:hash'), { field: 'f', value: 'v' }, never)).toEqual({ id: 'f' });
    expect(await seed.hget('w:hash', 'f')).toBe('v');
    expect(await rejection(admin.insertRow(db, t('w:hash'), { field: 'f', value: 'again' }, never))).toBeInstanceOf(ValidationError);
    const unknown = (await rejection(admin.insertRow(db, t('w:hash'), { field: 'g', value: 'v', extra: 1 }, never))) as ValidationError;
    expect(unknown).toBeInstanceOf(ValidationError);
    expect(unknown.details.field).toBe('values');
    expect(await rejection(admin.insertRow(db, t('w:hash'), { field: 'g' }, never))).toBeInstanceOf(ValidationError);
    await admin.insertRow(db, t('w:hash'), { field: 'n', value: 42 }, never);
    expect(await seed.hget('w:hash', 'n')).toBe('42');

    await admin.updateRow(db, t('w:hash'), { field: 'f' }, { value: 'v2' }, never);
    expect(await seed.hget('w:hash', 'f')).toBe('v2');
    await admin.updateRow(db, t('w:hash'), { field: 'f' }, { field: 'f2' }, never);
    expect(await seed.hgetall('w:hash')).toEqual({ keep: 'k', f2: 'v2', n: '42' });
    expect(await rejection(admin.updateRow(db, t('w:hash'), { field: 'f2' }, { field: 'keep' }, never))).toBeInstanceOf(ValidationError);
    const missing = await rejection(admin.updateRow(db, t('w:hash'), { field: 'nope' }, { value: 'x' }, never));
    expect(missing).toBeInstanceOf(NotFoundError);
    expect((missing as NotFoundError).details.resource).toBe('row');
    expect(await seed.hexists('w:hash', 'nope')).toBe(0);

    await admin.deleteRow(db, t('w:hash'), { field: 'f2' }, never);
    expect(await seed.hexists('w:hash', 'f2')).toBe(0);
    expect(await rejection(admin.deleteRow(db, t('w:hash'), { field: 'f2' }, never))).toBeInstanceOf(NotFoundError);
    expect(await rejection(admin.deleteRow(db, t('w:hash'), { value: 'k' }, never))).toBeInstanceOf(ValidationError);
  });

  it('list: RPUSH insert (id = new index), LSET update, delete by index', async () => {
    expect(await admin.insertRow(db, t('w:list'), { value: 'd' }, never)).toEqual({ id: 4 });
    expect(await rejection(admin.insertRow(db, t('w:list'), { index: 0, value: 'x' }, never))).toBeInstanceOf(ValidationError);
    await admin.updateRow(db, t('w:list'), { index: 1 }, { value: 'B' }, never);
    expect(await seed.lrange('w:list', 0, -1)).toEqual(['a', 'B', 'c', 'a', 'd']);
    expect(await rejection(admin.updateRow(db, t('w:list'), { index: 99 }, { value: 'x' }, never))).toBeInstanceOf(NotFoundError);
    // Deleting index 3 (the second "a") leaves the first one, whatever the values.
    await admin.deleteRow(db, t('w:list'), { index: 3 }, never);
    expect(await seed.lrange('w:list', 0, -1)).toEqual(['a', 'B', 'c', 'd']);
    expect(await rejection(admin.deleteRow(db, t('w:list'), { index: 4 }, never))).toBeInstanceOf(NotFoundError);
    expect(await rejection(admin.deleteRow(db, t('w:list'), { index: -1 }, never))).toBeInstanceOf(ValidationError);
  });

  it('set: SADD insert, rename in one step, SREM delete', async () => {
    expect(await admin.insertRow(db, t('w:set'), { member: 'y' }, never)).toEqual({ id: 'y' });
    expect(await rejection(admin.insertRow(db, t('w:set'), { member: 'y' }, never))).toBeInstanceOf(ValidationError);
    await admin.updateRow(db, t('w:set'), { member: 'y' }, { member: 'z' }, never);
    expect((await seed.smembers('w:set')).sort()).toEqual(['x', 'z']);
    expect(await rejection(admin.updateRow(db, t('w:set'), { member: 'z' }, { member: 'x' }, never))).toBeInstanceOf(ValidationError);
    expect(await rejection(admin.updateRow(db, t('w:set'), { member: 'nope' }, { member: 'w' }, never))).toBeInstanceOf(NotFoundError);
    await admin.deleteRow(db, t('w:set'), { member: 'z' }, never);
    expect(await seed.smembers('w:set')).toEqual(['x']);
    expect(await rejection(admin.deleteRow(db, t('w:set'), { member: 'z' }, never))).toBeInstanceOf(NotFoundError);
  });

  it('sorted set: ZADD NX insert, score and member updates, ZREM delete', async () => {
    expect(await admin.insertRow(db, t('w:zset'), { member: 'm', score: 2 }, never)).toEqual({ id: 'm' });
    expect(await rejection(admin.insertRow(db, t('w:zset'), { member: 'm', score: 3 }, never))).toBeInstanceOf(ValidationError);
    expect(await rejection(admin.insertRow(db, t('w:zset'), { member: 'q', score: 'lots' }, never))).toBeInstanceOf(ValidationError);
    await admin.updateRow(db, t('w:zset'), { member: 'm' }, { score: '-inf' }, never);
    expect(await seed.zscore('w:zset', 'm')).toBe('-inf');
    // A member scored 0 exists (not mistaken for a missing one).
    await admin.updateRow(db, t('w:zset'), { member: 'zero' }, { score: 7.25 }, never);
    expect(await seed.zscore('w:zset', 'zero')).toBe('7.25');
    await admin.updateRow(db, t('w:zset'), { member: 'zero' }, { member: 'seven' }, never);
    expect(await seed.zrange('w:zset', '0', '-1', 'WITHSCORES')).toEqual(['m', '-inf', 'seven', '7.25']);
    expect(await rejection(admin.updateRow(db, t('w:zset'), { member: 'nope' }, { score: 1 }, never))).toBeInstanceOf(NotFoundError);
    expect(await seed.zscore('w:zset', 'nope')).toBeNull();
    await admin.deleteRow(db, t('w:zset'), { member: 'm' }, never);
    expect(await rejection(admin.deleteRow(db, t('w:zset'), { member: 'm' }, never))).toBeInstanceOf(NotFoundError);
  });

  it('stream: XADD insert (id = new entry id), entries immutable, XDEL delete', async () => {
    const { id } = await admin.insertRow(db, t('w:stream'), { fields: { a: '1', b: 2 } }, never);
    expect(id).toMatch(/^\d+-\d+$/);
    const page = await admin.readRows(db, t('w:stream'), { limit: 10, offset: 1 }, never);
    expect(page.rows).toEqual([{ id, fields: { a: '1', b: '2' } }]);
    expect(await rejection(admin.insertRow(db, t('w:stream'), { fields: {} }, never))).toBeInstanceOf(ValidationError);
    const old = await rejection(admin.insertRow(db, t('w:stream'), { id: '1-1', fields: { a: 'x' } }, never));
    expect(old).toBeInstanceOf(QueryError);
    expect(old.message).toMatch(/equal or smaller/);
    const immutable = (await rejection(admin.updateRow(db, t('w:stream'), { id }, { fields: { a: 'z' } }, never))) as ValidationError;
    expect(immutable).toBeInstanceOf(ValidationError);
    expect(immutable.details.field).toBe('table');
    await admin.deleteRow(db, t('w:stream'), { id }, never);
    expect(await seed.xlen('w:stream')).toBe(1);
    expect(await rejection(admin.deleteRow(db, t('w:stream'), { id }, never))).toBeInstanceOf(NotFoundError);
    expect(await rejection(admin.deleteRow(db, t('w:stream'), { id: 'not-an-id' }, never))).toBeInstanceOf(NotFoundError);
  });

  it('string: a key without a primary key refuses insert, PATCH and DELETE with ValidationError', async () => {
    for (const attempt of [
      admin.insertRow(db, t('w:string'), { value: 'x' }, never),
      admin.updateRow(db, t('w:string'), {}, { value: 'x' }, never),
      admin.deleteRow(db, t('w:string'), {}, never),
    ]) {
      const error = (await rejection(attempt)) as ValidationError;
      expect(error).toBeInstanceOf(ValidationError);
      expect(error.details.field).toBe('table');
    }
    expect(await seed.get('w:string')).toBe('one value');
  });

  it('writes go to the logical database of the schema, and unknown keys are NotFoundError', async () => {
    await admin.insertRow(db, t('only-in-1', 'db1'), { field: 'g', value: 'two' }, never);
    expect(await seed1.hget('only-in-1', 'g')).toBe('two');
    expect(await seed.exists('only-in-1')).toBe(0);
    const error = await rejection(admin.insertRow(db, t('w:nope'), { member: 'x' }, never));
    expect(error).toBeInstanceOf(NotFoundError);
    expect((error as NotFoundError).details).toEqual({ resource: 'table', id: 'db0.w:nope' });
    expect(await seed.exists('w:nope')).toBe(0);
  });

  it('finds binary members by their \\x form', async () => {
    await seed.sadd('w:binset', Buffer.from([0xff, 0x01]));
    const rows = (await admin.readRows(db, t('w:binset'), { limit: 10, offset: 0 }, never)).rows;
    expect(rows).toEqual([{ member: '\\xff01' }]);
    await admin.deleteRow(db, t('w:binset'), { member: '\\xff01' }, never);
    expect(await seed.exists('w:binset')).toBe(0);
  });
});

describe('queries', () => {
  it('runs one command line and shapes its reply as rows', async () => {
    expect(await admin.query(db, `SET "q a b" 'c d'`, limits, never)).toEqual({
      columns: [{ name: 'value', type: 'string' }],
      rows: [{ value: 'OK' }],
      rowCount: 1,
      truncated: false,
    });
    expect((await admin.query(db, `GET "q a b"`, limits, never)).rows).toEqual([{ value: 'c d' }]);
    expect(await admin.query(db, 'GET q:missing', limits, never)).toEqual({
      columns: [{ name: 'value', type: 'nil' }],
      rows: [{ value: null }],
      rowCount: 1,
      truncated: false,
    });
    expect(await admin.query(db, 'LRANGE q:missing 0 -1', limits, never)).toMatchObject({ rows: [], rowCount: 0, truncated: false });
    expect(await admin.query(db, 'INCRBY q:n 9007199254740993', limits, never)).toMatchObject({
      columns: [{ name: 'value', type: 'integer' }],
      rows: [{ value: '9007199254740993' }],
    });
    expect((await admin.query(db, 'INCR q:small', limits, never)).rows).toEqual([{ value: 1 }]);
    expect((await admin.query(db, `SET q:bin "\\xff\\x00A"`, limits, never)).rows).toEqual([{ value: 'OK' }]);
    expect((await admin.query(db, 'GET q:bin', limits, never)).rows).toEqual([{ value: '\\xff0041' }]);
    expect(await seed.getBuffer('q:bin')).toEqual(Buffer.from([0xff, 0x00, 0x41]));

    const hash = await admin.query(db, 'HGETALL "user:1.profile name"', limits, never);
    expect(hash.columns).toEqual([
      { name: 'field', type: 'string' },
      { name: 'value', type: 'string' },
    ]);
    expect(hash.rows).toContainEqual({ field: 'a', value: '1' });
    expect(hash.rows).toContainEqual({ field: 'e', value: '\\xff0041' });
    expect((await admin.query(db, 'CONFIG GET databases', limits, never)).rows).toEqual([{ field: 'databases', value: '16' }]);
    expect((await admin.query(db, 'ZRANGE scores 0 1 WITHSCORES', limits, never)).rows).toEqual([
      { value: ['bob', -2] },
      { value: ['dave', 0] },
    ]);
    expect((await admin.query(db, 'LRANGE list 0 2', limits, never)).rows).toEqual([
      { value: 'item-0' },
      { value: 'item-1' },
      { value: 'item-2' },
    ]);
    expect((await admin.query(db, 'EVAL "return {1, \'a\', {2}}" 0', limits, never)).columns).toEqual([{ name: 'value', type: 'mixed' }]);
  });

  it('refuses denied commands with ValidationError on sql, before sending anything', async () => {
    for (const text of [
      'SUBSCRIBE news',
      'MONITOR',
      'SELECT 1',
      'SHUTDOWN',
      'DEBUG SLEEP 1',
      'CONFIG SET requirepass x',
      'CLIENT KILL TYPE normal',
      'MULTI',
      '  ',
    ]) {
      const error = (await rejection(admin.query(db, text, limits, never))) as ValidationError;
      expect(error, text).toBeInstanceOf(ValidationError);
      expect(error.details.field).toBe('sql');
    }
    expect(await seed.ping()).toBe('PONG');
  });

  it("answers Redis's own refusals as QueryError", async () => {
    const unknown = await rejection(admin.query(db, 'NOSUCHCOMMAND x', limits, never));
    expect(unknown).toBeInstanceOf(QueryError);
    expect(unknown.message).toMatch(/unknown command/i);
    const wrongType = await rejection(admin.query(db, 'HGETALL list', limits, never));
    expect(wrongType).toBeInstanceOf(QueryError);
    expect(wrongType.message).toMatch(/^WRONGTYPE/);
    // The connection stays usable after a refusal.
    expect((await admin.query(db, 'PING', limits, never)).rows).toEqual([{ value: 'PONG' }]);
  });

  it('caps the rows of a 100k-element reply', async () => {
    const values = Array.from({ length: 100_000 }, (_, i) => String(i));
    for (let i = 0; i < values.length; i += 10_000) await seed.rpush('q:big', ...values.slice(i, i + 10_000));
    const result = await admin.query(db, 'LRANGE q:big 0 -1', { timeoutMs: 10_000, rowCap: 1000 }, never);
    expect(result.rowCount).toBe(1000);
    expect(result.rows).toHaveLength(1000);
    expect(result.truncated).toBe(true);
    expect(result.rows[999]).toEqual({ value: '999' });
    expect((await admin.query(db, 'LRANGE q:big 0 9', { timeoutMs: 1000, rowCap: 10 }, never)).truncated).toBe(false);
  });

  it('cuts a blocking command at the timeout, which unblocks it on the server', async () => {
    const started = Date.now();
    const error = await rejection(admin.query(db, 'BLPOP q:never 5', { timeoutMs: 300, rowCap: 10 }, never));
    expect(error).toBeInstanceOf(QueryError);
    expect(error.message).toBe('BLPOP timed out after 300 ms: its connection was closed.');
    expect(Date.now() - started).toBeLessThan(2000);
    await expect.poll(async () => /blocked_clients:(\d+)/.exec(await seed.info('clients'))?.[1], { timeout: 3000 }).toBe('0');
    // Other queries go on (a new connection replaces the closed one).
    expect((await admin.query(db, 'PING', limits, never)).rows).toEqual([{ value: 'PONG' }]);
  });

  it('honours the AbortSignal: before the call and while a command blocks', async () => {
    const done = new AbortController();
    done.abort(new Error('gone'));
    expect((await rejection(admin.query(db, 'PING', limits, done.signal))).message).toBe('gone');
    expect((await rejection(admin.listTables(db, {}, done.signal))).message).toBe('gone');
    const later = new AbortController();
    setTimeout(() => later.abort(new Error('user left')), 200);
    const started = Date.now();
    expect((await rejection(admin.query(db, 'BLPOP q:never 0', { timeoutMs: 30_000, rowCap: 1 }, later.signal))).message).toBe('user left');
    expect(Date.now() - started).toBeLessThan(2000);
    await expect.poll(async () => /blocked_clients:(\d+)/.exec(await seed.info('clients'))?.[1], { timeout: 3000 }).toBe('0');
  });

  it('runs queries on a bounded set of connections: a further query waits, within its own timeout', async () => {
    const single = new RedisDatabaseAdmin({ maxQueryConnections: 1 });
    try {
      const blocked = rejection(single.query(db, 'BLPOP q:never 0', { timeoutMs: 500, rowCap: 1 }, never));
      await new Promise((r) => setTimeout(r, 100));
      const impatient = rejection(single.query(db, 'PING', { timeoutMs: 100, rowCap: 1 }, never));
      const started = Date.now();
      const patient = await single.query(db, 'PING', { timeoutMs: 5000, rowCap: 1 }, never);
      expect(patient.rows).toEqual([{ value: 'PONG' }]);
      expect(Date.now() - started).toBeGreaterThan(250); // it waited for the BLPOP to be cut
      expect((await blocked).message).toBe('BLPOP timed out after 500 ms: its connection was closed.');
      expect((await impatient).message).toBe('PING timed out after 100 ms: its connection was closed.');
    } finally {
      await single.closeAll();
    }
  });

  it('stops a runaway script after its timeout with SCRIPT KILL', async () => {
    const error = await rejection(admin.query(db, 'EVAL "while true do end" 0', { timeoutMs: 300, rowCap: 1 }, never));
    expect(error.message).toBe('EVAL timed out after 300 ms: its connection was closed.');
    // Redis takes SCRIPT KILL once the script has run for busy-reply-threshold (5 s by default).
    await expect
      .poll(async () => admin.checkReady(db, never).catch((e: Error) => e.message), { timeout: 15_000, interval: 250 })
      .toMatch(/^PING answered PONG/);
  }, 30_000);
});

describe('connections', () => {
  it('checks readiness with PING and the version from INFO', async () => {
    expect(await admin.checkReady(db, never)).toMatch(/^PING answered PONG \(Redis 7\.\d+\.\d+\)$/);
  });

  it('keeps one pooled client per service, reused, closed after being idle', async () => {
    await admin.closeAll();
    const clientNames = async () =>
      ((await seed.client('LIST')) as string)
        .split('\n')
        .map((line) => /name=(\S*)/.exec(line)?.[1])
        .filter((name) => name?.startsWith('slipway-'))
        .sort();
    await expect.poll(clientNames, { timeout: 3000 }).toEqual([]);
    const pooled = new RedisDatabaseAdmin({ idleMs: 400 });
    try {
      await pooled.checkReady(db, never);
      await pooled.listTables(db, {}, never);
      await pooled.readRows(db, t('list'), { limit: 1, offset: 0 }, never);
      await pooled.query(db, 'PING', limits, never);
      await pooled.query(db, 'DBSIZE', limits, never);
      expect(pooled.openServices).toBe(1);
      expect(await clientNames()).toEqual(['slipway-admin', 'slipway-query']);
      await pooled.listTables(db, { logicalDatabase: 1 }, never);
      expect(await clientNames()).toEqual(['slipway-admin', 'slipway-admin', 'slipway-query']);
      await expect.poll(() => pooled.openServices, { timeout: 3000 }).toBe(0);
      await expect.poll(clientNames, { timeout: 3000 }).toEqual([]);
      // A released service opens again on demand.
      await pooled.checkReady(db, never);
      expect(pooled.openServices).toBe(1);
      await pooled.release(db.serviceId);
      expect(pooled.openServices).toBe(0);
    } finally {
      await pooled.closeAll();
    }
  });

  it('answers a wrong password with Redis refusal, never showing the password', async () => {
    const secret = 'wrong-secret-7f3a9c';
    const error = await rejection(admin.checkReady({ ...db, serviceId: 'svc-wrong', env: { REDIS_PASSWORD: secret } }, never));
    expect(error).toBeInstanceOf(QueryError);
    expect(error.message).toMatch(/WRONGPASS/);
    const shown = JSON.stringify({ message: error.message, details: (error as QueryError).details, stack: error.stack });
    expect(shown).not.toContain(secret);
    expect(shown).not.toContain(server.password);
    const none = await rejection(admin.checkReady({ ...db, serviceId: 'svc-nopw', env: {} }, never));
    expect(none).toBeInstanceOf(QueryError);
    expect(none.message).toMatch(/NOAUTH/);
  });

  it('answers NotRunningError fast when nothing listens', async () => {
    const started = Date.now();
    const error = await rejection(admin.listTables({ ...db, serviceId: 'svc-gone', port: 1 }, {}, never));
    expect(error).toBeInstanceOf(NotRunningError);
    expect(error.message).not.toContain(server.password);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('answers NotRunningError once the server has stopped, on a pooled client too', async () => {
    expect(await admin.checkReady(db, never)).toMatch(/^PING answered PONG/);
    await admin.query(db, 'PING', limits, never);
    await server.stop();
    for (const attempt of [
      () => admin.checkReady(db, never),
      () => admin.listTables(db, {}, never),
      () => admin.query(db, 'PING', limits, never),
      () => admin.readRows(db, t('list'), { limit: 1, offset: 0 }, never),
    ]) {
      const started = Date.now();
      const error = await rejection(attempt());
      expect(error).toBeInstanceOf(NotRunningError);
      expect(error.message).not.toContain(server.password);
      expect(Date.now() - started).toBeLessThan(4000);
    }
  }, 60_000);
});
