import { Redis, type RedisOptions } from 'ioredis';
import { ImportFailure, type ImportTarget, type ImportWork } from '../../src/imports/data-importer.port.js';
import { abortable } from './abortable.js';

/** Keys asked for per SCAN, and copied per round trip (one DUMP + PTTL pipeline, one RESTORE pipeline). */
const BATCH = 1_000;

/**
 * Redis imports from the platform: it connects to the source and to the service, and for every
 * logical database the source has keys in, SCANs it and copies each key with DUMP / RESTORE REPLACE
 * and its remaining TTL (PTTL), a batch per round trip. The source is only read.
 */
export class RedisUrlImporter {
  async importRedis(source: URL, target: ImportTarget, work: ImportWork): Promise<void> {
    const tls = source.protocol === 'rediss:';
    const decode = (value: string) => {
      try {
        return decodeURIComponent(value);
      } catch {
        return value;
      }
    };
    const base: RedisOptions = {
      connectTimeout: work.connectTimeoutMs,
      commandTimeout: Math.max(work.connectTimeoutMs, 30_000),
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      enableOfflineQueue: true,
      lazyConnect: true,
    };
    const sourceOptions: RedisOptions = {
      ...base,
      host: source.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: Number(source.port || 6379),
      ...(source.username ? { username: decode(source.username) } : {}),
      ...(source.password ? { password: decode(source.password) } : {}),
      ...(tls ? { tls: {} } : {}),
    };
    const targetOptions: RedisOptions = {
      ...base,
      host: target.host,
      port: target.port,
      ...(target.env.REDIS_PASSWORD ? { password: target.env.REDIS_PASSWORD } : {}),
    };
    const opened: Redis[] = [];
    const open = async (options: RedisOptions, db: number, what: string): Promise<Redis> => {
      const client = new Redis({ ...options, db });
      client.on('error', () => undefined);
      opened.push(client);
      // ioredis's connectTimeout covers the TCP handshake only: a server that accepts and never
      // answers (AUTH, the ready check) would hang until the command timeout.
      const timeout = AbortSignal.timeout(work.connectTimeoutMs);
      try {
        await abortable(AbortSignal.any([work.signal, timeout]), client.connect());
      } catch (error) {
        if (work.signal.aborted) throw work.signal.reason;
        const reason = timeout.aborted ? `no answer within ${Math.round(work.connectTimeoutMs / 100) / 10} s` : messageOf(error);
        throw new ImportFailure(`Could not connect to the ${what}: ${reason}`);
      }
      return client;
    };
    const close = () => {
      for (const client of opened) client.disconnect();
    };
    work.signal.addEventListener('abort', close, { once: true });
    try {
      const first = await open(sourceOptions, 0, 'source');
      const databases = keyspaceOf(await abortable(work.signal, first.info('keyspace')));
      // A URL naming one database (`/3`) imports that one only.
      const only = source.pathname.replace(/^\//, '');
      const wanted = only ? databases.filter((db) => String(db.index) === only) : databases;
      if (wanted.length === 0) work.log('The source has no keys');
      let total = 0;
      for (const { index, keys } of wanted) {
        work.log(`Copying database ${index} (about ${keys} keys)`);
        const from = await open(sourceOptions, index, 'source');
        const into = await open(targetOptions, index, 'service');
        total += await copyDatabase(from, into, work);
        from.disconnect();
        into.disconnect();
      }
      work.log(`Copied ${total} keys`);
    } catch (error) {
      if (work.signal.aborted) throw work.signal.reason;
      if (error instanceof ImportFailure) throw error;
      throw new ImportFailure(messageOf(error));
    } finally {
      work.signal.removeEventListener('abort', close);
      close();
    }
  }
}

async function copyDatabase(from: Redis, into: Redis, work: ImportWork): Promise<number> {
  let cursor = '0';
  let copied = 0;
  do {
    const [next, keys] = await abortable(work.signal, from.scanBuffer(cursor, 'COUNT', BATCH));
    cursor = String(next);
    if (keys.length === 0) continue;
    const read = from.pipeline();
    for (const key of keys) read.dumpBuffer(key).pttl(key);
    const answers = (await abortable(work.signal, read.exec())) ?? [];
    const write = into.pipeline();
    let writes = 0;
    for (let i = 0; i < keys.length; i++) {
      const [dumpError, dump] = answers[2 * i] ?? [];
      const [ttlError, ttl] = answers[2 * i + 1] ?? [];
      if (dumpError || ttlError) throw new ImportFailure(`Reading a key failed: ${messageOf(dumpError ?? ttlError)}`);
      // Gone (or expired) between the SCAN and the DUMP: nothing to copy.
      if (dump === null || ttl === -2) continue;
      write.restore(keys[i]!, Math.max(Number(ttl), 0), dump as Buffer, 'REPLACE');
      writes++;
    }
    if (writes === 0) continue;
    const results = (await abortable(work.signal, write.exec())) ?? [];
    const failed = results.find(([error]) => error);
    if (failed) throw new ImportFailure(`Writing a key failed: ${messageOf(failed[0])}`);
    copied += writes;
  } while (cursor !== '0');
  work.log(`Copied ${copied} keys of database ${from.options.db ?? 0}`);
  return copied;
}

/** `# Keyspace\r\ndb0:keys=3,expires=0,avg_ttl=0` -> the databases that hold keys. */
export function keyspaceOf(info: string): Array<{ index: number; keys: number }> {
  return [...info.matchAll(/^db(\d+):keys=(\d+)/gm)].map((m) => ({ index: Number(m[1]), keys: Number(m[2]) }));
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
