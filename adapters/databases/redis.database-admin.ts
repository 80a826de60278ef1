import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type {
  CellValue,
  ColumnInfo,
  DatabaseAdmin,
  DatabaseEndpoint,
  QueryLimits,
  QueryResult,
  Row,
  RowsPage,
  TableEntry,
  TableRef,
} from '../../src/databases/database-admin.port.js';
import { NotFoundError, ValidationError } from '../../src/domain/errors.js';
import { abortable } from './abortable.js';
import { PooledClients } from './pooled-clients.js';
import { checkPage } from './rows-page.js';
import { checkCommand, splitCommandLine } from './redis-command-line.js';
import { type Address, RedisService, domainError, isReplyError, pipelined, transaction } from './redis-connection.js';
import { bytesCell, fieldsCell, numberCell, queryResult, scoredPairs } from './redis-replies.js';

/**
 * Redis through the DatabaseAdmin port (see docs/decisions.md, "Redis admin").
 *
 * Tables are the keys of one logical database: `{id: "db<N>.<key>", schema: "db<N>", name: key}`. A key name
 * that is not UTF-8 is shown in the `\x`+hex form, and such a name given back is read as those bytes when no
 * key is literally called that (the same holds for hash fields and set/sorted-set members in primary keys).
 *
 * Rows by the key's type, with these column types (the vocabulary of this adapter):
 *   hash   {field: string (primary), value: string}
 *   list   {index: integer (primary), value: string}
 *   set    {member: string (primary)}
 *   zset   {member: string (primary), score: double}
 *   string {value: string}                              no primary key: PATCH and DELETE are refused
 *   stream {id: stream-id (primary), fields: hash}      entries are immutable: PATCH is refused
 * `string` is a Redis string (UTF-8 text, else `\x`+hex), `integer` a whole number, `double` a score (a number,
 * or Redis's `inf` / `-inf`), `stream-id` `<ms>-<seq>`, `hash` an object of field -> string. Query results add
 * `boolean`, `array`, `map`, `error`, `nil` (no value) and `mixed` (values of several of these kinds).
 *
 * One RedisService per service holds its connections (redis-connection.ts); replies become the API's values
 * in redis-replies.ts; a console line is split and checked in redis-command-line.ts.
 */
export interface RedisDatabaseAdminOptions {
  /**
   * listTables stops SCANning after this many keys (default 1,000): a browser page of keys, not an export.
   * Which keys a capped list holds is SCAN's order, i.e. arbitrary; the list is sorted by name.
   */
  maxKeys?: number;
  /** Connecting (TCP, AUTH, HELLO) gives up after this long (default 3 s): NotRunningError. */
  connectTimeoutMs?: number;
  /** A service's connections are closed after this long unused (default 60 s). */
  idleMs?: number;
  /** Query-console connections per service (default 4); a further query waits for one. */
  maxQueryConnections?: number;
}

type Kind = 'hash' | 'list' | 'set' | 'zset' | 'string' | 'stream';

const COLUMNS: Record<Kind, ColumnInfo[]> = {
  hash: [
    { name: 'field', type: 'string', primary: true },
    { name: 'value', type: 'string', primary: false },
  ],
  list: [
    { name: 'index', type: 'integer', primary: true },
    { name: 'value', type: 'string', primary: false },
  ],
  set: [{ name: 'member', type: 'string', primary: true }],
  zset: [
    { name: 'member', type: 'string', primary: true },
    { name: 'score', type: 'double', primary: false },
  ],
  string: [{ name: 'value', type: 'string', primary: false }],
  stream: [
    { name: 'id', type: 'stream-id', primary: true },
    { name: 'fields', type: 'hash', primary: false },
  ],
};

/** What insertRow takes per type (stream `id` is optional: `*` by default). */
const INSERT_COLUMNS: Record<Exclude<Kind, 'string'>, { required: string[]; optional: string[] }> = {
  hash: { required: ['field', 'value'], optional: [] },
  list: { required: ['value'], optional: [] },
  set: { required: ['member'], optional: [] },
  zset: { required: ['member', 'score'], optional: [] },
  stream: { required: ['fields'], optional: ['id'] },
};

