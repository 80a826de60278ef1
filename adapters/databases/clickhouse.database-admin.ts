import { setTimeout as sleep } from 'node:timers/promises';
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
import { ConflictError, NotFoundError, QueryError, ValidationError } from '../../src/domain/errors.js';
import { ClickHouseBindings, jsonValue } from './clickhouse-bindings.js';
import {
  type ChColumn,
  type ChTable,
  listTables,
  mutations,
  qualified,
  quoteClickHouse,
  readTable,
  rowCounts,
  sortingColumns,
} from './clickhouse-catalog.js';
import { ClickHouseConnection, type ConnectionKey, type ServerMeta } from './clickhouse-connection.js';
import { isRefusal, mapError } from './clickhouse-errors.js';
import { PooledClients } from './pooled-clients.js';
import { checkPage } from './rows-page.js';
import {
  SQL_ADMIN_DEFAULTS,
  type SqlAdminOptions,
  checkColumns,
  checkPrimaryKey,
  checkQuery,
  checkUpdateValues,
  keyId,
  primaryKeyColumns,
  rowId,
} from './sql-admin-support.js';

/**
 * ClickHouse over its HTTP interface (the service's port 8123) through one connection per service
 * (clickhouse-connection.ts). Written for ClickHouse 18.16 (Debian's) and current releases alike; what
 * differs is asked of the server once (its catalog's columns, its settings, a probe), never guessed from
 * its version:
 * - catalog lookups read the service database's whole system.tables/system.columns and match names
 *   here (clickhouse-catalog.ts); inserted rows travel as JSONEachRow data in the request body;
 * - values inside statements (row keys, changed values) are query parameters (`{v0:UInt64}`) where the
 *   server has them (19.x on), and on older servers hex literals the server decodes
 *   (`CAST(unhex('3432') AS UInt64)`): the text of a value is never written into SQL (clickhouse-bindings.ts);
 * - results are TabSeparatedWithNamesAndTypes, parsed as a stream (clickhouse-tsv.ts, clickhouse-values.ts),
 *   so a capped query reads `rowCap + 1` rows and closes the response;
 * - `total_rows` of system.tables is used where the server has it, else the active parts' row sum
 *   (MergeTree) or count().
 * A row is named by the table's primary key (`system.columns.is_in_primary_key`; the sorting key's
 * plain columns on servers without it). That key sorts and does not make rows unique, so an edit or a
 * deletion first counts the rows with that key: it goes ahead only for exactly one, as a mutation
 * (`ALTER TABLE ... UPDATE/DELETE WHERE`), awaited (`mutations_sync`, or system.mutations polled where
 * the server has no such setting).
 */
export class ClickHouseDatabaseAdmin implements DatabaseAdmin {
  private readonly pools: PooledClients<ClickHouseConnection>;
  private readonly options: Required<SqlAdminOptions>;

  constructor(options: SqlAdminOptions = {}) {
    this.options = { ...SQL_ADMIN_DEFAULTS, ...options };
    this.pools = new PooledClients<ClickHouseConnection>(
      async (key) => ClickHouseConnection.open(JSON.parse(key) as ConnectionKey, this.options),
      (conn) => conn.close(),
      this.options.idleMs,
    );
  }

  /** Services with an open client (tests: one per service, closed when idle). */
  get openPools(): number {
    return this.pools.size;
  }

  private endpointKey(db: DatabaseEndpoint): ConnectionKey {
    return {
      host: db.host,
      port: db.port,
      user: db.env.CLICKHOUSE_USER || 'default',
      password: db.env.CLICKHOUSE_PASSWORD ?? '',
      database: db.env.CLICKHOUSE_DB || 'default',
    };
  }

  private async withClient<T>(
    db: DatabaseEndpoint,
    signal: AbortSignal,
    work: (conn: ClickHouseConnection, meta: ServerMeta) => Promise<T>,
  ): Promise<T> {
    signal.throwIfAborted();
    const key = this.endpointKey(db);
    try {
      return await this.pools.use(db.serviceId, JSON.stringify(key), async (conn) => work(conn, await conn.server(signal)));
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      throw mapError(error, db, [key.password]);
    }
  }

