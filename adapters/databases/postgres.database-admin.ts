import net from 'node:net';
import pg from 'pg';
import type {
  CellValue,
  DatabaseAdmin,
  DatabaseEndpoint,
  QueryLimits,
  QueryResult,
  Row,
  RowsPage,
  TableEntry,
  TableRef,
} from '../../src/databases/database-admin.port.js';
import { DomainError, QueryError } from '../../src/domain/errors.js';
import { PooledClients } from './pooled-clients.js';
import { checkPage } from './rows-page.js';
import {
  type CatalogColumn,
  SQL_ADMIN_DEFAULTS,
  type SqlAdminOptions,
  checkQuery,
  checkTableRef,
  connectionFailureCode,
  notRunning,
  onAbort,
  redact,
  requireTable,
  rowOf,
  timer,
  uniqueNames,
  untilAborted,
} from './sql-admin-support.js';
import {
  type EstimatedTable,
  type SqlConnection,
  type SqlDialect,
  TableCache,
  countMany,
  deleteRow,
  insertRow,
  readRows,
  updateRow,
} from './sql-rows.js';
import { toCell } from './cell-values.js';

/**
 * PostgreSQL (and TimescaleDB, which is PostgreSQL) through one `pg` pool per service.
 * Values are bound (`$n`), identifiers come from the catalog and are quoted; a user's statement runs
 * through the extended protocol (one statement only) with a row limit on its portal, so the server
 * never sends more than `rowCap + 1` rows.
 */

interface PgColumn extends CatalogColumn {
  /** json/jsonb take the value's JSON text: pg would turn a JS array into an array literal. */
  json: boolean;
}

interface PgTable extends EstimatedTable<PgColumn> {
  columns: PgColumn[];
  relkind: string;
  estimate: number;
}

interface PgService {
  pool: pg.Pool;
  host: string;
  port: number;
  /** `format_type` names by `oid:typmod`, for the columns of query results: asked once per service. */
  typeNames: Map<string, string>;
  /** Tables as the catalog described them a moment ago (pages read them from here). */
  tables: TableCache<PgTable>;
}

interface ConnectionKey {
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
}

/** Schemas that belong to PostgreSQL or to an extension (TimescaleDB's catalog), never the user's tables. */
const USER_SCHEMA = `n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%' AND n.nspname NOT LIKE '\\_timescaledb%' AND n.nspname NOT LIKE 'timescaledb\\_%'`;
/** Tables, partitioned tables, views, materialized views and foreign tables: what one can SELECT from. */
const READABLE_KINDS = `c.relkind IN ('r', 'p', 'v', 'm', 'f')`;
/** After a cancel request, how long a statement may take to notice before its connection is cut. */
const CANCEL_GRACE_MS = 2_000;

export function quotePg(identifier: string): string {
  return `"${identifier.replaceAll('"', '""')}"`;
}

// ---- values -------------------------------------------------------------------------------------

/** A bigint's digits as the API carries them: a number while a double holds it exactly, its digits beyond. */
function int8Cell(text: string): CellValue {
  // Up to 15 digits a double holds the value exactly; past 2^53 - 1 Number() rounds to an unsafe integer.
  if (text.length < 16) return Number(text);
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : text;
}

/** A float as the API carries it: NaN and the infinities as the server's text (`NaN`, `Infinity`, `-Infinity`). */
function floatCell(text: string): CellValue {
  const n = Number(text);
  return Number.isFinite(n) ? n : text;
}

/**
 * Text-format parsers by type oid, each giving the API's cell (CellValue) at once, so a page's rows are
 * the driver's rows, with no second pass over every cell. What JSON carries natively is parsed;
 * timestamps keep their microseconds as ISO strings (the session runs in UTC, so timestamptz ends in
 * `Z`); bytea stays in the server's hex text, which is already the API's `\x` form; numeric stays its
 * digits; types not listed (uuid, interval, inet, ranges...) stay the server's own text.
 */
const SCALAR_PARSERS: Record<number, (text: string) => unknown> = {
  16: (t) => t === 't',
  20: int8Cell,
  21: Number,
  23: Number,
  26: Number,
  700: floatCell,
  701: floatCell,
  114: (t) => JSON.parse(t),
  3802: (t) => JSON.parse(t),
  1114: (t) => isoTimestamp(t, false),
  1184: (t) => isoTimestamp(t, true),
};

