import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Binary, Decimal128, Double, Int32, Long, MongoClient, ObjectId, Timestamp } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MongoDatabaseAdmin } from '../../adapters/databases/mongodb.database-admin.js';
import type { DatabaseEndpoint, QueryLimits } from '../../src/databases/database-admin.port.js';
import { NotFoundError, NotRunningError, QueryError, ValidationError } from '../../src/domain/errors.js';
import { freePort } from '../helpers/caddy.js';
import { type StandinServer, startServer } from '../standins/mongo-wire/server.mjs';

/**
 * The MongoDB adapter of the DatabaseAdmin port against the wire-protocol stand-in (test/standins/mongo-wire),
 * run in-process: no MongoDB server exists on the test machine. What the stand-in covers is in its README.
 */
const USER = 'shop_db';
const PASSWORD = 'Pa55:w/rd@%?&=x';
const never = new AbortController().signal;
const limits: QueryLimits = { timeoutMs: 5_000, rowCap: 1_000 };

let server: StandinServer;
let dir: string;
let db: DatabaseEndpoint;
let admin: MongoDatabaseAdmin;
let seed: MongoClient;
const extraAdmins: MongoDatabaseAdmin[] = [];

const endpoint = (
  port: number,
  env: Record<string, string> = { MONGO_INITDB_ROOT_USERNAME: USER, MONGO_INITDB_ROOT_PASSWORD: PASSWORD },
  serviceId = 'svc-mongo',
): DatabaseEndpoint => ({
  serviceId,
  engine: 'mongodb',
  host: '127.0.0.1',
  port,
  env,
});

function newAdmin(options: ConstructorParameters<typeof MongoDatabaseAdmin>[0]): MongoDatabaseAdmin {
  const a = new MongoDatabaseAdmin(options);
  extraAdmins.push(a);
  return a;
}

async function rejection(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (error) {
    return error as Error;
  }
  throw new Error('expected a rejection');
}

async function openCursors(): Promise<number> {
  return Number((await seed.db('admin').command({ serverStatus: 1 })).metrics.cursor.open.total);
}

async function connections(): Promise<{ current: number; totalCreated: number }> {
  const status = await seed.db('admin').command({ serverStatus: 1 });
  return { current: Number(status.connections.current), totalCreated: Number(status.connections.totalCreated) };
}

const ids = {
  ada: new ObjectId('65f1a2b3c4d5e6f708091a01'),
  bob: new ObjectId('65f1a2b3c4d5e6f708091a02'),
  cy: new ObjectId('65f1a2b3c4d5e6f708091a03'),
};

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'mongodb-admin-'));
  server = await startServer({ port: 0, dbpath: dir, rootUser: USER, rootPassword: PASSWORD, testCommands: true });
  db = endpoint(server.port);
  admin = new MongoDatabaseAdmin({ idleMs: 60_000, connectTimeoutMs: 2_000 });
  // Polled monitoring: a streaming monitor opens its round-trip pinger's connection after a heartbeat or two, which
  // then counts among the server's connections that the pooled-client test compares (8 against 7, once, at load 10).
  seed = new MongoClient(
    `mongodb://${encodeURIComponent(USER)}:${encodeURIComponent(PASSWORD)}@127.0.0.1:${server.port}/?authSource=admin`,
    { serverMonitoringMode: 'poll' },
  );
  const shop = seed.db('shop');
  await shop.collection('users').insertMany([
    {
      _id: ids.bob,
      name: 'bob',
      age: new Int32(25),
      score: new Double(7.5),
      visits: Long.fromString('9007199254740993'),
      small: Long.fromNumber(12),
      balance: Decimal128.fromString('12.345'),
      avatar: new Binary(Buffer.from([0, 1, 255])),
      joined: new Date('2024-05-06T07:08:09.010Z'),
      active: true,
      address: { city: 'Paris', zip: '75001' },
      tags: ['ops', 1],
      note: null,
    },
    { _id: ids.ada, name: 'ada', age: new Int32(36), note: 'first', seen: new Timestamp({ t: 1_700_000_000, i: 3 }) },
    { _id: ids.cy, name: 'cy', age: new Int32(41), note: null, pattern: /^c/i },
  ]);
  await shop.collection('orders').insertMany([
    { _id: 'o-1' as never, total: 10 },
    { _id: 'o-2' as never, total: 20 },
  ]);
  await shop.collection('big').insertMany(Array.from({ length: 2_500 }, (_, i) => ({ i })));
  await seed.db('analytics').createCollection('events');
}, 60_000);