  async checkReady(db: DatabaseEndpoint, signal: AbortSignal): Promise<string> {
    return this.withClient(db, signal, async (conn, meta) => {
      const { rows } = await conn.select('SELECT 1 AS ok', signal);
      if (rows[0]?.ok !== 1) throw new QueryError('SELECT 1 did not answer 1');
      return `SELECT 1 answered (ClickHouse ${meta.version})`;
    });
  }

  async listTables(db: DatabaseEndpoint, _options: { logicalDatabase?: number }, signal: AbortSignal): Promise<TableEntry[]> {
    return this.withClient(db, signal, async (conn, meta) => {
      const tables = await listTables(conn, meta, signal);
      const counts = await rowCounts(conn, tables, signal);
      return tables.map((t, i) => ({ id: `${conn.database}.${t.name}`, name: t.name, schema: conn.database, rowCount: counts[i]! }));
    });
  }

  async readRows(db: DatabaseEndpoint, ref: TableRef, page: { limit: number; offset: number }, signal: AbortSignal): Promise<RowsPage> {
    const { limit, offset } = checkPage(page);
    return this.withClient(db, signal, async (conn, meta) => {
      const table = await readTable(conn, meta, ref, signal);
      const order = sortingColumns(table);
      // The two paging numbers are integers checked by checkPage, not values: ClickHouse 18.16 cannot bind them.
      const { rows } = await conn.select(
        `SELECT ${table.columns.map((c) => quoteClickHouse(c.name)).join(', ')} FROM ${qualified(table)}${order.length ? ` ORDER BY ${order.map(quoteClickHouse).join(', ')}` : ''} LIMIT ${limit} OFFSET ${offset}`,
        signal,
      );
      const [total] = await rowCounts(conn, [{ name: table.name, engine: table.engine, totalRows: null }], signal);
      return {
        columns: table.columns.map((c) => ({ name: c.name, type: c.type, primary: c.keyPosition !== null })),
        rows,
        total: Math.max(total!, offset + rows.length),
      };
    });
  }

  async query(db: DatabaseEndpoint, text: string, limits: QueryLimits, signal: AbortSignal): Promise<QueryResult> {
    checkQuery(text, limits);
    return this.withClient(db, signal, async (conn) => {
      const result = await conn.select(text, signal, { cap: limits.rowCap, timeoutMs: limits.timeoutMs });
      const written = Number(result.summary.written_rows ?? 0);
      return {
        columns: result.columns,
        rows: result.rows,
        rowCount: result.columns.length > 0 ? result.rows.length : written,
        truncated: result.truncated,
      };
    });
  }

  /**
   * The row goes as one JSONEachRow line in the request body: values are data, not SQL. The answer's
   * id is the row's key as the server holds it: key columns left out take their default, worked out
   * by the server first (`DEFAULT generateUUIDv4()`, a type's zero) and then written with the row.
   */
  async insertRow(db: DatabaseEndpoint, ref: TableRef, values: Row, signal: AbortSignal): Promise<{ id: CellValue }> {
    return this.withClient(db, signal, async (conn, meta) => {
      const table = await readTable(conn, meta, ref, signal);
      const given = checkColumns(table, values, 'values') as Array<[ChColumn, CellValue]>;
      const keyColumns = primaryKeyColumns(table) as ChColumn[];
      const key = keyColumns.length ? await this.keyOfNewRow(conn, meta, keyColumns, given, signal) : null;
      const written = new Map<string, CellValue>(given.map(([c, v]) => [c.name, jsonValue(c.type, v)]));
      if (key) {
        // A MATERIALIZED column is the server's to compute: it is answered, never written.
        for (const c of keyColumns)
          if (!written.has(c.name) && c.defaultKind !== 'MATERIALIZED' && c.name in key)
            written.set(c.name, jsonValue(c.type, key[c.name]!));
      }
      const names = [...written.keys()];
      await conn.insert(
        `INSERT INTO ${qualified(table)}${names.length ? ` (${names.map(quoteClickHouse).join(', ')})` : ''} FORMAT JSONEachRow`,
        `${JSON.stringify(Object.fromEntries(written))}\n`,
        signal,
      );
      return { id: keyId(keyColumns, key ?? Object.fromEntries(given.map(([c, v]) => [c.name, v]))) };
    });
  }

