import type { FieldPacket, PoolConnection as CorePoolConnection, Query as CoreQuery, ResultSetHeader, TypeCast } from 'mysql2';
import mysql from 'mysql2/promise';
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
import { toCell } from './cell-values.js';
import { PooledClients } from './pooled-clients.js';
import { checkPage } from './rows-page.js';
import {
  type CatalogColumn,
  RowCap,
  SQL_ADMIN_DEFAULTS,
  type SqlAdminOptions,
  binaryParam,
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

/**
 * MySQL and MariaDB through one `mysql2` pool per service. Values are bound through server-side
 * prepared statements (`execute`, `?`), identifiers come from information_schema and are quoted with
 * backticks; a user's statement goes through the text protocol with multiple statements off, its rows
 * streamed and the connection dropped once `rowCap + 1` rows have arrived.
 */

interface MysqlColumn extends CatalogColumn {
  /** information_schema DATA_TYPE: how a value is bound (bytes for blobs, text for datetimes). */
  dataType: string;
  autoIncrement: boolean;
}

interface MysqlTable extends EstimatedTable<MysqlColumn> {
  columns: MysqlColumn[];
  estimate: number;
}

interface MysqlService {
  pool: mysql.Pool;
  key: ConnectionKey;
  /** MariaDB and MySQL name their statement timeout differently: read from the first connection. */
  flavor: 'mariadb' | 'mysql' | null;
  /** Connections whose session is set up (UTC, the internal timeout); a reset one is set up again. */
  ready: WeakSet<object>;
  /** Tables as the catalog described them a moment ago (pages read them from here). */
  tables: TableCache<MysqlTable>;
}

interface ConnectionKey {
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
}

/** A user's statement past its timeout that the server did not stop itself (MySQL's timeout covers SELECT only) is killed after this much more. */
const WATCHDOG_SLACK_MS = 1_000;

export function quoteMysql(identifier: string): string {
  return `\`${identifier.replaceAll('`', '``')}\``;
}

// ---- values -------------------------------------------------------------------------------------

/**
 * DATETIME has no zone and keeps its text with a `T`; TIMESTAMP is read in the session's UTC and gets
 * its `Z`; zero dates (`0000-00-00`) stay the server's text. Blobs come as Buffers (toCell: `\x` hex),
 * BIGINT and DECIMAL beyond a double as strings, JSON parsed.
 */
const typeCast: TypeCast = (field, next) => {
  if (field.type === 'DATETIME' || field.type === 'TIMESTAMP') {
    const text = field.string();
    if (text === null) return null;
    if (text.startsWith('0000-00-00')) return text;
    return `${text.replace(' ', 'T')}${field.type === 'TIMESTAMP' ? 'Z' : ''}`;
  }
  return next();
};

const BINARY_TYPES = new Set(['binary', 'varbinary', 'tinyblob', 'blob', 'mediumblob', 'longblob']);

/** A value bound for a column: `\x` hex as bytes for binary columns, ISO timestamps as MySQL's text, objects as JSON. */
function param(column: MysqlColumn, value: CellValue): string | number | boolean | null | Buffer {
  if (value === null) return null;
  if (BINARY_TYPES.has(column.dataType)) {
    const bytes = binaryParam(value);
    if (Buffer.isBuffer(bytes)) return bytes;
  }
  if (typeof value === 'object' || column.dataType === 'json') return JSON.stringify(value);
  if ((column.dataType === 'datetime' || column.dataType === 'timestamp') && typeof value === 'string') {
    const m = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2}(?:\.\d+)?)(Z)?$/.exec(value);
    if (m) return `${m[1]} ${m[2]}`;
  }
  return value;
}

/** MySQL's side of the shared row operations (sql-rows.ts). */
const MYSQL_DIALECT: SqlDialect<MysqlColumn, MysqlTable> = {
  quote: quoteMysql,
  placeholder: () => '?',
  param: (column, value) => param(column, value),
  // LIMIT placeholders are bound as strings: MySQL 8 refuses a JS number there (it arrives as a DOUBLE).
  pageParam: (n) => String(n),
  // Without a key InnoDB reads in the order of its hidden row id, stable while the table does not change.
  orderWithoutKey: () => [],
  insertDefaults: '() VALUES ()',
  returning: false,
};

