import type { CellValue, Row, RowsPage, TableRef } from '../../src/databases/database-admin.port.js';
import { NotFoundError } from '../../src/domain/errors.js';
import { toCell } from './cell-values.js';
import {
  type CatalogColumn,
  type CatalogTable,
  checkColumns,
  checkPrimaryKey,
  checkUpdateValues,
  EXACT_COUNT_LIMIT,
  keyId,
  primaryKeyColumns,
  rowId,
  rowOf,
} from './sql-admin-support.js';

/**
 * The row operations of the SQL engines that bind values (PostgreSQL, MySQL), written once: a page in
 * key order with its total, an insert answering the new row's key, an update and a delete by key. What
 * differs between the engines is their dialect (quoting, placeholders, how values bind) and their
 * connection (the catalog query, how a driver answers rows and affected rows).
 */

/** A table as the catalog gave it, with the engine's row estimate (counts above EXACT_COUNT_LIMIT stand at it). */
export interface EstimatedTable<C extends CatalogColumn = CatalogColumn> extends CatalogTable {
  columns: C[];
  estimate: number;
}

export interface SqlDialect<C extends CatalogColumn, T extends EstimatedTable<C>> {
  /** An identifier quoted: `"name"`, `` `name` ``. */
  quote(identifier: string): string;
  /** The n-th (1-based) bound value: `$1`, `?`. */
  placeholder(n: number): string;
  /** A value as the driver binds it for its column (JSON text, bytes, the engine's timestamp text). */
  param(column: C, value: CellValue): unknown;
  /** LIMIT and OFFSET as the driver binds them. */
  pageParam(n: number): unknown;
  /** The order of pages of a table without a primary key (PostgreSQL's row address), or none. */
  orderWithoutKey(table: T): string[];
  /** The INSERT of a row that gives no column: `DEFAULT VALUES`, `() VALUES ()`. */
  insertDefaults: string;
  /** INSERT ... RETURNING answers the key; without it, the key is the values given and the auto-increment id. */
  returning: boolean;
}

/** What a write answered. */
export interface WriteResult {
  /** Rows the statement matched (an UPDATE that changed nothing still counts the row it found). */
  affected: number;
  /** The first row of RETURNING, as the driver gave it. */
  returned: Record<string, unknown> | null;
  /** The AUTO_INCREMENT value the server assigned, where the engine reports one. */
  insertId: unknown;
}

/** One connection of the service, for the length of one call. */
export interface SqlConnection<T> {
  /**
   * The table and its columns from the engine's catalog (NotFoundError('table') when it has none by that
   * name), as read at most a moment ago (TableCache); `fresh` reads it now.
   */
  table(ref: TableRef, options?: { fresh?: boolean }): Promise<T>;
  /** A statement's rows, each an array in select-list order. */
  select(sql: string, params: unknown[]): Promise<unknown[][]>;
  /**
   * A page's rows as the API's rows (cells by column name) straight from the driver, where its values
   * already are the API's cells: no array per row and no second pass over each cell (a page of 500 rows
   * allocated a third more without it). Without it, pages read `select` and convert each cell.
   */
  selectRows?(sql: string, params: unknown[]): Promise<Row[]>;
  write(sql: string, params: unknown[]): Promise<WriteResult>;
  /** The engine refused the statement (as opposed to a connection that failed). */
  refused(error: unknown): boolean;
  /** The engine says a table or column the statement names does not exist: the catalog read may be stale. */
  stale(error: unknown): boolean;
}

/**
 * The tables of one service as its catalog described them, kept for a moment: a page of rows is one
 * statement instead of two (the catalog query cost PostgreSQL more than a shallow page). A change made
 * elsewhere shows in pages within `ttlMs`; sooner where it matters: a page that names what is gone is read
 * again on a fresh catalog (withTable), writes always read the catalog, and the adapter clears the cache
 * after each statement of its console.
 */
export class TableCache<T> {
  private readonly entries = new Map<string, { table: Promise<T>; until: number }>();

  constructor(
    private readonly ttlMs = 2_000,
    private readonly maxTables = 256,
  ) {}

  get(ref: TableRef, load: () => Promise<T>, fresh = false): Promise<T> {
    const id = JSON.stringify([ref.schema, ref.name]);
    const now = Date.now();
    const cached = this.entries.get(id);
    if (cached && !fresh && cached.until > now) return cached.table;
    if (this.entries.size >= this.maxTables) this.entries.clear();
    const table = load();
    const entry = { table, until: now + this.ttlMs };
    this.entries.set(id, entry);
    // A failed read (an unknown table) is not kept: the next call asks again.
    table.catch(() => {
      if (this.entries.get(id) === entry) this.entries.delete(id);
    });
    return table;
  }

  clear(): void {
    this.entries.clear();
  }
}

