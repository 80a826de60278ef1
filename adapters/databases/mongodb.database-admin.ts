import { createHash } from 'node:crypto';
import { isIP } from 'node:net';
import {
  BSON,
  Binary,
  type ClientSession,
  Decimal128,
  type Document,
  Double,
  Int32,
  Long,
  MongoClient,
  MongoError,
  MongoNetworkError,
  MongoServerError,
  MongoServerSelectionError,
  MongoTopologyClosedError,
  ObjectId,
} from 'mongodb';
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
import { DomainError, NotFoundError, NotRunningError, QueryError, ValidationError } from '../../src/domain/errors.js';
import { toCell, toRow } from './cell-values.js';
import { PooledClients } from './pooled-clients.js';
import { checkPage } from './rows-page.js';
import { abortable } from './abortable.js';

/**
 * MongoDB through the DatabaseAdmin port, with the official `mongodb` driver.
 *
 * Tables are the collections of every database but `admin`, `local` and `config`: `{id: "<db>.<collection>",
 * schema: db, name: collection}` (views, time-series and `system.*` collections are left out). Collections must
 * exist: insertRow does not create one implicitly (MongoDB would), an unknown one is `NotFoundError('table')`.
 *
 * Rows are documents sorted by `_id`. Columns are the top-level fields of the page, `_id` first (the primary
 * key), each typed by the BSON type alias of the first non-null value seen: `objectId`, `string`, `int`,
 * `double`, `long`, `decimal`, `bool`, `date`, `object`, `array`, `binData`, `timestamp`, `regex`, `null`...
 * Values take the port's forms (ObjectId as 24 hex digits, dates ISO 8601, Long beyond 2^53 and Decimal128 as
 * their digits, binary `\x`+hex); a regex becomes `/pattern/flags`, a Timestamp `{t, i}`.
 *
 * Values written (insertRow, updateRow) are read as relaxed Extended JSON, so `{"$date": ...}`,
 * `{"$numberLong": "..."}`, `{"$oid": ...}` or `{"$numberDecimal": ...}` give those types; an `_id` of 24 hex
 * digits is an ObjectId. updateRow keeps a field's type when the new value is that type's string form
 * (a date field given an ISO string stays a date, a Long stays a Long, and so on).
 *
 * The query console runs one JSON command document (`{"find": "users", "filter": {...}}`) with `maxTimeMS`,
 * against `"$db"` or the first non-system database (else `test`). Cursor replies are read up to the row cap;
 * the cursor is then killed.
 *
 * Connections: one MongoClient per service (pooled, closed when idle), root credentials from the service's
 * MONGO_INITDB_ROOT_USERNAME / MONGO_INITDB_ROOT_PASSWORD with authSource=admin. A server that cannot be reached
 * is `NotRunningError`; refused credentials are `QueryError`. No message carries the password.
 */
export interface MongoDatabaseAdminOptions {
  /** A service's client is closed after this long unused (default 60 s). */
  idleMs?: number;
  /** Connecting and selecting the server give up after this long (default 5 s): NotRunningError. */
  connectTimeoutMs?: number;
  /** Connections per service's client (default 4). */
  maxPoolSize?: number;
}

