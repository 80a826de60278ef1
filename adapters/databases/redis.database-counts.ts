import type { EngineCounts } from '../../src/index.js';
import type { ContainerExec } from './container-exec.js';
import { RedisCli } from './redis.database-dump.js';

/**
 * Redis: `INFO keyspace` through redis-cli, keys per logical database (`db0`...). Keys with a TTL may
 * expire between the backup and its drill: their number is the floor's slack (keys - expires).
 */
export async function countRedis(exec: ContainerExec, env: Record<string, string>): Promise<EngineCounts> {
  const keyspace = await new RedisCli(exec, env).info('keyspace');
  const counts: Record<string, number> = {};
  const floors: Record<string, number> = {};
  for (const [db, value] of Object.entries(keyspace)) {
    if (!/^db\d+$/.test(db)) continue;
    const fields = Object.fromEntries(value.split(',').map((pair) => pair.split('=') as [string, string]));
    const keys = Number(fields.keys ?? 0);
    counts[db] = keys;
    floors[db] = keys - Number(fields.expires ?? 0);
  }
  return { unit: 'keys', counts, floors };
}