/** Writes read the catalog now: a column added a moment ago can be written at once. */
async function fresh<T, R>(conn: SqlConnection<T>, ref: TableRef, work: (table: T) => Promise<R>): Promise<R> {
  return work(await conn.table(ref, { fresh: true }));
}

/** Runs `work` with the table; when the engine says something it names is gone, once more on a fresh catalog read. */
async function withTable<T, R>(conn: SqlConnection<T>, ref: TableRef, work: (table: T) => Promise<R>): Promise<R> {
  const table = await conn.table(ref);
  try {
    return await work(table);
  } catch (error) {
    if (!conn.stale(error)) throw error;
    return work(await conn.table(ref, { fresh: true }));
  }
}

function qualified(dialect: { quote(identifier: string): string }, table: TableRef): string {
  return `${dialect.quote(table.schema)}.${dialect.quote(table.name)}`;
}

/** One page of a table in key order (without a key, the dialect's order, or none), its columns and total. */
export async function readRows<C extends CatalogColumn, T extends EstimatedTable<C>>(
  dialect: SqlDialect<C, T>,
  conn: SqlConnection<T>,
  ref: TableRef,
  page: { limit: number; offset: number },
): Promise<RowsPage> {
  return withTable(conn, ref, (table) => readPage(dialect, conn, table, page));
}

async function readPage<C extends CatalogColumn, T extends EstimatedTable<C>>(
  dialect: SqlDialect<C, T>,
  conn: SqlConnection<T>,
  table: T,
  page: { limit: number; offset: number },
): Promise<RowsPage> {
  const key = primaryKeyColumns(table);
  const order = key.length ? key.map((c) => dialect.quote(c.name)) : dialect.orderWithoutKey(table);
  const columns = table.columns.map((c) => dialect.quote(c.name)).join(', ') || '*';
  const sql = `SELECT ${columns} FROM ${qualified(dialect, table)}${order.length ? ` ORDER BY ${order.join(', ')}` : ''} LIMIT ${dialect.placeholder(1)} OFFSET ${dialect.placeholder(2)}`;
  const params = [dialect.pageParam(page.limit), dialect.pageParam(page.offset)];
  let rows: Row[];
  if (conn.selectRows) rows = await conn.selectRows(sql, params);
  else {
    const names = table.columns.map((c) => c.name);
    rows = (await conn.select(sql, params)).map((row) => rowOf(names, row, toCell));
  }
  const total = await boundedCount(dialect, conn, table);
  return {
    columns: table.columns.map((c) => ({ name: c.name, type: c.type, primary: c.keyPosition !== null })),
    rows,
    // A page read past an estimate's end still shows the rows it found.
    total: Math.max(total, page.offset + rows.length),
  };
}

/** Inserts one row; its id is the key as RETURNING gave it, or as given with the auto-increment value the server assigned. */
export async function insertRow<C extends CatalogColumn & { autoIncrement?: boolean }, T extends EstimatedTable<C>>(
  dialect: SqlDialect<C, T>,
  conn: SqlConnection<T>,
  ref: TableRef,
  values: Row,
): Promise<{ id: CellValue }> {
  return fresh(conn, ref, (table) => insertInto(dialect, conn, table, values));
}

async function insertInto<C extends CatalogColumn & { autoIncrement?: boolean }, T extends EstimatedTable<C>>(
  dialect: SqlDialect<C, T>,
  conn: SqlConnection<T>,
  table: T,
  values: Row,
): Promise<{ id: CellValue }> {
  const given = checkColumns(table, values, 'values') as Array<[C, CellValue]>;
  const key = primaryKeyColumns(table) as C[];
  const returning = dialect.returning && key.length ? ` RETURNING ${key.map((c) => dialect.quote(c.name)).join(', ')}` : '';
  const sql = given.length
    ? `INSERT INTO ${qualified(dialect, table)} (${given.map(([c]) => dialect.quote(c.name)).join(', ')}) VALUES (${given.map((_, i) => dialect.placeholder(i + 1)).join(', ')})${returning}`
    : `INSERT INTO ${qualified(dialect, table)} ${dialect.insertDefaults}${returning}`;
  const result = await conn.write(
    sql,
    given.map(([c, v]) => dialect.param(c, v)),
  );
  if (dialect.returning) {
    const inserted = result.returned;
    return { id: inserted ? keyId(key, Object.fromEntries(Object.entries(inserted).map(([k, v]) => [k, toCell(v)]))) : null };
  }
  // A key filled by a default expression cannot be known without a second read and stays null.
  const givenByName = new Map(given.map(([c, v]) => [c.name, v]));
  const row: Row = {};
  for (const c of key) row[c.name] = givenByName.has(c.name) ? givenByName.get(c.name)! : c.autoIncrement ? toCell(result.insertId) : null;
  return { id: keyId(key, row) };
}