const SYSTEM_DATABASES = new Set(['admin', 'local', 'config']);
const DEFAULT_DATABASE = 'test';
/** A database name MongoDB accepts (no `/\. "$*<>:|?`, under 64 bytes). */
const DB_NAME = /^[^/\\. "$*<>:|?\0]{1,63}$/;
/** How long after `timeoutMs` the client gives up on a command the server did not stop itself. */
const CLIENT_GRACE_MS = 2_000;
const OBJECT_ID = /^[0-9a-fA-F]{24}$/;
const EJSON_OPTIONS = { relaxed: true, useBigInt64: true } as const;

interface Target {
  host: string;
  port: number;
  user: string | null;
  password: string | null;
}

export class MongoDatabaseAdmin implements DatabaseAdmin {
  private readonly pool: PooledClients<MongoClient>;
  /** The connection settings behind each pool key, held while a request may need to open a client. */
  private readonly targets = new Map<string, { target: Target; users: number }>();
  private readonly connectTimeoutMs: number;
  private readonly maxPoolSize: number;

  constructor(options: MongoDatabaseAdminOptions = {}) {
    this.connectTimeoutMs = options.connectTimeoutMs ?? 5_000;
    this.maxPoolSize = options.maxPoolSize ?? 4;
    this.pool = new PooledClients<MongoClient>(
      (key) => this.open(key),
      (client) => client.close(),
      options.idleMs ?? 60_000,
    );
  }

  /** Services with an open client (tests: one client serves many calls, and it is closed when idle). */
  get openClients(): number {
    return this.pool.size;
  }

  async checkReady(db: DatabaseEndpoint, signal: AbortSignal): Promise<string> {
    return this.run(db, signal, async (client) => {
      const admin = client.db('admin');
      await admin.command({ hello: 1 }, { signal });
      const info = await admin.command({ buildInfo: 1 }, { signal });
      return `hello answered (MongoDB ${String(info.version)})`;
    });
  }

  async listTables(db: DatabaseEndpoint, _options: { logicalDatabase?: number }, signal: AbortSignal): Promise<TableEntry[]> {
    return this.run(db, signal, async (client) => {
      const names = (await userDatabases(client, signal)).sort();
      const perDatabase = await Promise.all(
        names.map(async (schema) => {
          const collections = await client.db(schema).listCollections({}, { nameOnly: true, signal }).toArray();
          const tables = collections.filter((c) => c.type === 'collection' && !c.name.startsWith('system.'));
          return Promise.all(
            tables.map(async ({ name }) => {
              // What estimatedDocumentCount sends (the collection's metadata count), with the signal.
              const reply = await client.db(schema).command({ count: name }, { signal });
              return { id: `${schema}.${name}`, name, schema, rowCount: Number(reply.n) };
            }),
          );
        }),
      );
      return perDatabase.flat().sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    });
  }

  async readRows(db: DatabaseEndpoint, table: TableRef, page: { limit: number; offset: number }, signal: AbortSignal): Promise<RowsPage> {
    const { limit, offset } = checkPage(page);
    return this.run(db, signal, async (client) => {
      await requireCollection(client, table, signal);
      const collection = client.db(table.schema).collection(table.name);
      const cursor = collection.find({}, { sort: { _id: 1 }, skip: offset, limit, signal, ...EXACT_TYPES });
      let docs: Document[];
      try {
        docs = await cursor.toArray();
      } finally {
        await cursor.close().catch(() => undefined);
      }
      const total = await collection.countDocuments({}, { signal });
      const columns: ColumnInfo[] = columnsOf(docs).map((c) => ({ ...c, primary: c.name === '_id' }));
      if (columns.length === 0) columns.push({ name: '_id', type: 'objectId', primary: true }); // every document has one
      return { columns, rows: docs.map(rowOf), total };
    });
  }

  async query(db: DatabaseEndpoint, text: string, limits: QueryLimits, signal: AbortSignal): Promise<QueryResult> {
    const { timeoutMs, rowCap } = limits;
    if (!Number.isInteger(rowCap) || rowCap < 0) throw new ValidationError('rowCap', 'rowCap is a whole number from 0.');
    if (!(timeoutMs > 0)) throw new ValidationError('timeoutMs', 'timeoutMs is a positive number of milliseconds.');
    const { command, dbName } = parseCommand(text);
    return this.run(db, signal, async (client) => {
      const database = client.db(dbName ?? (await defaultDatabase(client, signal)));
      const name = Object.keys(command)[0]!;
      if (name !== 'getMore')
        command.maxTimeMS = Math.max(1, Math.ceil(Math.min(timeoutMs, positiveNumber(command.maxTimeMS) ?? Infinity)));
      limitFirstBatch(command, name, rowCap);
      // The server stops the command after maxTimeMS; this stops waiting for one that does not.
      const clientTimeout = AbortSignal.timeout(timeoutMs + CLIENT_GRACE_MS);
      const commandSignal = AbortSignal.any([signal, clientTimeout]);
      const session = client.startSession();
      let open: { id: Long; dbName: string; collection: string } | null = null;
      try {
        const reply = await database.command(command, { session, signal: commandSignal, ...EXACT_TYPES });
        const cursor = cursorOf(reply);
        if (!cursor) {
          const row = rowOf(reply);
          return { columns: columnsOf([reply]), rows: [row], rowCount: 1, truncated: false };
        }
        const docs: Document[] = [...cursor.firstBatch];
        const [cursorDb, ...rest] = cursor.ns.split('.');
        const target = { dbName: cursorDb || database.databaseName, collection: rest.join('.') };
        let id = cursor.id;
        if (!isZero(id)) open = { id, ...target };
        while (docs.length <= rowCap && open) {
          const more = await client
            .db(open.dbName)
            .command(
              { getMore: open.id, collection: open.collection, batchSize: rowCap + 1 - docs.length },
              { session, signal: commandSignal, ...EXACT_TYPES },
            );
          const next = cursorOf(more, 'nextBatch');
          if (!next) throw new QueryError('The server answered getMore without a cursor.');
          docs.push(...next.firstBatch);
          id = next.id;
          if (isZero(id)) open = null;
        }
        const truncated = docs.length > rowCap;
        const kept = docs.slice(0, rowCap);
        return { columns: columnsOf(kept), rows: kept.map(rowOf), rowCount: kept.length, truncated };
      } catch (error) {
        if (clientTimeout.aborted && !signal.aborted) throw new QueryError(`The command did not finish within ${timeoutMs} ms.`);
        throw error;
      } finally {
        // A cursor not read to its end (row cap, abort, error) is killed now, not left for the server's timeout.
        if (open) await killCursor(client, open, session);
        await session.endSession().catch(() => undefined);
      }
    });
  }

  async insertRow(db: DatabaseEndpoint, table: TableRef, values: Row, signal: AbortSignal): Promise<{ id: CellValue }> {
    const doc = documentOf(values);
    if (typeof doc._id === 'string' && OBJECT_ID.test(doc._id)) doc._id = new ObjectId(doc._id);
    const withId: Document = '_id' in doc ? { _id: doc._id, ...doc } : { _id: new ObjectId(), ...doc };
    return this.run(db, signal, async (client) => {
      // Collections must exist: MongoDB would create one on insert, the table browser does not.
      await requireCollection(client, table, signal);
      const reply = await client.db(table.schema).command({ insert: table.name, documents: [withId] }, { signal });
      throwWriteErrors(reply);
      return { id: toCell(plain(withId._id)) };
    });
  }

  async updateRow(db: DatabaseEndpoint, table: TableRef, primaryKey: Row, values: Row, signal: AbortSignal): Promise<void> {
    const candidates = keyCandidates(primaryKey);
    const changes = documentOf(values);
    return this.run(db, signal, async (client) => {
      const existing = await findByKey(client, table, candidates, signal);
      if (!existing) throw new NotFoundError('row', keyText(primaryKey));
      const set: Document = {};
      for (const [field, value] of Object.entries(changes)) {
        if (field === '_id' && toCellEqual(value, existing._id)) continue; // the key itself, unchanged
        set[field] = keepType(existing[field], value);
      }
      if (Object.keys(set).length === 0) return;
      const reply = await client
        .db(table.schema)
        .command(
          { update: table.name, updates: [{ q: { _id: existing._id }, u: { $set: set }, multi: false, upsert: false }] },
          { signal },
        );
      throwWriteErrors(reply);
      if (Number(reply.n) === 0) throw new NotFoundError('row', keyText(primaryKey)); // deleted meanwhile
    });
  }

  async deleteRow(db: DatabaseEndpoint, table: TableRef, primaryKey: Row, signal: AbortSignal): Promise<void> {
    const candidates = keyCandidates(primaryKey);
    return this.run(db, signal, async (client) => {
      if (!DB_NAME.test(table.schema)) throw new NotFoundError('table', `${table.schema}.${table.name}`);
      for (const _id of candidates) {
        const reply = await client.db(table.schema).command({ delete: table.name, deletes: [{ q: { _id }, limit: 1 }] }, { signal });
        throwWriteErrors(reply);
        if (Number(reply.n) > 0) return;
      }
      await requireCollection(client, table, signal);
      throw new NotFoundError('row', keyText(primaryKey));
    });
  }

  async release(serviceId: string): Promise<void> {
    await this.pool.release(serviceId);
  }

  async closeAll(): Promise<void> {
    await this.pool.closeAll();
  }

  // ---- connections

  private async run<T>(db: DatabaseEndpoint, signal: AbortSignal, work: (client: MongoClient) => Promise<T>): Promise<T> {
    signal.throwIfAborted();
    const target: Target = {
      host: db.host,
      port: db.port,
      user: db.env.MONGO_INITDB_ROOT_USERNAME || null,
      password: db.env.MONGO_INITDB_ROOT_PASSWORD || null,
    };
    const key = poolKey(target);
    const held = this.targets.get(key) ?? { target, users: 0 };
    held.users++;
    this.targets.set(key, held);
    const inner = this.pool.use(db.serviceId, key, work);
    // The settings stay until the pool is done with this request, even when the caller has given up on it.
    void inner
      .catch(() => undefined)
      .finally(() => {
        if (--held.users === 0 && this.targets.get(key) === held) this.targets.delete(key);
      });
    try {
      return await abortable(signal, inner);
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      throw domainError(error, target);
    }
  }

  private async open(key: string): Promise<MongoClient> {
    const target = this.targets.get(key)?.target;
    if (!target) throw new Error('no connection settings for this pool key');
    const client = new MongoClient(connectionUrl(target), {
      serverSelectionTimeoutMS: this.connectTimeoutMs,
      connectTimeoutMS: this.connectTimeoutMs,
      maxPoolSize: this.maxPoolSize,
      minPoolSize: 0,
      directConnection: true,
      // One monitoring connection per service, polling (the streaming protocol holds two).
      serverMonitoringMode: 'poll',
      appName: 'slipway',
    });
    try {
      await client.connect();
    } catch (error) {
      await client.close().catch(() => undefined);
      throw error;
    }
    return client;
  }
}

// ---------------------------------------------------------------------------------------------------
// Connection details

/** Host, port and a digest of the credentials: a changed password opens a new client, and no key holds it. */
function poolKey(target: Target): string {
  const digest = createHash('sha256')
    .update(`${target.user ?? ''}\0${target.password ?? ''}`)
    .digest('hex')
    .slice(0, 32);
  return `${target.host}:${target.port}:${digest}`;
}

function connectionUrl(target: Target): string {
  const host = isIP(target.host) === 6 ? `[${target.host}]` : target.host;
  if (!target.user) return `mongodb://${host}:${target.port}/`;
  const auth = `${encodeURIComponent(target.user)}:${encodeURIComponent(target.password ?? '')}`;
  return `mongodb://${auth}@${host}:${target.port}/?authSource=admin`;
}

/** Driver errors as the port's: unreachable is NotRunningError, a refusal QueryError; never the password. */
function domainError(error: unknown, target: Target): unknown {
  if (error instanceof DomainError) return error;
  const hide = (text: string) => redact(text, [target.password, target.password ? encodeURIComponent(target.password) : null]);
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof MongoServerError) {
    // Replies read with promoteValues: false carry the code as an Int32.
    const details = { code: error.code === undefined ? undefined : Number(error.code), codeName: error.codeName };
    if (error.code === 18) {
      return new QueryError(
        hide(
          `MongoDB refused the credentials in MONGO_INITDB_ROOT_USERNAME / MONGO_INITDB_ROOT_PASSWORD (user ${target.user ?? ''}, authSource admin): ${message}`,
        ),
        details,
      );
    }
    if (error.code === 13 && !target.user) {
      return new QueryError(`MongoDB asks for authentication and the service has no MONGO_INITDB_ROOT_USERNAME: ${message}`, details);
    }
    return new QueryError(hide(message), details);
  }
  if (error instanceof MongoServerSelectionError || error instanceof MongoNetworkError || error instanceof MongoTopologyClosedError) {
    const reason = hide(message);
    return new NotRunningError(`MongoDB at ${target.host}:${target.port} does not accept connections (${reason})`, { reason });
  }
  if (error instanceof MongoError || (error instanceof Error && error.name.startsWith('BSON'))) {
    // The driver refused the command before sending it (a document too large, an invalid namespace...).
    return new QueryError(hide(message));
  }
  return error;
}