/** Array oid -> element oid, for arrays whose elements have a parser (or are text-like). */
const ARRAY_ELEMENTS: Record<number, number> = {
  1000: 16,
  1016: 20,
  1005: 21,
  1007: 23,
  1028: 26,
  1021: 700,
  1022: 701,
  199: 114,
  3807: 3802,
  1115: 1114,
  1185: 1184,
  1009: 25,
  1015: 1043,
  1014: 1042,
  1231: 1700,
  1182: 1082,
  2951: 2950,
  1001: 17,
};

/** pg's own text[] parser: splits any array literal (nesting, quoting, NULL) into strings. */
const splitArray = (pg.types.getTypeParser as (oid: number) => (text: string) => unknown[])(1009);

function mapNested(value: unknown, parse: (text: string) => unknown): unknown {
  if (Array.isArray(value)) return value.map((v) => mapNested(v, parse));
  return value === null ? null : parse(value as string);
}

/** Whether `text` from position 19 up to `end` is nothing or `.` and digits (the fraction of a second). */
function fractionOnly(text: string, end: number): boolean {
  if (end === 19) return true;
  if (end === 20 || text.charCodeAt(19) !== 46) return false;
  for (let i = 20; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

/** `2024-01-02 03:04:05.123456+00` -> `2024-01-02T03:04:05.123456Z`; infinity and BC dates keep the server's text. */
export function isoTimestamp(text: string, zoned: boolean): string {
  // The common shape, `YYYY-MM-DD hh:mm:ss[.ffffff][+00]`, by position and without a pattern or a slice
  // to test (one per cell of a page); anything else through the pattern.
  if (text.length >= 19 && text.charCodeAt(10) === 32 && text.charCodeAt(4) === 45 && text.charCodeAt(13) === 58) {
    const utc = text.endsWith('+00');
    const end = utc ? text.length - 3 : text.length;
    if (fractionOnly(text, end)) return `${text.slice(0, 10)}T${text.slice(11, end)}${zoned && utc ? 'Z' : ''}`;
  }
  const m = /^(\d{4,}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2}(?:\.\d+)?)(\+00(?::00)?)?$/.exec(text);
  if (!m) return text;
  return `${m[1]}T${m[2]}${zoned && m[3] ? 'Z' : ''}`;
}

const identity = (text: string): string => text;

function parserFor(oid: number): (text: string) => unknown {
  const scalar = SCALAR_PARSERS[oid];
  if (scalar) return scalar;
  const element = ARRAY_ELEMENTS[oid];
  if (element !== undefined) {
    const parse = SCALAR_PARSERS[element] ?? identity;
    return (text) => mapNested(splitArray(text), parse);
  }
  return identity;
}

const TYPES = { getTypeParser: ((oid: number) => parserFor(oid)) as unknown as typeof pg.types.getTypeParser };

/** A value bound for a column: JSON columns get JSON text (a string value stays a JSON string). */
function param(column: PgColumn, value: CellValue): unknown {
  if (value === null) return null;
  if (column.json) return JSON.stringify(value);
  return value;
}

/** PostgreSQL's side of the shared row operations (sql-rows.ts). */
const PG_DIALECT: SqlDialect<PgColumn, PgTable> = {
  quote: quotePg,
  placeholder: (n) => `$${n}`,
  param: (column, value) => param(column, value),
  pageParam: (n) => n,
  // Stable paging without a key: the physical row address (ctid, with the partition for a partitioned
  // table), which holds while rows are not updated; views and foreign tables have neither.
  orderWithoutKey: (table) =>
    table.relkind === 'r' || table.relkind === 'm' ? ['ctid'] : table.relkind === 'p' ? ['tableoid', 'ctid'] : [],
  insertDefaults: 'DEFAULT VALUES',
  returning: true,
};

// ---- errors -------------------------------------------------------------------------------------

/** States of a server that is not (or no longer, or not yet) serving: shutting down, crashed, starting up. */
const NOT_RUNNING_STATES = new Set(['57P01', '57P02', '57P03']);
const CONNECT_FAILURES = [/timeout exceeded when trying to connect/i, /Connection terminated/i, /connection timeout/i];

function mapError(error: unknown, db: DatabaseEndpoint, secrets: string[]): Error {
  if (error instanceof pg.DatabaseError) {
    const code = error.code ?? '';
    if (NOT_RUNNING_STATES.has(code)) return notRunning('PostgreSQL', db.host, db.port, redact(error.message, secrets));
    const details: Record<string, unknown> = { code };
    if (error.detail) details.detail = redact(error.detail, secrets);
    if (error.hint) details.hint = error.hint;
    if (error.position) details.position = Number(error.position);
    return new QueryError(redact(error.message, secrets), details);
  }
  const code = connectionFailureCode(error);
  if (code) return notRunning('PostgreSQL', db.host, db.port, code);
  const message = error instanceof Error ? error.message : String(error);
  if (CONNECT_FAILURES.some((re) => re.test(message))) return notRunning('PostgreSQL', db.host, db.port, message);
  return error instanceof Error ? error : new Error(message);
}

// ---- a user's statement, capped ---------------------------------------------------------------

interface FieldInfo {
  name: string;
  dataTypeID: number;
  dataTypeModifier: number;
}

/**
 * One statement through the extended protocol: Parse, Bind, Describe, Execute with a row limit of
 * `cap + 1`, Sync, in one write. The server stops after that many rows (PortalSuspended) and the Sync
 * closes the portal, so a SELECT of 10 M rows costs `cap + 1` rows of memory and network; a statement
 * that returns nothing runs to its end as usual. Parse refuses more than one statement.
 */
class CappedStatement implements pg.Submittable {
  fields: FieldInfo[] = [];
  readonly rows: unknown[][] = [];
  command: string | null = null;
  affected: number | null = null;
  truncated = false;
  readonly done: Promise<void>;
  private parsers: Array<(text: string) => unknown> = [];
  private settle!: (error?: unknown) => void;

  constructor(
    private readonly text: string,
    private readonly cap: number,
  ) {
    this.done = new Promise<void>((resolve, reject) => {
      let settled = false;
      this.settle = (error) => {
        if (settled) return;
        settled = true;
        if (error) reject(error);
        else resolve();
      };
    });
  }

  submit(connection: pg.Connection): void {
    const stream = connection.stream as { cork?: () => void; uncork?: () => void };
    stream.cork?.();
    try {
      connection.parse({ text: this.text, name: '', types: [] }, true);
      connection.bind({ values: [] }, true);
      connection.describe({ type: 'P', name: '' }, true);
      // The typings say string; the protocol writer takes the row count as a number.
      connection.execute({ portal: '', rows: (this.cap + 1) as unknown as string }, true);
      connection.sync();
    } finally {
      stream.uncork?.();
    }
  }

  handleRowDescription(msg: { fields: FieldInfo[] }): void {
    this.fields = msg.fields.map((f) => ({ name: f.name, dataTypeID: f.dataTypeID, dataTypeModifier: f.dataTypeModifier }));
    this.parsers = this.fields.map((f) => parserFor(f.dataTypeID));
  }

  handleDataRow(msg: { fields: Array<string | null> }): void {
    if (this.rows.length > this.cap) return;
    const row: unknown[] = [];
    for (let i = 0; i < msg.fields.length; i++) {
      const text = msg.fields[i];
      row.push(text === null || text === undefined ? null : this.parsers[i]!(text));
    }
    this.rows.push(row);
  }

  handlePortalSuspended(): void {
    this.truncated = true;
  }

  handleCommandComplete(msg: { text: string }): void {
    // `INSERT 0 5`, `UPDATE 3`, `SELECT 10`, `CREATE TABLE`: the count, when there is one, comes last.
    const words = msg.text.split(' ');
    this.command = words[0] ?? msg.text;
    const last = words.length > 1 ? words[words.length - 1]! : '';
    this.affected = /^\d+$/.test(last) ? Number(last) : null;
  }

  handleEmptyQuery(): void {}

  /** There is no data to send: the COPY fails, and a Sync follows, since the server ignored the one sent before it entered copy-in mode. */
  handleCopyInResponse(connection: pg.Connection & { sendCopyFail(message: string): void }): void {
    connection.sendCopyFail('COPY FROM STDIN is not available here');
    connection.sync();
  }

  handleCopyData(): void {}

  handleError(error: unknown): void {
    this.settle(error);
  }

  handleReadyForQuery(): void {
    this.settle();
  }
}

/** A CancelRequest on a connection of its own, as libpq's PQcancel sends it. */
function sendCancel(host: string, port: number, processID: number, secretKey: number): void {
  const socket = net.connect({ host, port });
  socket.setTimeout(SQL_ADMIN_DEFAULTS.connectTimeoutMs, () => socket.destroy());
  socket.on('error', () => socket.destroy());
  socket.on('connect', () => {
    const message = Buffer.alloc(16);
    message.writeInt32BE(16, 0);
    message.writeInt32BE(80877102, 4);
    message.writeInt32BE(processID, 8);
    message.writeInt32BE(secretKey, 12);
    socket.end(message);
  });
}

// ---- the adapter --------------------------------------------------------------------------------

export class PostgresDatabaseAdmin implements DatabaseAdmin {
  private readonly pools: PooledClients<PgService>;
  private readonly options: Required<SqlAdminOptions>;

  constructor(options: SqlAdminOptions = {}) {
    this.options = { ...SQL_ADMIN_DEFAULTS, ...options };
    this.pools = new PooledClients<PgService>(
      async (key) => this.open(JSON.parse(key) as ConnectionKey),
      async (service) => service.pool.end(),
      this.options.idleMs,
    );
  }

  /** Services with an open pool (tests: one per service, closed when idle). */
  get openPools(): number {
    return this.pools.size;
  }

  private async open(key: ConnectionKey): Promise<PgService> {
    const pool = new pg.Pool({
      host: key.host,
      port: key.port,
      user: key.user,
      password: key.password,
      database: key.database,
      max: this.options.maxConnections,
      idleTimeoutMillis: Math.min(this.options.idleMs, 30_000),
      connectionTimeoutMillis: this.options.connectTimeoutMs,
      statement_timeout: this.options.internalTimeoutMs,
      application_name: 'slipway-admin',
      keepAlive: true,
      // UTC makes timestamptz text end in +00 (the API's Z); hex bytea text is already the API's form.
      options: '-c TimeZone=UTC -c DateStyle=ISO,YMD -c bytea_output=hex',
      types: TYPES,
    });
    // A connection that dies while idle (server restarted) must not crash the process: the pool drops it.
    pool.on('error', () => undefined);
    pool.on('connect', (client) => client.on('error', () => undefined));
    return { pool, host: key.host, port: key.port, typeNames: new Map(), tables: new TableCache() };
  }

  private endpointKey(db: DatabaseEndpoint): ConnectionKey {
    const user = db.env.POSTGRES_USER || 'postgres';
    return {
      host: db.host,
      port: db.port,
      user,
      password: db.env.POSTGRES_PASSWORD ?? '',
      // The official image names the database after the user when POSTGRES_DB is not set.
      database: db.env.POSTGRES_DB || user,
    };
  }

  /**
   * Runs `work` on one connection of the service's pool. An abort sends PostgreSQL's cancel request for
   * the running statement and, if it is not over soon after, cuts the connection; either way the call
   * rejects with the signal's reason. A connection that failed is destroyed, not given back.
   */
  private async withClient<T>(
    db: DatabaseEndpoint,
    signal: AbortSignal,
    work: (client: pg.PoolClient, service: PgService, dropConnection: () => void) => Promise<T>,
  ): Promise<T> {
    signal.throwIfAborted();
    const key = this.endpointKey(db);
    const secrets = [key.password];
    try {
      return await this.pools.use(db.serviceId, JSON.stringify(key), async (service) => {
        const client = await untilAborted(service.pool.connect(), signal, (late) => late.release());
        let broken = false;
        let stopForce = (): void => undefined;
        const detach = onAbort(signal, () => {
          const ids = client as unknown as { processID?: number; secretKey?: number };
          if (typeof ids.processID === 'number' && typeof ids.secretKey === 'number')
            sendCancel(service.host, service.port, ids.processID, ids.secretKey);
          stopForce = timer(CANCEL_GRACE_MS, () => {
            broken = true;
            client.connection.stream.destroy();
          });
        });
        try {
          return await work(client, service, () => (broken = true));
        } catch (error) {
          // The engine's refusals and our own checks leave the connection usable; anything else may not.
          if (!(error instanceof pg.DatabaseError) && !(error instanceof DomainError)) broken = true;
          throw error;
        } finally {
          detach();
          stopForce();
          client.release(broken || signal.aborted ? true : undefined);
        }
      });
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      throw mapError(error, db, secrets);
    }
  }

  async checkReady(db: DatabaseEndpoint, signal: AbortSignal): Promise<string> {
    return this.withClient(db, signal, async (client) => {
      const { rows } = await client.query<{ ok: number; version: string }>("SELECT 1 AS ok, current_setting('server_version') AS version");
      return `SELECT 1 answered (PostgreSQL ${rows[0]?.version ?? 'unknown version'})`;
    });
  }

  async listTables(db: DatabaseEndpoint, _options: { logicalDatabase?: number }, signal: AbortSignal): Promise<TableEntry[]> {
    return this.withClient(db, signal, async (client, service) => {
      const { rows } = await client.query<{ schema: string; name: string; estimate: number; readable: boolean }>(
        `SELECT n.nspname AS schema, c.relname AS name, c.reltuples::float8 AS estimate, has_table_privilege(c.oid, 'SELECT') AS readable
           FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE ${READABLE_KINDS} AND NOT c.relispartition AND ${USER_SCHEMA}
          ORDER BY 1, 2`,
      );
      const counts = await countMany(PG_DIALECT, this.connection(client, service), rows);
      return rows.map((t, i) => ({ id: `${t.schema}.${t.name}`, name: t.name, schema: t.schema, rowCount: counts[i]! }));
    });
  }

  /** The table with its columns, from pg_catalog by bound name; outside the user's schemas it does not exist. */
  private async table(client: pg.PoolClient, ref: TableRef): Promise<PgTable> {
    checkTableRef(ref);
    const { rows } = await client.query<{
      relkind: string;
      estimate: number;
      columns: Array<{ name: string; type: string; json: boolean; key: number | null }>;
    }>(
      `SELECT c.relkind, c.reltuples::float8 AS estimate,
              coalesce(json_agg(json_build_object(
                'name', a.attname,
                'type', format_type(a.atttypid, a.atttypmod),
                'json', a.atttypid IN (114, 3802),
                'key', array_position(i.indkey::int2[], a.attnum)
              ) ORDER BY a.attnum) FILTER (WHERE a.attnum IS NOT NULL), '[]') AS columns
         FROM pg_class c
         JOIN pg_namespace n ON n.oid = c.relnamespace
         LEFT JOIN pg_index i ON i.indrelid = c.oid AND i.indisprimary
         LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
        WHERE n.nspname = $1 AND c.relname = $2 AND ${READABLE_KINDS} AND ${USER_SCHEMA}
        GROUP BY c.oid, c.relkind, c.reltuples`,
      [ref.schema, ref.name],
    );
    const found = rows[0];
    return requireTable(
      found && {
        schema: ref.schema,
        name: ref.name,
        relkind: found.relkind,
        estimate: found.estimate,
        columns: found.columns.map((c) => ({ name: c.name, type: c.type, json: c.json, keyPosition: c.key ?? null })),
      },
      ref,
    );
  }

  async readRows(db: DatabaseEndpoint, ref: TableRef, page: { limit: number; offset: number }, signal: AbortSignal): Promise<RowsPage> {
    const checked = checkPage(page);
    return this.withClient(db, signal, (client, service) => readRows(PG_DIALECT, this.connection(client, service), ref, checked));
  }

  async query(db: DatabaseEndpoint, text: string, limits: QueryLimits, signal: AbortSignal): Promise<QueryResult> {
    checkQuery(text, limits);
    return this.withClient(db, signal, async (client, service, dropConnection) => {
      // The statement may change tables (DDL): pages read the catalog afresh after it.
      service.tables.clear();
      await client.query("SELECT set_config('statement_timeout', $1, false)", [String(limits.timeoutMs)]);
      const statement = new CappedStatement(text, limits.rowCap);
      let clean = false;
      try {
        client.query(statement);
        await statement.done;
        if (client.getTransactionStatus() !== 'I') await client.query('ROLLBACK');
        const types = await this.typeNames(client, service, statement.fields);
        // The user may have changed anything of the session (SET ROLE, search_path, LISTEN, temp
        // tables): the pooled connection goes back as it was opened.
        await client.query('DISCARD ALL');
        clean = true;
        const names = uniqueNames(statement.fields.map((f) => f.name));
        const rows = statement.rows.slice(0, limits.rowCap).map((values) => rowOf(names, values, toCell));
        return {
          columns: names.map((name, i) => ({ name, type: types[i]! })),
          rows,
          rowCount: statement.fields.length > 0 ? rows.length : (statement.affected ?? 0),
          truncated: statement.truncated || statement.rows.length > limits.rowCap,
        };
      } finally {
        // After a failed statement: no transaction or setting is left behind; a connection that cannot
        // be reset is dropped rather than handed to the next caller.
        if (!clean && !signal.aborted) {
          try {
            if (client.getTransactionStatus() !== 'I') await client.query('ROLLBACK');
            await client.query('DISCARD ALL');
          } catch {
            dropConnection();
          }
        }
      }
    });
  }

  /** `format_type` of each result column (`integer`, `character varying(20)`), cached per service. */
  private async typeNames(client: pg.PoolClient, service: PgService, fields: FieldInfo[]): Promise<string[]> {
    const keyOf = (f: FieldInfo) => `${f.dataTypeID}:${f.dataTypeModifier}`;
    const missing = [...new Map(fields.filter((f) => !service.typeNames.has(keyOf(f))).map((f) => [keyOf(f), f])).values()];
    if (missing.length > 0) {
      const { rows } = await client.query<{ name: string }>(
        'SELECT format_type(o, m) AS name FROM unnest($1::oid[], $2::int4[]) WITH ORDINALITY AS u(o, m, i) ORDER BY i',
        [missing.map((f) => f.dataTypeID), missing.map((f) => f.dataTypeModifier)],
      );
      missing.forEach((f, i) => service.typeNames.set(keyOf(f), rows[i]?.name ?? String(f.dataTypeID)));
    }
    return fields.map((f) => service.typeNames.get(keyOf(f)) ?? String(f.dataTypeID));
  }

  async insertRow(db: DatabaseEndpoint, ref: TableRef, values: Row, signal: AbortSignal): Promise<{ id: CellValue }> {
    return this.withClient(db, signal, (client, service) => insertRow(PG_DIALECT, this.connection(client, service), ref, values));
  }

  async updateRow(db: DatabaseEndpoint, ref: TableRef, primaryKey: Row, values: Row, signal: AbortSignal): Promise<void> {
    await this.withClient(db, signal, (client, service) =>
      updateRow(PG_DIALECT, this.connection(client, service), ref, primaryKey, values),
    );
  }

  async deleteRow(db: DatabaseEndpoint, ref: TableRef, primaryKey: Row, signal: AbortSignal): Promise<void> {
    await this.withClient(db, signal, (client, service) => deleteRow(PG_DIALECT, this.connection(client, service), ref, primaryKey));
  }

  /** One pooled connection as the shared row operations use it: the catalog, rows as arrays, affected rows. */
  private connection(client: pg.PoolClient, service: PgService): SqlConnection<PgTable> {
    return {
      table: (ref, options) => service.tables.get(ref, () => this.table(client, ref), options?.fresh),
      select: async (text, values) => (await client.query({ text, values, rowMode: 'array' })).rows as unknown[][],
      // The parsers (TYPES) give the API's cells, so pg's own row objects are the page's rows. A table's
      // column names are unique, so no field hides another.
      selectRows: async (text, values) => (await client.query<Row>({ text, values })).rows,
      write: async (text, values) => {
        const result = await client.query(text, values);
        return {
          affected: result.rowCount ?? 0,
          returned: (result.rows[0] as Record<string, unknown> | undefined) ?? null,
          insertId: null,
        };
      },
      refused: (error) => error instanceof pg.DatabaseError,
      // undefined_table, undefined_column
      stale: (error) => error instanceof pg.DatabaseError && (error.code === '42P01' || error.code === '42703'),
    };
  }

  async release(serviceId: string): Promise<void> {
    await this.pools.release(serviceId);
  }

  async closeAll(): Promise<void> {
    await this.pools.closeAll();
  }
}