  /**
   * The key of a row about to be inserted, read back from the server as GET rows would show it: given
   * key values cast to their column's type, the others their default expression (over the given
   * values) or their type's default. Where the server cannot work that out (a default naming a column
   * left out, a value it cannot cast), the given key values are all it answers: the insert goes ahead
   * as given, and the parts of the key it computes are answered null.
   */
  private async keyOfNewRow(
    conn: ClickHouseConnection,
    meta: ServerMeta,
    keyColumns: ChColumn[],
    given: Array<[ChColumn, CellValue]>,
    signal: AbortSignal,
  ): Promise<Row | null> {
    const bindings = new ClickHouseBindings(meta.queryParameters);
    const byName = new Map(given.map(([c, v]) => [c.name, v]));
    const computed = keyColumns.filter((c) => !byName.has(c.name));
    const expressions = keyColumns.map((c, i) => {
      const expression = byName.has(c.name)
        ? bindings.bind(c.type, byName.get(c.name)!)
        : c.defaultExpression
          ? `CAST((${c.defaultExpression}) AS ${c.type})`
          : // Element 1 of an empty array is the type's default, what an insert leaving the column out stores.
            `arrayElement(CAST('[]' AS Array(${c.type})), 1)`;
      return `${expression} AS k${i}`;
    });
    const context =
      computed.some((c) => c.defaultExpression) && given.length
        ? ` FROM (SELECT ${given.map(([c, v]) => `${bindings.bind(c.type, v)} AS ${quoteClickHouse(c.name)}`).join(', ')})`
        : '';
    try {
      const { rows } = await conn.select(`SELECT ${expressions.join(', ')}${context}`, signal, { params: bindings.params });
      const row = rows[0];
      if (!row) return null;
      return Object.fromEntries(keyColumns.map((c, i) => [c.name, row[`k${i}`] ?? null]));
    } catch (error) {
      signal.throwIfAborted();
      if (!isRefusal(error)) throw error;
      return Object.fromEntries(keyColumns.filter((c) => byName.has(c.name)).map((c) => [c.name, byName.get(c.name)!]));
    }
  }

  /**
   * One row, named by its whole primary key, changed in place by a mutation (`ALTER TABLE ... UPDATE`),
   * when exactly one row has that key. Columns of the sorting or partition key cannot be updated by
   * ClickHouse: such a change is refused before anything runs.
   */
  async updateRow(db: DatabaseEndpoint, ref: TableRef, primaryKey: Row, values: Row, signal: AbortSignal): Promise<void> {
    await this.withClient(db, signal, async (conn, meta) => {
      const table = await readTable(conn, meta, ref, signal);
      const key = checkPrimaryKey(table, primaryKey) as Array<[ChColumn, CellValue]>;
      const set = checkUpdateValues(table, values) as Array<[ChColumn, CellValue]>;
      for (const [column] of set) {
        if (column.inStorageKey)
          throw new ValidationError(
            'values',
            `column ${JSON.stringify(column.name)} is part of the table's sorting or partition key, which ClickHouse cannot change in place: delete the row and insert it again`,
          );
        if (column.defaultKind === 'MATERIALIZED' || column.defaultKind === 'ALIAS')
          throw new ValidationError('values', `column ${JSON.stringify(column.name)} is ${column.defaultKind}: the server computes it`);
      }
      const bindings = new ClickHouseBindings(meta.queryParameters);
      const where = keyCondition(key, bindings);
      await this.requireOneRow(conn, table, key, where, bindings, signal);
      const assignments = set.map(([c, v]) => `${quoteClickHouse(c.name)} = ${bindings.bind(c.type, v)}`).join(', ');
      await this.mutate(conn, meta, table, `UPDATE ${assignments} WHERE ${where}`, bindings, signal);
    });
  }