function redact(message: string, secrets: Array<string | null | undefined>): string {
  let out = message;
  for (const secret of secrets) if (secret && secret.length >= 3) out = out.split(secret).join('***');
  return out;
}

// ---------------------------------------------------------------------------------------------------
// Catalog

/** Documents as stored: Int32, Double and Long stay typed, so columns name their BSON types. */
const EXACT_TYPES = { promoteValues: false, promoteLongs: false, bsonRegExp: true } as const;

async function userDatabases(client: MongoClient, signal: AbortSignal): Promise<string[]> {
  const reply = await client.db('admin').command({ listDatabases: 1, nameOnly: true }, { signal });
  const databases = Array.isArray(reply.databases) ? (reply.databases as Array<{ name?: unknown }>) : [];
  return databases.map((d) => String(d.name)).filter((name) => !SYSTEM_DATABASES.has(name));
}

async function defaultDatabase(client: MongoClient, signal: AbortSignal): Promise<string> {
  return (await userDatabases(client, signal)).sort()[0] ?? DEFAULT_DATABASE;
}

/** The collection exists in the catalog (listCollections), else `NotFoundError('table', '<db>.<collection>')`. */
async function requireCollection(client: MongoClient, table: TableRef, signal: AbortSignal): Promise<void> {
  const id = `${table.schema}.${table.name}`;
  if (!DB_NAME.test(table.schema) || table.name === '') throw new NotFoundError('table', id);
  const found = await client.db(table.schema).listCollections({ name: table.name }, { nameOnly: true, signal }).toArray();
  if (!found.some((c) => c.name === table.name && c.type === 'collection')) throw new NotFoundError('table', id);
}

