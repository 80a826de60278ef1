import { Redis } from 'ioredis';
import { MongoClient } from 'mongodb';
import { describe, expect } from 'vitest';
import { backupRoundTrips, runningContainers, type Database, type EngineCase } from '../helpers/backup-round-trips.js';
import { canonicalDocuments, typedOrders } from '../helpers/mongo-documents.js';
import { redisKeys } from '../helpers/redis-keys.js';

/*
 * Backups end to end of a Redis service (the redis:7 stand-in: Redis 7.0 run with the platform's
 * `--appendonly yes` command; the restore swaps the RDB in and restarts the container) and a MongoDB
 * service (the mongo:7 stand-in: the wire-protocol server with the mongodump/mongorestore stand-ins),
 * deployed by the platform, each through every storage, compared key by key (TTLs kept) and document
 * by document through the engines' own drivers on the service's host port.
 */

interface RedisSnapshot {
  values: Record<string, unknown>;
  ttls: Record<string, number>;
}

async function withRedis<T>(db: Database, work: (redis: Redis) => Promise<T>): Promise<T> {
  const redis = new Redis({ host: '127.0.0.1', port: db.hostPort, password: db.env.REDIS_PASSWORD, maxRetriesPerRequest: 3 });
  redis.on('error', () => undefined);
  try {
    return await work(redis);
  } finally {
    redis.disconnect();
  }
}

const redis: EngineCase<RedisSnapshot> = {
  engine: 'redis',
  format: 'rdb',
  passwordKey: 'REDIS_PASSWORD',
  magic: (bytes) => {
    expect(bytes.subarray(0, 5).toString()).toBe('REDIS');
    expect(bytes[bytes.length - 9]).toBe(0xff);
  },
  write: (db, tag) =>
    withRedis(db, async (r) => {
      await r.flushall();
      const pipe = r.pipeline();
      for (let i = 0; i < 2000; i++) pipe.set(`str:${i}`, `value ${i} ${tag}`);
      await pipe.exec();
      await r.set('bin', Buffer.from([0, 1, 2, 255, 10, 13]));
      await r.set('ttl:short', 'expires', 'EX', 3600);
      await r.set('ttl:long', 'expires later', 'PX', 86_400_000);
      await r.hset('hash', { a: '1', b: tag });
      await r.rpush('list', 'x', 'y', tag);
      await r.sadd('set', 'm1', 'm2', tag);
      await r.zadd('zset', 1, 'one', 2.5, tag);
      await r.select(2);
      await r.set('in-db-2', tag, 'EX', 7200);
      await r.hset('hash-db-2', { k: 'v' });
    }),
  snapshot: (db) => withRedis(db, (r) => redisKeys(r, [0, 2])),
  same(after, before, elapsedSeconds) {
    expect(after.values).toEqual(before.values);
    expect(Object.keys(after.ttls)).toEqual(Object.keys(before.ttls));
    for (const [key, ttl] of Object.entries(before.ttls)) {
      if (ttl < 0) expect(after.ttls[key], key).toBe(ttl);
      else {
        // Kept, and gone down by no more than the time that passed.
        expect(after.ttls[key], key).toBeLessThanOrEqual(ttl);
        expect(after.ttls[key], key).toBeGreaterThan(ttl - elapsedSeconds * 1000);
      }
    }
  },
  mangle: (db) =>
    withRedis(db, async (r) => {
      await r.set('str:1', 'changed');
      await r.del('hash', 'list');
      await r.persist('ttl:short');
      await r.select(2);
      await r.flushdb();
      await r.select(0);
      await r.set('made:after', 'the backup');
    }),
  async afterRestore(db, { call, storage }) {
    // The same container, running its own command: nothing was redeployed, and the console answers.
    const [container] = await runningContainers(db.id);
    expect(container).toBeDefined();
    expect((await db.query('DBSIZE')).rows).toBeDefined();
    const overview = (await call('GET', `/api/services/${db.id}/overview`)).json;
    expect(overview.deployments).toHaveLength(1);
    expect(await withRedis(db, (r) => r.config('GET', 'appendonly'))).toEqual(['appendonly', 'yes']);
    if (storage === 'disk') {
      // A reconcile pass (every 10 s) after the restart leaves it alone and the host port working.
      await new Promise((r) => setTimeout(r, 12_000));
      expect(await runningContainers(db.id)).toEqual([container]);
      expect(await withRedis(db, (r) => r.get('str:7'))).toBe('value 7 disk');
      expect((await call('GET', `/api/services/${db.id}/overview`)).json.service.status).toBe('active');
    }
  },
};

async function withMongo<T>(db: Database, work: (client: MongoClient) => Promise<T>): Promise<T> {
  const user = encodeURIComponent(db.env.MONGO_INITDB_ROOT_USERNAME!);
  const password = encodeURIComponent(db.env.MONGO_INITDB_ROOT_PASSWORD!);
  const client = new MongoClient(`mongodb://${user}:${password}@127.0.0.1:${db.hostPort}/?authSource=admin`, {
    serverSelectionTimeoutMS: 10_000,
  });
  try {
    await client.connect();
    return await work(client);
  } finally {
    await client.close();
  }
}

const mongodb: EngineCase<unknown> = {
  engine: 'mongodb',
  format: 'archive',
  passwordKey: 'MONGO_INITDB_ROOT_PASSWORD',
  magic: (bytes) => expect(bytes.readUInt32LE(0)).toBe(0x8199e26d),
  write: (db, tag) =>
    withMongo(db, async (client) => {
      await client.db('shop').dropDatabase();
      await client.db('crm').dropDatabase();
      await client.db('shop').collection('orders').insertMany(typedOrders(1200, tag));
      await client.db('shop').createCollection('empty');
      await client
        .db('crm')
        .collection('people')
        .insertOne({ _id: 'ada' as never, name: 'Ada', tag });
    }),
  snapshot: (db) =>
    withMongo(db, async (client) => {
      const docs = (d: string, c: string) => canonicalDocuments(client, d, c);
      return {
        collections: (await client.db('shop').listCollections().toArray()).map((c) => c.name).sort(),
        orders: await docs('shop', 'orders'),
        people: await docs('crm', 'people'),
      };
    }),
  same(after, before) {
    const a = after as { collections: string[]; orders: string[]; people: string[] };
    const b = before as typeof a;
    expect(a.orders).toEqual(b.orders);
    expect(a.people).toEqual(b.people);
    // 'later' was made after the backup, and stays (checked in afterRestore).
    expect(a.collections.filter((c) => c !== 'later')).toEqual(b.collections.filter((c) => c !== 'later'));
  },
  mangle: (db) =>
    withMongo(db, async (client) => {
      await client
        .db('shop')
        .collection('orders')
        .deleteMany({ n: { $gt: 10 } });
      await client
        .db('shop')
        .collection('orders')
        .updateMany({}, { $set: { changed: true } });
      await client.db('shop').collection('empty').drop();
      await client
        .db('crm')
        .collection('people')
        .updateOne({ _id: 'ada' as never }, { $set: { name: 'changed' } });
      await client.db('shop').collection('later').insertOne({ made: 'after the backup' });
    }),
  async afterRestore(db) {
    // Collections made after the backup are kept: mongorestore --drop drops only what the archive holds.
    const later = await withMongo(db, (c) => c.db('shop').listCollections({ name: 'later' }).toArray());
    expect(later).toHaveLength(1);
    expect((await db.query('{"listCollections": 1}')).rows).toBeDefined();
  },
};

describe('backups of Redis and MongoDB services', () => {
  backupRoundTrips([redis as EngineCase<unknown>, mongodb]);
});