afterAll(async () => {
  await admin?.closeAll();
  for (const a of extraAdmins) await a.closeAll();
  await seed?.close();
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('reading', () => {
  it('checkReady says hello answered, with the version', async () => {
    expect(await admin.checkReady(db, never)).toBe('hello answered (MongoDB 7.0.0-standin)');
  });

  it('lists the collections of every database but admin, local and config, with their counts', async () => {
    expect(await admin.listTables(db, {}, never)).toEqual([
      { id: 'analytics.events', name: 'events', schema: 'analytics', rowCount: 0 },
      { id: 'shop.big', name: 'big', schema: 'shop', rowCount: 2_500 },
      { id: 'shop.orders', name: 'orders', schema: 'shop', rowCount: 2 },
      { id: 'shop.users', name: 'users', schema: 'shop', rowCount: 3 },
    ]);
  });

  it('reads documents sorted by _id, with columns typed by BSON type and values in the API forms', async () => {
    const page = await admin.readRows(db, { schema: 'shop', name: 'users' }, { limit: 10, offset: 0 }, never);
    expect(page.total).toBe(3);
    expect(page.rows.map((r) => r.name)).toEqual(['ada', 'bob', 'cy']);
    expect(page.columns).toEqual([
      { name: '_id', type: 'objectId', primary: true },
      { name: 'name', type: 'string', primary: false },
      { name: 'age', type: 'int', primary: false },
      { name: 'note', type: 'string', primary: false },
      { name: 'seen', type: 'timestamp', primary: false },
      { name: 'score', type: 'double', primary: false },
      { name: 'visits', type: 'long', primary: false },
      { name: 'small', type: 'long', primary: false },
      { name: 'balance', type: 'decimal', primary: false },
      { name: 'avatar', type: 'binData', primary: false },
      { name: 'joined', type: 'date', primary: false },
      { name: 'active', type: 'bool', primary: false },
      { name: 'address', type: 'object', primary: false },
      { name: 'tags', type: 'array', primary: false },
      { name: 'pattern', type: 'regex', primary: false },
    ]);
    expect(page.rows[1]).toEqual({
      _id: '65f1a2b3c4d5e6f708091a02',
      name: 'bob',
      age: 25,
      score: 7.5,
      visits: '9007199254740993',
      small: 12,
      balance: '12.345',
      avatar: '\\x0001ff',
      joined: '2024-05-06T07:08:09.010Z',
      active: true,
      address: { city: 'Paris', zip: '75001' },
      tags: ['ops', 1],
      note: null,
    });
    expect(page.rows[0]).toMatchObject({ seen: { t: 1_700_000_000, i: 3 } });
    expect(page.rows[2]).toMatchObject({ pattern: '/^c/i' });

    const second = await admin.readRows(db, { schema: 'shop', name: 'big' }, { limit: 2, offset: 3 }, never);
    expect(second.rows.map((r) => r.i)).toEqual([3, 4]);
    expect(second.total).toBe(2_500);
    const past = await admin.readRows(db, { schema: 'shop', name: 'users' }, { limit: 5, offset: 10 }, never);
    expect(past).toEqual({ columns: [{ name: '_id', type: 'objectId', primary: true }], rows: [], total: 3 });
    // The API's bound of a page (ROWS_PAGE_LIMIT), the same in every adapter.
    for (const limit of [0, 501])
      expect(await rejection(admin.readRows(db, { schema: 'shop', name: 'users' }, { limit, offset: 0 }, never))).toBeInstanceOf(
        ValidationError,
      );
    const only = await admin.readRows(db, { schema: 'shop', name: 'orders' }, { limit: 5, offset: 0 }, never);
    expect(only.columns).toEqual([
      { name: '_id', type: 'string', primary: true },
      { name: 'total', type: 'int', primary: false },
    ]);
  });

  it('an unknown database or collection is NotFoundError("table")', async () => {
    for (const table of [
      { schema: 'shop', name: 'nope' },
      { schema: 'nowhere', name: 'users' },
      { schema: 'bad/name', name: 'users' },
    ]) {
      const error = await rejection(admin.readRows(db, table, { limit: 5, offset: 0 }, never));
      expect(error).toBeInstanceOf(NotFoundError);
      expect((error as NotFoundError).details).toEqual({ resource: 'table', id: `${table.schema}.${table.name}` });
    }
    expect(await rejection(admin.readRows(db, { schema: 'shop', name: 'users' }, { limit: -1, offset: 0 }, never))).toBeInstanceOf(
      ValidationError,
    );
  });
});

describe('the query console', () => {
  it('runs a JSON command document against $db, with Extended JSON values', async () => {
    const found = await admin.query(
      db,
      '{"find": "users", "filter": {"age": {"$gt": 30}}, "sort": {"age": -1}, "$db": "shop"}',
      limits,
      never,
    );
    expect(found.rows.map((r) => r.name)).toEqual(['cy', 'ada']);
    expect(found).toMatchObject({ rowCount: 2, truncated: false });
    expect(found.columns.slice(0, 3)).toEqual([
      { name: '_id', type: 'objectId' },
      { name: 'name', type: 'string' },
      { name: 'age', type: 'int' },
    ]);
    const byId = await admin.query(
      db,
      `{"find": "users", "filter": {"_id": {"$oid": "${ids.bob.toHexString()}"}}, "$db": "shop"}`,
      limits,
      never,
    );
    expect(byId.rows.map((r) => r.name)).toEqual(['bob']);
    const byDate = await admin.query(
      db,
      '{"find": "users", "filter": {"joined": {"$gte": {"$date": "2024-01-01T00:00:00Z"}}}, "$db": "shop"}',
      limits,
      never,
    );
    expect(byDate.rowCount).toBe(1);
    const aggregate = await admin.query(
      db,
      '{"aggregate": "users", "pipeline": [{"$match": {"age": {"$lt": 40}}}, {"$count": "n"}], "$db": "shop"}',
      limits,
      never,
    );
    expect(aggregate).toEqual({ columns: [{ name: 'n', type: 'int' }], rows: [{ n: 2 }], rowCount: 1, truncated: false });
  });

  it('returns a reply that is not a cursor as one row, and uses the first non-system database without $db', async () => {
    const count = await admin.query(db, '{"count": "users", "$db": "shop"}', limits, never);
    expect(count).toEqual({
      columns: [
        { name: 'n', type: 'int' },
        { name: 'ok', type: 'double' },
      ],
      rows: [{ n: 3, ok: 1 }],
      rowCount: 1,
      truncated: false,
    });
    // `analytics` comes first by name: its `events` collection is found without $db, `users` is not.
    expect((await admin.query(db, '{"count": "events"}', limits, never)).rows).toEqual([{ n: 0, ok: 1 }]);
    expect((await admin.query(db, '{"listCollections": 1, "nameOnly": true}', limits, never)).rows).toEqual([
      { name: 'events', type: 'collection' },
    ]);
  });

  it('stops at the row cap: truncated, and the cursor is killed', async () => {
    expect(await openCursors()).toBe(0);
    const capped = await admin.query(db, '{"find": "big", "sort": {"i": 1}, "$db": "shop"}', { timeoutMs: 5_000, rowCap: 2_000 }, never);
    expect(capped.rowCount).toBe(2_000);
    expect(capped.rows).toHaveLength(2_000);
    expect(capped.rows[1_999]).toMatchObject({ i: 1_999 });
    expect(capped.truncated).toBe(true);
    expect(await openCursors()).toBe(0);

    const small = await admin.query(db, '{"find": "big", "batchSize": 7, "$db": "shop"}', { timeoutMs: 5_000, rowCap: 20 }, never);
    expect(small).toMatchObject({ rowCount: 20, truncated: true });
    expect(await openCursors()).toBe(0);

    const all = await admin.query(
      db,
      '{"aggregate": "big", "pipeline": [{"$match": {}}], "$db": "shop"}',
      { timeoutMs: 5_000, rowCap: 2_500 },
      never,
    );
    expect(all).toMatchObject({ rowCount: 2_500, truncated: false });
    expect(await openCursors()).toBe(0);
  });

  it('refuses text that is not one JSON command document with ValidationError("sql")', async () => {
    for (const text of [
      '{"find": "users"',
      'db.users.find({})',
      '[{"find": "users"}]',
      '42',
      '{}',
      '{"$db": "shop"}',
      '{"find": "users", "$db": 5}',
      '{"a": {"$oid": "zz"}}',
    ]) {
      const error = await rejection(admin.query(db, text, limits, never));
      expect(error, text).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).details.field).toBe('sql');
    }
  });

  it("passes the server's refusals on as QueryError with its message and code", async () => {
    const unknown = await rejection(admin.query(db, '{"frobnicate": 1}', limits, never));
    expect(unknown).toBeInstanceOf(QueryError);
    expect(unknown.message).toBe("no such command: 'frobnicate'");
    expect((unknown as QueryError).details).toMatchObject({ code: 59, codeName: 'CommandNotFound' });
    const operator = await rejection(admin.query(db, '{"find": "users", "filter": {"age": {"$bogus": 1}}, "$db": "shop"}', limits, never));
    expect(operator).toBeInstanceOf(QueryError);
    expect(operator.message).toBe('unknown operator: $bogus');
  });

  it('applies maxTimeMS, and honours the signal', async () => {
    const started = Date.now();
    const slow = await rejection(admin.query(db, '{"sleep": 1, "millis": 5000, "$db": "admin"}', { timeoutMs: 200, rowCap: 10 }, never));
    expect(slow).toBeInstanceOf(QueryError);
    expect(slow.message).toBe('operation exceeded time limit');
    expect(Date.now() - started).toBeLessThan(2_000);

    const controller = new AbortController();
    const reason = new Error('client went away');
    setTimeout(() => controller.abort(reason), 150);
    const abortedAt = Date.now();
    expect(await rejection(admin.query(db, '{"sleep": 1, "millis": 5000, "$db": "admin"}', limits, controller.signal))).toBe(reason);
    expect(Date.now() - abortedAt).toBeLessThan(1_500);
    expect(await rejection(admin.listTables(db, {}, AbortSignal.abort(reason)))).toBe(reason);
    expect(await admin.checkReady(db, never)).toMatch(/^hello answered/); // the pool survived the abort
  });
});