/** Result column type names from the protocol's column definitions, as close to COLUMN_TYPE as they say. */
const TYPE_NAMES: Record<number, string> = {
  0: 'decimal',
  1: 'tinyint',
  2: 'smallint',
  3: 'int',
  4: 'float',
  5: 'double',
  6: 'null',
  7: 'timestamp',
  8: 'bigint',
  9: 'mediumint',
  10: 'date',
  11: 'time',
  12: 'datetime',
  13: 'year',
  14: 'date',
  15: 'varchar',
  16: 'bit',
  245: 'json',
  246: 'decimal',
  247: 'enum',
  248: 'set',
  249: 'tinyblob',
  250: 'mediumblob',
  251: 'longblob',
  252: 'blob',
  253: 'varchar',
  254: 'char',
  255: 'geometry',
};
const BINARY_CHARSET = 63;
const UNSIGNED_FLAG = 32;
const ENUM_FLAG = 256;
const SET_FLAG = 2048;
const NUMERIC_CODES = new Set([0, 1, 2, 3, 4, 5, 8, 9, 246]);

function fieldType(field: FieldPacket): string {
  if (field.extendedTypeName) return field.extendedTypeName;
  if (field.extendedFormat === 'json') return 'json';
  const code = field.columnType ?? field.type ?? -1;
  const flags = typeof field.flags === 'number' ? field.flags : 0;
  const binary = field.characterSet === BINARY_CHARSET;
  let name = TYPE_NAMES[code] ?? `type ${code}`;
  if (code === 254) name = flags & ENUM_FLAG ? 'enum' : flags & SET_FLAG ? 'set' : binary ? 'binary' : 'char';
  else if (code === 253 || code === 15) name = binary ? 'varbinary' : 'varchar';
  else if (code >= 249 && code <= 252 && !binary) name = name.replace('blob', 'text');
  if (NUMERIC_CODES.has(code) && flags & UNSIGNED_FLAG) name += ' unsigned';
  return name;
}

// ---- errors -------------------------------------------------------------------------------------

interface MysqlDriverError extends Error {
  code?: string;
  errno?: number;
  sqlState?: string;
  sqlMessage?: string;
  fatal?: boolean;
}

/** Server states in which it does not serve: shutting down (ER_SERVER_SHUTDOWN, ER_NORMAL_SHUTDOWN). */
const NOT_RUNNING_ERRNOS = new Set([1053, 1077]);
const LOST = new Set(['PROTOCOL_CONNECTION_LOST', 'PROTOCOL_SEQUENCE_TIMEOUT']);

function isEngineError(error: unknown): error is MysqlDriverError {
  return (
    error instanceof Error &&
    typeof (error as MysqlDriverError).sqlState === 'string' &&
    typeof (error as MysqlDriverError).errno === 'number'
  );
}

function mapError(error: unknown, db: DatabaseEndpoint, secrets: string[]): Error {
  if (isEngineError(error)) {
    if (NOT_RUNNING_ERRNOS.has(error.errno!)) return notRunning('MySQL', db.host, db.port, redact(error.message, secrets));
    return new QueryError(redact(error.sqlMessage ?? error.message, secrets), {
      code: error.code,
      errno: error.errno,
      sqlState: error.sqlState,
    });
  }
  const code =
    connectionFailureCode(error) ??
    ((error as MysqlDriverError)?.code && LOST.has((error as MysqlDriverError).code!) ? (error as MysqlDriverError).code! : null);
  if (code) return notRunning('MySQL', db.host, db.port, code);
  return error instanceof Error ? error : new Error(String(error));
}

// ---- the adapter --------------------------------------------------------------------------------

export class MysqlDatabaseAdmin implements DatabaseAdmin {
  private readonly pools: PooledClients<MysqlService>;
  private readonly options: Required<SqlAdminOptions>;

  constructor(options: SqlAdminOptions = {}) {
    this.options = { ...SQL_ADMIN_DEFAULTS, ...options };
    this.pools = new PooledClients<MysqlService>(
      async (key) => this.open(JSON.parse(key) as ConnectionKey),
      async (service) => service.pool.end(),
      this.options.idleMs,
    );
  }

  /** Services with an open pool (tests: one per service, closed when idle). */
  get openPools(): number {
    return this.pools.size;
  }

  private connectionOptions(key: ConnectionKey): mysql.ConnectionOptions {
    return {
      host: key.host,
      port: key.port,
      user: key.user,
      password: key.password,
      database: key.database,
      connectTimeout: this.options.connectTimeoutMs,
      multipleStatements: false,
      // A user's LOAD DATA LOCAL INFILE must never make the platform send one of its own files.
      flags: ['-LOCAL_FILES'],
      supportBigNumbers: true,
      bigNumberStrings: false,
      decimalNumbers: false,
      dateStrings: true,
      typeCast,
      charset: 'utf8mb4',
      maxPreparedStatements: 64,
      enableKeepAlive: true,
    };
  }