  /** One row, named by its whole primary key, deleted by a mutation (`ALTER TABLE ... DELETE`), when exactly one row has that key. */
  async deleteRow(db: DatabaseEndpoint, ref: TableRef, primaryKey: Row, signal: AbortSignal): Promise<void> {
    await this.withClient(db, signal, async (conn, meta) => {
      const table = await readTable(conn, meta, ref, signal);
      const key = checkPrimaryKey(table, primaryKey) as Array<[ChColumn, CellValue]>;
      const bindings = new ClickHouseBindings(meta.queryParameters);
      const where = keyCondition(key, bindings);
      await this.requireOneRow(conn, table, key, where, bindings, signal);
      await this.mutate(conn, meta, table, `DELETE WHERE ${where}`, bindings, signal);
    });
  }

  /** A key names one row or none: ClickHouse keys are not unique, so several rows are refused with how many. */
  private async requireOneRow(
    conn: ClickHouseConnection,
    table: ChTable,
    key: Array<[ChColumn, CellValue]>,
    where: string,
    bindings: ClickHouseBindings,
    signal: AbortSignal,
  ): Promise<void> {
    const { rows } = await conn.select(`SELECT count() AS n FROM ${qualified(table)} WHERE ${where}`, signal, { params: bindings.params });
    const count = Number(rows[0]?.n ?? 0);
    if (count === 0) throw new NotFoundError('row', rowId(table, key));
    if (count > 1)
      throw new ConflictError(
        `${count} rows of table ${JSON.stringify(table.name)} have the key ${JSON.stringify(Object.fromEntries(key.map(([c, v]) => [c.name, v])))}: ClickHouse keys do not make rows unique, so none was changed; change them with ALTER TABLE ... UPDATE/DELETE in a query`,
        { rows: count },
      );
  }

  /**
   * `ALTER TABLE <table> <command>`, waited for: with `mutations_sync` where the server has it, else by
   * polling system.mutations until the mutations this statement added are done. A mutation still
   * running at the timeout goes on in the server; the call says so.
   */
  private async mutate(
    conn: ClickHouseConnection,
    meta: ServerMeta,
    table: ChTable,
    command: string,
    bindings: ClickHouseBindings,
    signal: AbortSignal,
  ): Promise<void> {
    const statement = `ALTER TABLE ${qualified(table)} ${command}`;
    if (meta.mutationsSync) {
      await conn.select(statement, signal, { params: bindings.params, settings: { mutations_sync: '2' } });
      return;
    }
    const before = new Set((await mutations(conn, table, signal)).map((m) => m.id));
    await conn.select(statement, signal, { params: bindings.params });
    const deadline = Date.now() + this.options.internalTimeoutMs;
    for (let pause = 10; ; pause = Math.min(pause * 2, 200)) {
      const pending = (await mutations(conn, table, signal)).filter((m) => !before.has(m.id) && !m.done);
      if (pending.length === 0) return;
      if (Date.now() > deadline)
        throw new QueryError(
          `the mutation of table ${JSON.stringify(table.name)} did not finish within ${this.options.internalTimeoutMs} ms; it goes on in the server`,
          { mutations: pending.map((m) => m.id) },
        );
      await sleep(pause, undefined, { signal });
    }
  }

  async release(serviceId: string): Promise<void> {
    await this.pools.release(serviceId);
  }

  async closeAll(): Promise<void> {
    await this.pools.closeAll();
  }
}

function keyCondition(key: Array<[ChColumn, CellValue]>, bindings: ClickHouseBindings): string {
  return key.map(([c, v]) => `${quoteClickHouse(c.name)} = ${bindings.bind(c.type, v)}`).join(' AND ');
}