describe('writing', () => {
  const users = { schema: 'shop', name: 'users' };

  it('inserts a document: a 24-hex _id is an ObjectId, a missing one is generated, Extended JSON gives types', async () => {
    const given = await admin.insertRow(
      db,
      users,
      { _id: '65f1a2b3c4d5e6f708091aff', name: 'dee', joined: { $date: '2025-01-02T03:04:05Z' }, n: { $numberLong: '5' } },
      never,
    );
    expect(given).toEqual({ id: '65f1a2b3c4d5e6f708091aff' });
    const stored = await seed
      .db('shop')
      .collection('users')
      .findOne({ _id: new ObjectId('65f1a2b3c4d5e6f708091aff') }, { promoteLongs: false });
    expect(stored?.joined).toEqual(new Date('2025-01-02T03:04:05Z'));
    expect(stored?.n).toBeInstanceOf(Long);

    const generated = await admin.insertRow(db, users, { name: 'eve' }, never);
    expect(generated.id).toMatch(/^[0-9a-f]{24}$/);
    const named = await admin.insertRow(db, { schema: 'shop', name: 'orders' }, { _id: 'o-3', total: 30 }, never);
    expect(named).toEqual({ id: 'o-3' });

    const duplicate = await rejection(admin.insertRow(db, users, { _id: ids.ada.toHexString(), name: 'again' }, never));
    expect(duplicate).toBeInstanceOf(QueryError);
    expect(duplicate.message).toMatch(/^E11000 duplicate key error collection: shop\.users index: _id_ dup key/);

    const missing = await rejection(admin.insertRow(db, { schema: 'shop', name: 'ghosts' }, { a: 1 }, never));
    expect(missing).toBeInstanceOf(NotFoundError);
    expect(await seed.db('shop').listCollections({ name: 'ghosts' }).toArray()).toEqual([]);
  });

  it('updates fields with $set, keeping each field its BSON type when given in its string form', async () => {
    await admin.updateRow(
      db,
      users,
      { _id: ids.bob.toHexString() },
      {
        name: 'robert',
        joined: '2030-01-01T00:00:00.000Z',
        visits: '9007199254740995',
        balance: '1.5',
        avatar: '\\x0a0b',
        score: 8,
        'address.city': 'Lyon',
        added: 'new',
      },
      never,
    );
    const bob = await seed.db('shop').collection('users').findOne({ _id: ids.bob }, { promoteValues: false, promoteLongs: false });
    expect(bob?.name).toBe('robert');
    expect(bob?.joined).toEqual(new Date('2030-01-01T00:00:00.000Z'));
    expect(bob?.visits).toBeInstanceOf(Long);
    expect(String(bob?.visits)).toBe('9007199254740995');
    expect(bob?.balance).toBeInstanceOf(Decimal128);
    expect(String(bob?.balance)).toBe('1.5');
    expect(Buffer.from((bob?.avatar as Binary).buffer).toString('hex')).toBe('0a0b');
    expect(bob?.score).toBeInstanceOf(Double);
    expect(bob?.address).toEqual({ city: 'Lyon', zip: '75001' });
    expect(bob?.added).toBe('new');

    await admin.updateRow(db, { schema: 'shop', name: 'orders' }, { _id: 'o-1' }, { total: 11 }, never);
    expect(
      await seed
        .db('shop')
        .collection('orders')
        .findOne({ _id: 'o-1' as never }),
    ).toEqual({ _id: 'o-1', total: 11 });
    await admin.updateRow(db, users, { _id: ids.ada.toHexString() }, { _id: ids.ada.toHexString() }, never); // nothing to change
  });

  it('refuses a key other than {_id}, and a key or table that matches nothing', async () => {
    const wrongKey = await rejection(admin.updateRow(db, users, { _id: ids.ada.toHexString(), name: 'ada' }, { age: 1 }, never));
    expect(wrongKey).toBeInstanceOf(ValidationError);
    expect((wrongKey as ValidationError).details.field).toBe('primaryKey');
    expect(await rejection(admin.deleteRow(db, users, { id: 1 }, never))).toBeInstanceOf(ValidationError);

    const noRow = await rejection(admin.updateRow(db, users, { _id: '65f1a2b3c4d5e6f7080900ee' }, { age: 1 }, never));
    expect(noRow).toBeInstanceOf(NotFoundError);
    expect((noRow as NotFoundError).details).toEqual({ resource: 'row', id: '65f1a2b3c4d5e6f7080900ee' });
    const noTable = await rejection(admin.updateRow(db, { schema: 'shop', name: 'ghosts' }, { _id: 'x' }, { a: 1 }, never));
    expect((noTable as NotFoundError).details).toEqual({ resource: 'table', id: 'shop.ghosts' });
    const immutable = await rejection(admin.updateRow(db, users, { _id: ids.ada.toHexString() }, { _id: 'other' }, never));
    expect(immutable).toBeInstanceOf(QueryError);
  });

  it('deletes a document by _id', async () => {
    const { id } = await admin.insertRow(db, users, { name: 'temp' }, never);
    await admin.deleteRow(db, users, { _id: id }, never);
    expect(await seed.db('shop').collection('users').countDocuments({ name: 'temp' })).toBe(0);
    const again = await rejection(admin.deleteRow(db, users, { _id: id }, never));
    expect((again as NotFoundError).details).toEqual({ resource: 'row', id });
    await admin.deleteRow(db, { schema: 'shop', name: 'orders' }, { _id: 'o-2' }, never);
    const noTable = await rejection(admin.deleteRow(db, { schema: 'shop', name: 'ghosts' }, { _id: 'x' }, never));
    expect((noTable as NotFoundError).details).toEqual({ resource: 'table', id: 'shop.ghosts' });
  });
});