  private async open(key: ConnectionKey): Promise<MysqlService> {
    const pool = mysql.createPool({
      ...this.connectionOptions(key),
      connectionLimit: this.options.maxConnections,
      maxIdle: this.options.maxConnections,
      idleTimeout: Math.min(this.options.idleMs, 30_000),
      waitForConnections: true,
      queueLimit: 0,
    });
    return { pool, key, flavor: null, ready: new WeakSet(), tables: new TableCache() };
  }

  private endpointKey(db: DatabaseEndpoint): ConnectionKey {
    const user = db.env.MYSQL_USER || 'root';
    return {
      host: db.host,
      port: db.port,
      user,
      password: (db.env.MYSQL_USER ? db.env.MYSQL_PASSWORD : db.env.MYSQL_ROOT_PASSWORD) ?? '',
      database: db.env.MYSQL_DATABASE ?? '',
    };
  }

  /**
   * A session as the adapter wants it: UTC (TIMESTAMP values end in `Z`), the service's database, and
   * the internal statement timeout. Run on a new connection and again after a user's statement reset it.
   */
  private async prepareSession(conn: mysql.PoolConnection, service: MysqlService): Promise<void> {
    if (service.ready.has(conn.connection)) return;
    if (!service.flavor) {
      const [rows] = await conn.query<mysql.RowDataPacket[]>('SELECT VERSION() AS version');
      service.flavor = /mariadb/i.test(String(rows[0]?.version)) ? 'mariadb' : 'mysql';
    }
    await conn.query("SET time_zone = '+00:00'");
    await this.setTimeout(conn, service, this.options.internalTimeoutMs);
    if (service.key.database) await conn.query(`USE ${quoteMysql(service.key.database)}`);
    service.ready.add(conn.connection);
  }

  /** MariaDB's max_statement_time (seconds, every statement); MySQL's max_execution_time (ms, SELECT only). */
  private async setTimeout(conn: mysql.PoolConnection, service: MysqlService, ms: number): Promise<void> {
    if (service.flavor === 'mariadb') await conn.execute('SET SESSION max_statement_time = ?', [ms / 1000]);
    else await conn.execute('SET SESSION max_execution_time = ?', [ms]);
  }

  /** KILL QUERY on a connection of its own: the pool may have none free while the statement holds one. */
  private killQuery(service: MysqlService, threadId: number): void {
    if (!Number.isSafeInteger(threadId)) return;
    void (async () => {
      const conn = await mysql.createConnection(this.connectionOptions(service.key));
      try {
        await conn.query(`KILL QUERY ${threadId}`);
      } finally {
        conn.destroy();
      }
    })().catch(() => undefined);
  }

  /**
   * Runs `work` on one connection of the service's pool; an abort rejects with the signal's reason at
   * once. A connection left in doubt (a driver error, an abort, a user's statement cut short) is destroyed.
   */
  private async withConnection<T>(
    db: DatabaseEndpoint,
    signal: AbortSignal,
    work: (conn: mysql.PoolConnection, service: MysqlService, drop: () => void) => Promise<T>,
  ): Promise<T> {
    signal.throwIfAborted();
    const key = this.endpointKey(db);
    try {
      return await this.pools.use(db.serviceId, JSON.stringify(key), async (service) => {
        const conn = await untilAborted(service.pool.getConnection(), signal, (late) => late.release());
        let broken = false;
        // The statement is killed on the server and the call ends at once; the connection, in an
        // unknown state, is destroyed rather than given back.
        const detach = onAbort(signal, () => this.killQuery(service, conn.threadId));
        try {
          const working = (async () => {
            await this.prepareSession(conn, service);
            return work(conn, service, () => (broken = true));
          })();
          return await untilAborted(working, signal, () => undefined);
        } catch (error) {
          if (!isEngineError(error) && !(error instanceof DomainError)) broken = true;
          throw error;
        } finally {
          detach();
          if (broken || signal.aborted) conn.destroy();
          else conn.release();
        }
      });
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      throw mapError(error, db, [key.password]);
    }
  }

  async checkReady(db: DatabaseEndpoint, signal: AbortSignal): Promise<string> {
    return this.withConnection(db, signal, async (conn) => {
      const [rows] = await conn.query<mysql.RowDataPacket[]>('SELECT 1 AS ok, VERSION() AS version');
      const version = String(rows[0]?.version ?? 'unknown version');
      return `SELECT 1 answered (${/mariadb/i.test(version) ? 'MariaDB' : 'MySQL'} ${version})`;
    });
  }