/** Changes the row named by its whole primary key: NotFoundError('row') when none has it. */
export async function updateRow<C extends CatalogColumn, T extends EstimatedTable<C>>(
  dialect: SqlDialect<C, T>,
  conn: SqlConnection<T>,
  ref: TableRef,
  primaryKey: Row,
  values: Row,
): Promise<void> {
  await fresh(conn, ref, async (table) => {
    const key = checkPrimaryKey(table, primaryKey) as Array<[C, CellValue]>;
    const set = checkUpdateValues(table, values) as Array<[C, CellValue]>;
    const sql =
      `UPDATE ${qualified(dialect, table)} SET ${set.map(([c], i) => `${dialect.quote(c.name)} = ${dialect.placeholder(i + 1)}`).join(', ')}` +
      ` WHERE ${key.map(([c], i) => `${dialect.quote(c.name)} = ${dialect.placeholder(set.length + i + 1)}`).join(' AND ')}`;
    const result = await conn.write(
      sql,
      [...set, ...key].map(([c, v]) => dialect.param(c, v)),
    );
    if (result.affected === 0) throw new NotFoundError('row', rowId(table, key));
  });
}

/** Deletes the row named by its whole primary key: NotFoundError('row') when none has it. */
export async function deleteRow<C extends CatalogColumn, T extends EstimatedTable<C>>(
  dialect: SqlDialect<C, T>,
  conn: SqlConnection<T>,
  ref: TableRef,
  primaryKey: Row,
): Promise<void> {
  await fresh(conn, ref, async (table) => {
    const key = checkPrimaryKey(table, primaryKey) as Array<[C, CellValue]>;
    const sql = `DELETE FROM ${qualified(dialect, table)} WHERE ${key.map(([c], i) => `${dialect.quote(c.name)} = ${dialect.placeholder(i + 1)}`).join(' AND ')}`;
    const result = await conn.write(
      sql,
      key.map(([c, v]) => dialect.param(c, v)),
    );
    if (result.affected === 0) throw new NotFoundError('row', rowId(table, key));
  });
}

function countOrEstimate(counted: number, estimate: number): number {
  return counted > EXACT_COUNT_LIMIT ? Math.max(counted, Math.round(estimate)) : counted;
}

function countSql(dialect: { quote(identifier: string): string }, table: TableRef): string {
  // The limit is our constant, not a value: written as digits, the same statement for every engine.
  return `SELECT COUNT(*) AS n FROM (SELECT 1 FROM ${qualified(dialect, table)} LIMIT ${EXACT_COUNT_LIMIT + 1}) x`;
}

/** A table's rows: counted exactly up to EXACT_COUNT_LIMIT (a scan stopped after that many), the engine's estimate above it. */
export async function boundedCount<T extends TableRef & { estimate: number }>(
  dialect: { quote(identifier: string): string },
  conn: SqlConnection<unknown>,
  table: T,
): Promise<number> {
  if (table.estimate > EXACT_COUNT_LIMIT) return Math.round(table.estimate);
  const [row] = await conn.select(countSql(dialect, table), []);
  return countOrEstimate(Number(row?.[0] ?? 0), table.estimate);
}

/**
 * Row counts of many tables (the tables list), as boundedCount: counted in batches of one UNION ALL each;
 * a batch that fails (a view that errors) is counted table by table, a failure standing at the estimate.
 */
export async function countMany(
  dialect: { quote(identifier: string): string },
  conn: SqlConnection<unknown>,
  tables: Array<TableRef & { estimate: number; readable?: boolean }>,
): Promise<number[]> {
  const counts = tables.map((t) => Math.max(0, Math.round(t.estimate)));
  const toCount = tables.map((t, i) => ({ t, i })).filter(({ t }) => t.readable !== false && t.estimate <= EXACT_COUNT_LIMIT);
  for (let start = 0; start < toCount.length; start += 50) {
    const batch = toCount.slice(start, start + 50);
    const sql = batch
      .map(
        ({ t, i }) => `SELECT ${i} AS i, COUNT(*) AS n FROM (SELECT 1 FROM ${qualified(dialect, t)} LIMIT ${EXACT_COUNT_LIMIT + 1}) x${i}`,
      )
      .join(' UNION ALL ');
    try {
      for (const [i, n] of await conn.select(sql, [])) counts[Number(i)] = countOrEstimate(Number(n), tables[Number(i)]!.estimate);
    } catch (error) {
      if (!conn.refused(error)) throw error;
      for (const { t, i } of batch) {
        try {
          counts[i] = await boundedCount(dialect, conn, t);
        } catch (inner) {
          if (!conn.refused(inner)) throw inner;
        }
      }
    }
  }
  return counts;
}