// ---------------------------------------------------------------------------------------------------
// Documents, columns and values

/** The BSON type alias of a value as the driver returns it (`$type` names). */
export function bsonTypeName(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  switch (typeof value) {
    case 'string':
      return 'string';
    case 'boolean':
      return 'bool';
    case 'number':
      return Number.isInteger(value) && Math.abs(value) <= 2_147_483_647 ? 'int' : 'double';
    case 'bigint':
      return 'long';
    default:
      break;
  }
  if (Array.isArray(value)) return 'array';
  if (value instanceof Date) return 'date';
  if (value instanceof RegExp) return 'regex';
  if (value instanceof Uint8Array) return 'binData';
  const type = (value as { _bsontype?: unknown })._bsontype;
  const names: Record<string, string> = {
    ObjectId: 'objectId',
    Int32: 'int',
    Double: 'double',
    Long: 'long',
    Decimal128: 'decimal',
    Binary: 'binData',
    Timestamp: 'timestamp',
    BSONRegExp: 'regex',
    BSONSymbol: 'symbol',
    Code: 'javascript',
    MinKey: 'minKey',
    MaxKey: 'maxKey',
    DBRef: 'dbPointer',
  };
  return typeof type === 'string' ? (names[type] ?? 'object') : 'object';
}

/** Top-level fields of the documents, `_id` first, typed by the first non-null value of each. */
function columnsOf(docs: Document[]): Array<{ name: string; type: string }> {
  const types = new Map<string, string>();
  for (const doc of docs) {
    for (const [name, value] of Object.entries(doc)) {
      const known = types.get(name);
      if (known === undefined || (known === 'null' && value !== null && value !== undefined)) types.set(name, bsonTypeName(value));
    }
  }
  const columns = [...types].map(([name, type]) => ({ name, type }));
  const id = columns.findIndex((c) => c.name === '_id');
  if (id > 0) columns.unshift(...columns.splice(id, 1));
  return columns;
}