const LENGTH_COMMAND: Record<string, string> = { hash: 'hlen', list: 'llen', set: 'scard', zset: 'zcard', stream: 'xlen' };

/** Updates that check and write in one step (a script runs atomically). Results: 1 done, 0 no such row, -1 the new name exists. */
const HASH_UPDATE = `
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return 0 end
local value = ARGV[4]
if ARGV[3] == '0' then value = redis.call('HGET', KEYS[1], ARGV[1]) end
if ARGV[2] ~= ARGV[1] then
  if redis.call('HEXISTS', KEYS[1], ARGV[2]) == 1 then return -1 end
  redis.call('HSET', KEYS[1], ARGV[2], value)
  redis.call('HDEL', KEYS[1], ARGV[1])
else
  redis.call('HSET', KEYS[1], ARGV[1], value)
end
return 1`;
const ZSET_UPDATE = `
local old = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not old then return 0 end
local score = ARGV[4]
if ARGV[3] == '0' then score = old end
if ARGV[2] ~= ARGV[1] then
  if redis.call('ZSCORE', KEYS[1], ARGV[2]) then return -1 end
  redis.call('ZADD', KEYS[1], score, ARGV[2])
  redis.call('ZREM', KEYS[1], ARGV[1])
else
  redis.call('ZADD', KEYS[1], 'XX', score, ARGV[1])
end
return 1`;
const SET_UPDATE = `
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 0 then return 0 end
if ARGV[2] == ARGV[1] then return 1 end
if redis.call('SISMEMBER', KEYS[1], ARGV[2]) == 1 then return -1 end
redis.call('SADD', KEYS[1], ARGV[2])
redis.call('SREM', KEYS[1], ARGV[1])
return 1`;

export class RedisDatabaseAdmin implements DatabaseAdmin {
  private readonly pool: PooledClients<RedisService>;
  private readonly maxKeys: number;

  constructor(private readonly options: RedisDatabaseAdminOptions = {}) {
    this.maxKeys = options.maxKeys ?? 1000;
    const settings = {
      connectTimeoutMs: options.connectTimeoutMs ?? 3000,
      maxQueryConnections: options.maxQueryConnections ?? 4,
    };
    this.pool = new PooledClients<RedisService>(
      async (key) => new RedisService(JSON.parse(key) as Address, settings),
      (service) => service.close(),
      options.idleMs ?? 60_000,
    );
  }

  /** Services with open connections (tests: the pool is reused and closed when idle). */
  get openServices(): number {
    return this.pool.size;
  }

  async checkReady(db: DatabaseEndpoint, signal: AbortSignal): Promise<string> {
    return this.run(db, signal, async (service) => {
      const client = await service.connection(0);
      const pong = await client.call('ping');
      const info = String(await client.call('info', 'server'));
      const version = /^redis_version:(\S+)/m.exec(info)?.[1] ?? 'unknown version';
      return `PING answered ${String(pong)} (Redis ${version})`;
    });
  }

  async listTables(db: DatabaseEndpoint, options: { logicalDatabase?: number }, signal: AbortSignal): Promise<TableEntry[]> {
    const n = options.logicalDatabase ?? 0;
    if (!Number.isInteger(n) || n < 0) throw new ValidationError('logicalDatabase', 'The logical database is a number from 0.');
    return this.run(db, signal, async (service) => {
      const databases = await service.databases();
      if (n >= databases) throw new ValidationError('logicalDatabase', `This Redis has logical databases 0 to ${databases - 1}.`);
      const client = await service.connection(n);
      const keys = new Map<string, Buffer>();
      let cursor = '0';
      do {
        signal.throwIfAborted();
        const [next, batch] = (await client.callBuffer('scan', cursor, 'COUNT', Math.min(1000, this.maxKeys))) as [Buffer, Buffer[]];
        cursor = next.toString();
        for (const key of batch) if (keys.size < this.maxKeys) keys.set(key.toString('hex'), key);
      } while (cursor !== '0' && keys.size < this.maxKeys);
      const list = [...keys.values()];
      const types = list.length
        ? await pipelined(
            client,
            list.map((key) => ['type', key]),
          )
        : [];
      const kinds = types.map((t) => String(t));
      const lengths = list.length
        ? await pipelined(
            client,
            list.map((key, i) => (LENGTH_COMMAND[kinds[i]!] ? [LENGTH_COMMAND[kinds[i]!]!, key] : ['exists', key])),
          )
        : [];
      const schema = `db${n}`;
      return list
        .map((key, i) => ({ key, kind: kinds[i]!, length: Number(lengths[i] ?? 0) }))
        .filter((k) => k.kind !== 'none') // expired or deleted since SCAN
        .sort((a, b) => Buffer.compare(a.key, b.key))
        .map(({ key, length }) => {
          const name = bytesCell(key);
          return { id: `${schema}.${name}`, name, schema, rowCount: length };
        });
    });
  }

