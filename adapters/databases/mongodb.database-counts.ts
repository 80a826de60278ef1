import type { EngineCounts } from '../../src/index.js';

const CONNECT_TIMEOUT_MS = 10_000;
const SYSTEM_DATABASES = new Set(['admin', 'config', 'local']);

/**
 * MongoDB: the server's own `countDocuments` of every collection of every database but admin, config
 * and local (the databases mongodump copies), over the wire as the root user: the image has no shell
 * the platform can count with in both the official image and the stand-in (docs/backups.md).
 */
export async function countMongo(host: string | null, env: Record<string, string>, signal: AbortSignal): Promise<EngineCounts> {
  if (!host) throw new Error('the database has no address to count its documents at');
  const user = env.MONGO_INITDB_ROOT_USERNAME;
  // The driver (some 130 CommonJS modules, ~5 MB) loads on the first count: an idle platform does not hold it (issue 32).
  const { MongoClient } = await import('mongodb');
  const client = new MongoClient(`mongodb://${host}:27017/`, {
    ...(user ? { auth: { username: user, password: env.MONGO_INITDB_ROOT_PASSWORD ?? '' }, authSource: 'admin' } : {}),
    directConnection: true,
    serverSelectionTimeoutMS: CONNECT_TIMEOUT_MS,
    connectTimeoutMS: CONNECT_TIMEOUT_MS,
  });
  const close = () => void client.close(true).catch(() => undefined);
  signal.addEventListener('abort', close, { once: true });
  try {
    await client.connect();
    const counts: Record<string, number> = {};
    const { databases } = await client.db('admin').admin().listDatabases({ nameOnly: true });
    for (const { name } of databases) {
      if (SYSTEM_DATABASES.has(name)) continue;
      const collections = await client.db(name).listCollections({}, { nameOnly: true }).toArray();
      for (const collection of collections) {
        if (collection.type !== 'collection' || collection.name.startsWith('system.')) continue;
        counts[`${name}.${collection.name}`] = await client.db(name).collection(collection.name).countDocuments({});
      }
    }
    return { unit: 'documents', counts };
  } finally {
    signal.removeEventListener('abort', close);
    await client.close(true).catch(() => undefined);
  }
}