describe('connections', () => {
  it('refused credentials are QueryError, and no message carries the password', async () => {
    const secret = 'wr0ng/p@ss%word';
    const error = await rejection(
      admin.checkReady(endpoint(server.port, { MONGO_INITDB_ROOT_USERNAME: USER, MONGO_INITDB_ROOT_PASSWORD: secret }, 'svc-wrong'), never),
    );
    expect(error).toBeInstanceOf(QueryError);
    expect(error.message).toContain('Authentication failed.');
    expect(error.message).toContain(`user ${USER}`);
    const seen = JSON.stringify({ message: error.message, details: (error as QueryError).details, stack: error.stack });
    expect(seen).not.toContain(secret);
    expect(seen).not.toContain(encodeURIComponent(secret));

    const anonymous = await rejection(admin.listTables(endpoint(server.port, {}, 'svc-anon'), {}, never));
    expect(anonymous).toBeInstanceOf(QueryError);
    expect(anonymous.message).toMatch(/no MONGO_INITDB_ROOT_USERNAME: Command listDatabases requires authentication/);
  });

  it('a port nothing listens on is NotRunningError', async () => {
    const quick = newAdmin({ connectTimeoutMs: 500 });
    const port = await freePort();
    const error = await rejection(quick.checkReady(endpoint(port, undefined, 'svc-gone'), never));
    expect(error).toBeInstanceOf(NotRunningError);
    expect(error.message).toMatch(new RegExp(`^MongoDB at 127\\.0\\.0\\.1:${port} does not accept connections \\(.*ECONNREFUSED`));
    expect(error.message).not.toContain(PASSWORD);
  });

  it('a server stopped in the middle of a request is NotRunningError, for that request and the next', async () => {
    const doomed = await startServer({ port: 0, rootUser: USER, rootPassword: PASSWORD, testCommands: true });
    const quick = newAdmin({ connectTimeoutMs: 500 });
    const target = endpoint(doomed.port, undefined, 'svc-doomed');
    expect(await quick.checkReady(target, never)).toMatch(/^hello answered/);
    const inFlight = rejection(quick.query(target, '{"sleep": 1, "millis": 5000, "$db": "admin"}', limits, never));
    await new Promise((resolve) => setTimeout(resolve, 200));
    await doomed.close();
    const error = await inFlight;
    expect(error).toBeInstanceOf(NotRunningError);
    expect(error.message).toMatch(/^MongoDB at 127\.0\.0\.1:\d+ does not accept connections/);
    expect(await rejection(quick.listTables(target, {}, never))).toBeInstanceOf(NotRunningError);
  });

  it('one pooled client serves many calls, a new password opens a new one, and an idle client is closed', async () => {
    const pooled = newAdmin({ idleMs: 400 });
    const before = await connections();
    for (let i = 0; i < 15; i++) await pooled.listTables(db, {}, never);
    await Promise.all(
      Array.from({ length: 10 }, () => pooled.readRows(db, { schema: 'shop', name: 'users' }, { limit: 2, offset: 0 }, never)),
    );
    expect(pooled.openClients).toBe(1);
    const during = await connections();
    expect(during.current).toBeGreaterThan(before.current);
    // A monitor and a few pooled connections, not one per call.
    expect(during.totalCreated - before.totalCreated).toBeLessThanOrEqual(6);

    // Closed once idle for 400 ms, and its connections with it (polled: the machine may be busy).
    await new Promise((resolve) => setTimeout(resolve, 400));
    const deadline = Date.now() + 10_000;
    while ((pooled.openClients > 0 || (await connections()).current !== before.current) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(pooled.openClients).toBe(0);
    expect((await connections()).current).toBe(before.current);

    await pooled.checkReady(db, never);
    await pooled.checkReady({ ...db, serviceId: 'svc-other' }, never);
    expect(pooled.openClients).toBe(2);
    await pooled.release('svc-other');
    expect(pooled.openClients).toBe(1);
    const wrong = await rejection(pooled.checkReady({ ...db, env: { ...db.env, MONGO_INITDB_ROOT_PASSWORD: 'changed' } }, never));
    expect(wrong).toBeInstanceOf(QueryError); // the changed key closed the old client and tried a new one
    expect(pooled.openClients).toBe(0);
    await pooled.closeAll();
  });
});