  private database(db: DatabaseEndpoint): string {
    return this.endpointKey(db).database;
  }

  async listTables(db: DatabaseEndpoint, _options: { logicalDatabase?: number }, signal: AbortSignal): Promise<TableEntry[]> {
    const schema = this.database(db);
    return this.withConnection(db, signal, async (conn, service) => {
      const [rows] = await conn.execute<mysql.RowDataPacket[]>(
        'SELECT TABLE_NAME AS name, TABLE_ROWS AS estimate FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? ORDER BY TABLE_NAME',
        [schema],
      );
      const tables = rows.map((r) => ({ schema, name: String(r.name), estimate: Number(r.estimate ?? 0) }));
      const counts = await countMany(MYSQL_DIALECT, this.connection(conn, service, db), tables);
      return tables.map((t, i) => ({ id: `${schema}.${t.name}`, name: t.name, schema, rowCount: counts[i]! }));
    });
  }

  /**
   * The table with its columns from information_schema, by bound name, in the service's database only.
   * Names are compared exactly here: information_schema compares them case-insensitively on some servers.
   */
  private async table(conn: mysql.PoolConnection, db: DatabaseEndpoint, ref: TableRef): Promise<MysqlTable> {
    checkTableRef(ref);
    const schema = this.database(db);
    if (ref.schema !== schema) requireTable(null, ref);
    const [tables] = await conn.execute<mysql.RowDataPacket[]>(
      'SELECT TABLE_NAME AS name, TABLE_ROWS AS estimate FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?',
      [schema, ref.name],
    );
    const found = tables.find((t) => t.name === ref.name);
    if (!found) requireTable(null, ref);
    const [columns] = await conn.execute<mysql.RowDataPacket[]>(
      `SELECT c.COLUMN_NAME AS name, c.COLUMN_TYPE AS type, c.DATA_TYPE AS dataType, c.EXTRA AS extra, k.ORDINAL_POSITION AS keyPosition
         FROM information_schema.COLUMNS c
         LEFT JOIN information_schema.KEY_COLUMN_USAGE k
           ON k.TABLE_SCHEMA = c.TABLE_SCHEMA AND k.TABLE_NAME = c.TABLE_NAME AND k.COLUMN_NAME = c.COLUMN_NAME AND k.CONSTRAINT_NAME = 'PRIMARY'
        WHERE c.TABLE_SCHEMA = ? AND c.TABLE_NAME = ?
        ORDER BY c.ORDINAL_POSITION`,
      [schema, ref.name],
    );
    return {
      schema,
      name: String(found!.name),
      estimate: Number(found!.estimate ?? 0),
      columns: columns.map((c) => ({
        name: String(c.name),
        type: String(c.type),
        dataType: String(c.dataType).toLowerCase(),
        autoIncrement: /auto_increment/i.test(String(c.extra ?? '')),
        keyPosition: c.keyPosition === null || c.keyPosition === undefined ? null : Number(c.keyPosition),
      })),
    };
  }

  async readRows(db: DatabaseEndpoint, ref: TableRef, page: { limit: number; offset: number }, signal: AbortSignal): Promise<RowsPage> {
    const checked = checkPage(page);
    return this.withConnection(db, signal, (conn, service) => readRows(MYSQL_DIALECT, this.connection(conn, service, db), ref, checked));
  }

  async query(db: DatabaseEndpoint, text: string, limits: QueryLimits, signal: AbortSignal): Promise<QueryResult> {
    checkQuery(text, limits);
    return this.withConnection(db, signal, async (conn, service, drop) => {
      // The statement may change tables (DDL): pages read the catalog afresh after it.
      service.tables.clear();
      await this.setTimeout(conn, service, limits.timeoutMs);
      // The user may change anything of the session (variables, database, locks, a transaction): it is
      // reset (COM_RESET_CONNECTION) before the connection goes back, and set up again on next use.
      service.ready.delete(conn.connection);
      const stopWatchdog = timer(limits.timeoutMs + WATCHDOG_SLACK_MS, () => this.killQuery(service, conn.threadId));
      let outcome: Awaited<ReturnType<MysqlDatabaseAdmin['stream']>>;
      try {
        outcome = await this.stream(conn, text, limits.rowCap);
      } catch (error) {
        if (isEngineError(error)) await conn.reset().catch(drop);
        throw error;
      } finally {
        stopWatchdog();
      }
      if (outcome.cut) {
        // The server goes on computing (discarding its output) after the socket closes: the statement is killed.
        this.killQuery(service, conn.threadId);
        drop();
      } else await conn.reset();
      const fields = outcome.fields ?? [];
      const names = uniqueNames(fields.map((f) => f.name));
      return {
        columns: names.map((name, i) => ({ name, type: fieldType(fields[i]!) })),
        rows: outcome.rows.rows,
        rowCount: outcome.fields ? outcome.rows.rows.length : (outcome.header?.affectedRows ?? 0),
        truncated: outcome.rows.truncated,
      };
    });
  }