function rowOf(doc: Document): Row {
  return toRow(plain(doc) as Record<string, unknown>);
}

/** BSON values toCell has no form for, as readable ones; the rest is left to toCell. */
function plain(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(plain);
  if (value === null || typeof value !== 'object' || value instanceof Date || value instanceof Uint8Array) return value;
  const type = (value as { _bsontype?: unknown })._bsontype;
  if (typeof type === 'string') {
    const v = value as Record<string, unknown>;
    switch (type) {
      case 'BSONRegExp':
        return `/${String(v.pattern)}/${String(v.options)}`;
      case 'Timestamp':
        return { t: Number(v.t), i: Number(v.i) };
      case 'MinKey':
        return 'MinKey';
      case 'MaxKey':
        return 'MaxKey';
      case 'Code':
        return v.scope ? { code: String(v.code), scope: plain(v.scope) } : String(v.code);
      case 'DBRef': {
        const ref: Record<string, unknown> = { $ref: v.collection, $id: plain(v.oid) };
        if (v.db) ref.$db = v.db;
        return { ...ref, ...(plain(v.fields) as object) };
      }
      case 'BSONSymbol':
        return String(v.value);
      default:
        return value;
    }
  }
  if (value instanceof RegExp) return `/${value.source}/${value.flags}`;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = plain(v);
  return out;
}