  async readRows(db: DatabaseEndpoint, table: TableRef, page: { limit: number; offset: number }, signal: AbortSignal): Promise<RowsPage> {
    const { limit, offset } = checkPage(page);
    return this.run(db, signal, async (service) => {
      const { client, key, kind } = await this.resolveTable(service, table);
      const columns = COLUMNS[kind];
      switch (kind) {
        case 'string': {
          const value = (await client.callBuffer('get', key)) as Buffer | null;
          const rows = value !== null && offset === 0 ? [{ value: bytesCell(value) }] : [];
          return { columns, rows, total: value === null ? 0 : 1 };
        }
        case 'list': {
          const [total, values] = await transaction(client, [
            ['llen', key],
            ['lrange', key, offset, offset + limit - 1],
          ]);
          const rows = (values as Buffer[]).map((value, i) => ({ index: offset + i, value: bytesCell(value) }));
          return { columns, rows, total: Number(total) };
        }
        case 'zset': {
          const [total, pairs] = await transaction(client, [
            ['zcard', key],
            ['zrange', key, offset, offset + limit - 1, 'WITHSCORES'],
          ]);
          const rows = scoredPairs(pairs).map(([member, score]) => ({ member: bytesCell(member), score: numberCell(String(score)) }));
          return { columns, rows, total: Number(total) };
        }
        case 'set': {
          // SORT ... ALPHA LIMIT pages in a stable order on the server (byte order in the C locale), so no
          // page needs the whole set here; SSCAN has no offsets and its order moves with the set.
          const [total, members] = await transaction(client, [
            ['scard', key],
            ['sort', key, 'LIMIT', offset, limit, 'ALPHA'],
          ]);
          const rows = (members as Buffer[]).map((member) => ({ member: bytesCell(member) }));
          return { columns, rows, total: Number(total) };
        }
        case 'hash': {
          // Hashes have no server-side paging: fields are sorted here (byte order) and the page's values read.
          const fields = ((await client.callBuffer('hkeys', key)) as Buffer[]).sort(Buffer.compare);
          const pageFields = fields.slice(offset, offset + limit);
          const values = pageFields.length ? ((await client.callBuffer('hmget', key, ...pageFields)) as Array<Buffer | null>) : [];
          const rows = pageFields.flatMap((field, i) =>
            values[i] == null ? [] : [{ field: bytesCell(field), value: bytesCell(values[i]!) }],
          );
          return { columns, rows, total: fields.length };
        }
        case 'stream': {
          // XRANGE has no offset: the first offset+limit entries are read and the offset dropped.
          const [total, entries] = await transaction(client, [
            ['xlen', key],
            ['xrange', key, '-', '+', 'COUNT', offset + limit],
          ]);
          const rows = (entries as Array<[Buffer, Buffer[]]>)
            .slice(offset)
            .map(([id, flat]) => ({ id: id.toString(), fields: fieldsCell(flat) }));
          return { columns, rows, total: Number(total) };
        }
      }
    });
  }

  async query(db: DatabaseEndpoint, text: string, limits: QueryLimits, signal: AbortSignal): Promise<QueryResult> {
    const args = splitCommandLine(text);
    const command = checkCommand(args);
    if (!(limits.timeoutMs > 0)) throw new ValidationError('timeoutMs', 'The timeout is a positive number of milliseconds.');
    if (!Number.isInteger(limits.rowCap) || limits.rowCap < 0) throw new ValidationError('rowCap', 'The row cap is a whole number from 0.');
    return this.run(db, signal, async (service) => {
      const reply = await service.query(command, args, limits.timeoutMs, signal);
      return queryResult(reply, limits.rowCap);
    });
  }

