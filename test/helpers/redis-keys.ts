import type { Redis } from 'ioredis';

/** Every key of the logical databases `dbs` (`<db>/<key>`): its type and whole value, and its TTL in ms (-1: none). */
export async function redisKeys(redis: Redis, dbs: number[]): Promise<{ values: Record<string, unknown>; ttls: Record<string, number> }> {
  const values: Record<string, unknown> = {};
  const ttls: Record<string, number> = {};
  for (const db of dbs) {
    await redis.select(db);
    for (const key of (await redis.keys('*')).sort()) {
      const type = await redis.type(key);
      const value =
        type === 'string'
          ? (await redis.getBuffer(key))?.toString('base64')
          : type === 'hash'
            ? await redis.hgetall(key)
            : type === 'list'
              ? await redis.lrange(key, 0, -1)
              : type === 'set'
                ? (await redis.smembers(key)).sort()
                : await redis.zrange(key, '0', '-1', 'WITHSCORES');
      values[`${db}/${key}`] = { type, value };
      ttls[`${db}/${key}`] = await redis.pttl(key);
    }
  }
  await redis.select(0);
  return { values, ttls };
}