/** A row's values read as relaxed Extended JSON (`{"$date": ...}`, `{"$numberLong": "..."}` are typed values). */
function documentOf(values: Row, field = 'values'): Document {
  try {
    return BSON.EJSON.deserialize(values as Document, EJSON_OPTIONS) as Document;
  } catch (error) {
    throw new ValidationError(field, `A value is not valid Extended JSON: ${(error as Error).message}`);
  }
}

function keyCandidates(primaryKey: Row): unknown[] {
  const keys = Object.keys(primaryKey);
  if (keys.length !== 1 || keys[0] !== '_id') {
    throw new ValidationError('primaryKey', 'A MongoDB document is named by its _id alone: {"_id": ...}.');
  }
  const { _id } = documentOf(primaryKey, 'primaryKey');
  if (_id === null || _id === undefined) throw new ValidationError('primaryKey', 'The _id is missing.');
  // 24 hex digits are the ObjectId's form, but a string _id may look the same: the ObjectId is tried first.
  if (typeof _id === 'string' && OBJECT_ID.test(_id)) return [new ObjectId(_id), _id];
  return [_id];
}

function keyText(primaryKey: Row): string {
  const id = primaryKey._id;
  return typeof id === 'string' ? id : JSON.stringify(id);
}

/** The document with one of these `_id`s (in order), or null when the collection exists but has none. */
async function findByKey(client: MongoClient, table: TableRef, candidates: unknown[], signal: AbortSignal): Promise<Document | null> {
  if (!DB_NAME.test(table.schema)) throw new NotFoundError('table', `${table.schema}.${table.name}`);
  const collection = client.db(table.schema).collection(table.name);
  for (const _id of candidates) {
    const doc = await collection.findOne({ _id: _id as never }, { signal, ...EXACT_TYPES });
    if (doc) return doc;
  }
  await requireCollection(client, table, signal);
  return null;
}

function toCellEqual(a: unknown, b: unknown): boolean {
  return JSON.stringify(toCell(plain(a))) === JSON.stringify(toCell(plain(b)));
}

/**
 * A new value for a field keeps the field's BSON type when it comes in that type's string (or number) form,
 * so a document read and written back through the API keeps its dates, ObjectIds, Longs, decimals and binary.
 */
function keepType(existing: unknown, value: unknown): unknown {
  if (existing === null || existing === undefined || value === null || value === undefined) return value;
  const type = bsonTypeName(existing);
  try {
    if (typeof value === 'string') {
      switch (type) {
        case 'objectId':
          return OBJECT_ID.test(value) ? new ObjectId(value) : value;
        case 'date': {
          const date = /^\d{4}-\d{2}-\d{2}/.test(value) ? new Date(value) : null;
          return date && !Number.isNaN(date.getTime()) ? date : value;
        }
        case 'long':
          return /^-?\d+$/.test(value) ? Long.fromString(value) : value;
        case 'decimal':
          return /^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^-?(Infinity|NaN)$/.test(value) ? Decimal128.fromString(value) : value;
        case 'binData':
          return /^\\x(?:[0-9a-fA-F]{2})*$/.test(value)
            ? new Binary(Buffer.from(value.slice(2), 'hex'), (existing as { sub_type?: number }).sub_type ?? 0)
            : value;
        default:
          return value;
      }
    }
    if (typeof value === 'number') {
      switch (type) {
        case 'double':
          return new Double(value);
        case 'long':
          return Number.isSafeInteger(value) ? Long.fromNumber(value) : value;
        case 'decimal':
          return Decimal128.fromString(String(value));
        case 'int':
          return Number.isInteger(value) && Math.abs(value) <= 2_147_483_647 ? new Int32(value) : value;
        default:
          return value;
      }
    }
    if (Array.isArray(value) && Array.isArray(existing)) return value.map((v, i) => keepType(existing[i], v));
    if (bsonTypeName(value) === 'object' && type === 'object') {
      const old = existing as Record<string, unknown>;
      return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, keepType(old[k], v)]));
    }
  } catch {
    // a value that does not convert (a decimal out of range...) is written as given
  }
  return value;
}