  async insertRow(db: DatabaseEndpoint, table: TableRef, values: Row, signal: AbortSignal): Promise<{ id: CellValue }> {
    return this.run(db, signal, async (service) => {
      const { client, key, kind } = await this.resolveTable(service, table);
      if (kind === 'string')
        throw new ValidationError('table', 'A string key holds one value and takes no rows: change it with a query (SET key value).');
      checkColumns('values', values, INSERT_COLUMNS[kind].required, INSERT_COLUMNS[kind].optional, kind);
      switch (kind) {
        case 'hash': {
          const field = arg(values, 'field');
          if (Number(await client.call('hsetnx', key, field, arg(values, 'value'))) === 0) {
            throw new ValidationError(
              'values',
              `The hash already has the field ${JSON.stringify(String(values.field))}: change it with PATCH.`,
            );
          }
          return { id: String(values.field) };
        }
        case 'list': {
          const length = Number(await client.call('rpush', key, arg(values, 'value')));
          return { id: length - 1 };
        }
        case 'set': {
          if (Number(await client.call('sadd', key, arg(values, 'member'))) === 0) {
            throw new ValidationError('values', `The set already has the member ${JSON.stringify(String(values.member))}.`);
          }
          return { id: String(values.member) };
        }
        case 'zset': {
          if (Number(await client.call('zadd', key, 'NX', scoreArg(values.score), arg(values, 'member'))) === 0) {
            throw new ValidationError(
              'values',
              `The sorted set already has the member ${JSON.stringify(String(values.member))}: change its score with PATCH.`,
            );
          }
          return { id: String(values.member) };
        }
        case 'stream': {
          const fields = values.fields;
          if (fields === null || typeof fields !== 'object' || Array.isArray(fields) || Object.keys(fields).length === 0) {
            throw new ValidationError('values', 'fields is an object of at least one field name -> value.');
          }
          const flat = Object.entries(fields).flatMap(([name, value]) => [name, scalar(value, `fields.${name}`)]);
          const id = values.id === undefined || values.id === null ? '*' : scalar(values.id, 'id');
          const added = (await client.callBuffer('xadd', key, id, ...flat)) as Buffer;
          return { id: added.toString() };
        }
      }
    });
  }

  async updateRow(db: DatabaseEndpoint, table: TableRef, primaryKey: Row, values: Row, signal: AbortSignal): Promise<void> {
    return this.run(db, signal, async (service) => {
      const { client, key, kind } = await this.resolveTable(service, table);
      refuseWithoutKey(kind, 'changed');
      if (kind === 'stream') throw new ValidationError('table', 'Stream entries cannot be changed: add a new entry, or delete this one.');
      switch (kind) {
        case 'hash': {
          checkColumns('primaryKey', primaryKey, ['field'], [], kind);
          checkColumns('values', values, [], ['field', 'value'], kind);
          const field = await resolveMember(client, key, 'hexists', String(primaryKey.field));
          const renamed = values.field === undefined ? field : arg(values, 'field');
          const result = await client.call(
            'eval',
            HASH_UPDATE,
            1,
            key,
            field,
            renamed,
            values.value === undefined ? '0' : '1',
            values.value === undefined ? '' : arg(values, 'value'),
          );
          return updateOutcome(result, String(primaryKey.field), `The hash already has the field ${JSON.stringify(String(values.field))}.`);
        }
        case 'zset': {
          checkColumns('primaryKey', primaryKey, ['member'], [], kind);
          checkColumns('values', values, [], ['member', 'score'], kind);
          const member = await resolveMember(client, key, 'zscore', String(primaryKey.member));
          const renamed = values.member === undefined ? member : arg(values, 'member');
          const result = await client.call(
            'eval',
            ZSET_UPDATE,
            1,
            key,
            member,
            renamed,
            values.score === undefined ? '0' : '1',
            values.score === undefined ? '' : scoreArg(values.score),
          );
          return updateOutcome(
            result,
            String(primaryKey.member),
            `The sorted set already has the member ${JSON.stringify(String(values.member))}.`,
          );
        }
        case 'set': {
          checkColumns('primaryKey', primaryKey, ['member'], [], kind);
          checkColumns('values', values, ['member'], [], kind);
          const member = await resolveMember(client, key, 'sismember', String(primaryKey.member));
          const result = await client.call('eval', SET_UPDATE, 1, key, member, arg(values, 'member'));
          return updateOutcome(
            result,
            String(primaryKey.member),
            `The set already has the member ${JSON.stringify(String(values.member))}.`,
          );
        }
        case 'list': {
          checkColumns('primaryKey', primaryKey, ['index'], [], kind);
          checkColumns('values', values, ['value'], ['index'], kind);
          const index = listIndex(primaryKey.index);
          if (values.index !== undefined && listIndex(values.index) !== index) {
            throw new ValidationError('values', 'A list element keeps its index: delete it and add a new one at the end instead.');
          }
          try {
            await client.call('lset', key, index, arg(values, 'value'));
          } catch (error) {
            if (isReplyError(error) && /index out of range|no such key/i.test(error.message)) throw new NotFoundError('row', String(index));
            throw error;
          }
          return;
        }
      }
    });
  }