  /**
   * Streams one statement's rows off the socket: at the row beyond the cap the socket is paused, so a
   * 10 M row result costs `rowCap + 1` rows of memory; the caller kills the statement and drops the connection.
   */
  private stream(conn: mysql.PoolConnection, text: string, cap: number) {
    const core = conn.connection as unknown as CorePoolConnection;
    return new Promise<{ fields: FieldPacket[] | null; rows: RowCap; header: ResultSetHeader | null; cut: boolean }>((resolve, reject) => {
      const rows = new RowCap(cap);
      let fields: FieldPacket[] | null = null;
      let names: string[] = [];
      let header: ResultSetHeader | null = null;
      let settled = false;
      const query: CoreQuery = core.query({ sql: text, rowsAsArray: true });
      query.on('fields', (f: FieldPacket[] | undefined) => {
        // A statement without a result set announces no fields; one with several (CALL) shows its first.
        if (!f || fields) return;
        fields = f;
        names = uniqueNames(f.map((x) => x.name));
      });
      query.on('result', (row: unknown, resultIndex?: number) => {
        if (settled || (resultIndex ?? 0) > 0) return;
        if (!fields || !Array.isArray(row)) {
          header ??= row as ResultSetHeader;
          return;
        }
        if (!rows.push(rowOf(names, row, toCell))) {
          settled = true;
          core.pause();
          resolve({ fields, rows, header, cut: true });
        }
      });
      query.on('error', (error: Error) => {
        if (settled) return;
        settled = true;
        reject(error);
      });
      query.on('end', () => {
        if (settled) return;
        settled = true;
        resolve({ fields, rows, header, cut: false });
      });
    });
  }

  async insertRow(db: DatabaseEndpoint, ref: TableRef, values: Row, signal: AbortSignal): Promise<{ id: CellValue }> {
    return this.withConnection(db, signal, (conn, service) => insertRow(MYSQL_DIALECT, this.connection(conn, service, db), ref, values));
  }

  async updateRow(db: DatabaseEndpoint, ref: TableRef, primaryKey: Row, values: Row, signal: AbortSignal): Promise<void> {
    await this.withConnection(db, signal, (conn, service) =>
      updateRow(MYSQL_DIALECT, this.connection(conn, service, db), ref, primaryKey, values),
    );
  }

  async deleteRow(db: DatabaseEndpoint, ref: TableRef, primaryKey: Row, signal: AbortSignal): Promise<void> {
    await this.withConnection(db, signal, (conn, service) => deleteRow(MYSQL_DIALECT, this.connection(conn, service, db), ref, primaryKey));
  }

  /**
   * One pooled connection as the shared row operations use it: the catalog, rows as arrays (prepared
   * statements where values are bound), affected rows. The driver's FOUND_ROWS flag makes affectedRows
   * count matched rows, also when an UPDATE changed nothing.
   */
  private connection(conn: mysql.PoolConnection, service: MysqlService, db: DatabaseEndpoint): SqlConnection<MysqlTable> {
    return {
      table: (ref, options) => service.tables.get(ref, () => this.table(conn, db, ref), options?.fresh),
      select: async (sql, values) => {
        const [rows] = values.length
          ? await conn.execute<mysql.RowDataPacket[]>(
              { sql, rowsAsArray: true },
              values as Array<string | number | boolean | null | Buffer>,
            )
          : await conn.query<mysql.RowDataPacket[]>({ sql, rowsAsArray: true });
        return rows as unknown as unknown[][];
      },
      write: async (sql, values) => {
        const [result] = await conn.execute<ResultSetHeader>(sql, values as Array<string | number | boolean | null | Buffer>);
        return { affected: result.affectedRows, returned: null, insertId: result.insertId };
      },
      refused: isEngineError,
      // ER_NO_SUCH_TABLE, ER_BAD_FIELD_ERROR
      stale: (error) => isEngineError(error) && (error.errno === 1146 || error.errno === 1054),
    };
  }

  async release(serviceId: string): Promise<void> {
    await this.pools.release(serviceId);
  }

  async closeAll(): Promise<void> {
    await this.pools.closeAll();
  }
}