function throwWriteErrors(reply: Document): void {
  const errors = reply.writeErrors as Array<{ code?: number; errmsg?: string }> | undefined;
  if (errors?.length) {
    const [first] = errors;
    throw new QueryError(first?.errmsg ?? 'MongoDB refused the write.', { code: Number(first?.code) });
  }
  const concern = reply.writeConcernError as { code?: number; errmsg?: string } | undefined;
  if (concern) throw new QueryError(concern.errmsg ?? 'MongoDB could not satisfy the write concern.', { code: Number(concern.code) });
}

// ---------------------------------------------------------------------------------------------------
// The query console

/** One JSON command document, read as relaxed Extended JSON; `"$db"` names its database. */
function parseCommand(text: string): { command: Document; dbName: string | null } {
  let parsed: unknown;
  try {
    parsed = BSON.EJSON.parse(text, EJSON_OPTIONS);
  } catch (error) {
    throw new ValidationError(
      'sql',
      `A MongoDB query is one JSON command document, such as {"find": "users", "filter": {"age": {"$gt": 3}}}: ${(error as Error).message}`,
    );
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed) || bsonTypeName(parsed) !== 'object') {
    throw new ValidationError('sql', 'A MongoDB query is one JSON command document (an object), such as {"find": "users", "filter": {}}.');
  }
  const { $db, ...command } = parsed as Document;
  if ($db !== undefined && (typeof $db !== 'string' || !DB_NAME.test($db)))
    throw new ValidationError('sql', '"$db" names a database: a string such as "shop".');
  if (Object.keys(command).length === 0)
    throw new ValidationError('sql', 'The command document is empty: its first field names the command, e.g. {"find": "users"}.');
  return { command, dbName: ($db as string | undefined) ?? null };
}

function positiveNumber(value: unknown): number | null {
  const n = typeof value === 'number' ? value : typeof value === 'bigint' ? Number(value) : NaN;
  return n > 0 ? n : null;
}

/** Asks for no more than the row cap (plus one, to know if there is more) in the first batch. */
function limitFirstBatch(command: Document, name: string, rowCap: number): void {
  const cap = rowCap + 1;
  if (name === 'find') {
    const current = positiveNumber(command.batchSize);
    if (command.batchSize === undefined || (current !== null && current > cap)) command.batchSize = cap;
  } else if (name === 'aggregate' && !command.explain) {
    const cursor = command.cursor && typeof command.cursor === 'object' ? (command.cursor as Document) : {};
    const current = positiveNumber(cursor.batchSize);
    command.cursor = {
      ...cursor,
      batchSize: cursor.batchSize === undefined || (current !== null && current > cap) ? cap : cursor.batchSize,
    };
  }
}

function cursorOf(
  reply: Document,
  batch: 'firstBatch' | 'nextBatch' = 'firstBatch',
): { id: Long; ns: string; firstBatch: Document[] } | null {
  const cursor = reply.cursor as Document | undefined;
  if (!cursor || typeof cursor !== 'object' || !Array.isArray(cursor[batch])) return null;
  const id = cursor.id;
  const long = id instanceof Long ? id : typeof id === 'bigint' ? Long.fromBigInt(id) : Long.fromNumber(Number(id ?? 0));
  return { id: long, ns: String(cursor.ns ?? ''), firstBatch: cursor[batch] as Document[] };
}

function isZero(id: Long): boolean {
  return id.isZero();
}

/** Kills a cursor left open; bounded, and never failing the call it cleans up after. */
async function killCursor(
  client: MongoClient,
  open: { id: Long; dbName: string; collection: string },
  session: ClientSession,
): Promise<void> {
  await client
    .db(open.dbName)
    .command({ killCursors: open.collection, cursors: [open.id] }, { session, signal: AbortSignal.timeout(CLIENT_GRACE_MS) })
    .catch(() => undefined);
}