  async deleteRow(db: DatabaseEndpoint, table: TableRef, primaryKey: Row, signal: AbortSignal): Promise<void> {
    return this.run(db, signal, async (service) => {
      const { client, key, kind } = await this.resolveTable(service, table);
      refuseWithoutKey(kind, 'deleted');
      const [column] = COLUMNS[kind].filter((c) => c.primary).map((c) => c.name);
      checkColumns('primaryKey', primaryKey, [column!], [], kind);
      const shown = String(primaryKey[column!]);
      let removed: number;
      switch (kind) {
        case 'hash':
          removed = Number(await client.call('hdel', key, await resolveMember(client, key, 'hexists', shown)));
          break;
        case 'set':
          removed = Number(await client.call('srem', key, await resolveMember(client, key, 'sismember', shown)));
          break;
        case 'zset':
          removed = Number(await client.call('zrem', key, await resolveMember(client, key, 'zscore', shown)));
          break;
        case 'stream':
          try {
            removed = Number(await client.call('xdel', key, scalar(primaryKey.id, 'primaryKey.id')));
          } catch (error) {
            if (isReplyError(error) && /Invalid stream ID/i.test(error.message)) throw new NotFoundError('row', shown);
            throw error;
          }
          break;
        case 'list': {
          // Lists have no delete-by-index: the element becomes a unique tombstone, which LREM then removes,
          // in one transaction (indexes after it move down by one).
          const tombstone = `slipway-deleted-${randomUUID()}`;
          const index = listIndex(primaryKey.index);
          const results = (await client.multi().call('lset', key, index, tombstone).call('lrem', key, 1, tombstone).exec()) ?? [];
          const setError = results[0]?.[0];
          if (setError) {
            if (/index out of range|no such key/i.test(setError.message)) throw new NotFoundError('row', String(index));
            throw setError;
          }
          removed = Number(results[1]?.[1] ?? 0);
          break;
        }
      }
      if (removed === 0) throw new NotFoundError('row', shown);
    });
  }

  async release(serviceId: string): Promise<void> {
    await this.pool.release(serviceId);
  }

  async closeAll(): Promise<void> {
    await this.pool.closeAll();
  }

  /** The service's pooled client, with the signal honoured and every failure as a domain error. */
  private async run<T>(db: DatabaseEndpoint, signal: AbortSignal, work: (service: RedisService) => Promise<T>): Promise<T> {
    signal.throwIfAborted();
    const address: Address = { host: db.host, port: db.port, password: db.env.REDIS_PASSWORD || null };
    try {
      return await abortable(signal, this.pool.use(db.serviceId, JSON.stringify(address), work));
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      throw domainError(error, address);
    }
  }

  /** `db<N>` and a key that exists: the connection of that logical database, the key's bytes and its type. */
  private async resolveTable(service: RedisService, table: TableRef): Promise<{ client: Redis; key: Buffer; kind: Kind }> {
    const id = `${table.schema}.${table.name}`;
    const n = /^db(0|[1-9][0-9]{0,5})$/.exec(table.schema)?.[1];
    if (n === undefined || Number(n) >= (await service.databases())) throw new NotFoundError('table', id);
    const client = await service.connection(Number(n));
    for (const key of candidates(table.name)) {
      const type = String(await client.call('type', key));
      if (type === 'none') continue;
      if (!(type in COLUMNS)) {
        throw new ValidationError('table', `The key is of type ${type}, which the table browser does not show: use a query.`);
      }
      return { client, key, kind: type as Kind };
    }
    throw new NotFoundError('table', id);
  }
}

// ---- rows: names and values given -------------------------------------------------------------

/** A key (or member) name as given, then, when no such one exists and it is of the `\x`+hex form, its bytes. */
function candidates(name: string): Buffer[] {
  const literal = Buffer.from(name, 'utf8');
  const hex = /^\\x((?:[0-9a-f]{2})+)$/i.exec(name)?.[1];
  return hex ? [literal, Buffer.from(hex, 'hex')] : [literal];
}

async function resolveMember(client: Redis, key: Buffer, exists: 'hexists' | 'sismember' | 'zscore', name: string): Promise<Buffer> {
  const [literal, bytes] = candidates(name);
  if (!bytes) return literal!;
  const found = await client.call(exists, key, literal!);
  const literalExists = exists === 'zscore' ? found !== null : Number(found) === 1;
  return literalExists ? literal! : bytes;
}

/** Row values are written as their UTF-8 text (numbers as their JSON form); binary is written with a query's `\xHH`. */
function scalar(value: CellValue | undefined, column: string): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  throw new ValidationError('values', `${column} must be a string or a number.`);
}

function arg(values: Row, column: string): string {
  return scalar(values[column], column);
}

/** A score: a number, or its text (`1.5`, `inf`, `-inf`), checked here so Redis never parses a bad one in a script. */
function scoreArg(value: CellValue | undefined): string {
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'string' && (/^[+-]?inf$/i.test(value.trim()) || (value.trim() !== '' && Number.isFinite(Number(value)))))
    return value.trim();
  throw new ValidationError('values', 'score must be a number (or "inf" / "-inf").');
}

function listIndex(value: CellValue | undefined): number {
  const index = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
  if (typeof index !== 'number' || !Number.isSafeInteger(index) || index < 0)
    throw new ValidationError('primaryKey', 'index must be a whole number from 0.');
  return index;
}

function checkColumns(field: 'values' | 'primaryKey', row: Row, required: string[], optional: string[], kind: Kind): void {
  const known = [...required, ...optional];
  const unknown = Object.keys(row).filter((k) => !known.includes(k));
  if (unknown.length) {
    throw new ValidationError(
      field,
      `Unknown column ${JSON.stringify(unknown[0])}: a ${kind} row ${field === 'primaryKey' ? 'is keyed by' : 'takes'} ${known.join(', ')}.`,
    );
  }
  const missing = required.filter((k) => row[k] === undefined);
  if (missing.length)
    throw new ValidationError(field, `${missing.join(' and ')} ${missing.length > 1 ? 'are' : 'is'} needed for a ${kind} row.`);
  if (field === 'values' && required.length === 0 && Object.keys(row).length === 0) {
    throw new ValidationError(field, `Nothing to change: a ${kind} row takes ${known.join(', ')}.`);
  }
}

function refuseWithoutKey(kind: Kind, what: 'changed' | 'deleted'): asserts kind is Exclude<Kind, 'string'> {
  if (kind === 'string') {
    throw new ValidationError('table', `A string key has no primary key, so its row cannot be ${what} here: use a query (SET or DEL).`);
  }
}

function updateOutcome(result: unknown, shown: string, exists: string): void {
  const code = Number(result);
  if (code === 0) throw new NotFoundError('row', shown);
  if (code === -1) throw new ValidationError('values', exists);
}
