import type { TableRef } from '../../src/databases/database-admin.port.js';
import type { ClickHouseConnection, ServerMeta } from './clickhouse-connection.js';
import { isRefusal } from './clickhouse-errors.js';
import { splitTopLevel } from './clickhouse-values.js';
import { type CatalogColumn, type CatalogTable, checkTableRef, EXACT_COUNT_LIMIT, requireTable } from './sql-admin-support.js';

/**
 * A ClickHouse database's catalog as the adapter reads it: its tables, their columns and keys, row
 * counts and mutations. 18.16 binds no values, so the service database's whole system.tables and
 * system.columns are read and names matched here; what the server's catalog lacks is asked of ServerMeta.
 */

export interface ChColumn extends CatalogColumn {
  /** Part of the sorting or the partition key: ClickHouse cannot change such a column in place. */
  inStorageKey: boolean;
  /** `DEFAULT`, `MATERIALIZED`, `ALIAS` or empty, with its expression (the server's own text). */
  defaultKind: string;
  defaultExpression: string;
}

export interface ChTable extends CatalogTable {
  columns: ChColumn[];
  engine: string;
  sortingKey: string;
}

interface TableListing {
  name: string;
  engine: string;
  sortingKey: string;
  primaryKey: string;
  totalRows: number | null;
}

/** Backticks doubled as in MySQL; a backslash is ClickHouse's escape inside quotes, so it is doubled too (18.16 and current alike). */
export function quoteClickHouse(identifier: string): string {
  return `\`${identifier.replaceAll('\\', '\\\\').replaceAll('`', '``')}\``;
}

export function qualified(table: TableRef): string {
  return `${quoteClickHouse(table.schema)}.${quoteClickHouse(table.name)}`;
}

/** The plain column names of a key expression's text (`(id, toDate(ts))` -> `id`), in key order. */
export function keyExpressionColumns(expression: string, columns: ReadonlySet<string>): string[] {
  const inner = /^\((.*)\)$/s.exec(expression.trim())?.[1] ?? expression;
  return splitTopLevel(inner)
    .map((part) => (part.startsWith('`') && part.endsWith('`') ? part.slice(1, -1).replace(/``/g, '`').replace(/\\(.)/g, '$1') : part))
    .filter((part) => columns.has(part));
}

/**
 * Each column's place in the primary key (1-based, null outside it). Where the catalog flags key
 * columns (`is_in_primary_key`), those are the key, ordered as the key expression names them, then the
 * rest of them (used inside an expression, `toDate(ts)`) in table order; on servers without the flags,
 * the sorting key's plain columns.
 */
export function primaryKeyPositions(
  columns: ReadonlyArray<{ name: string; inPrimaryKey: boolean | null }>,
  keys: { primaryKey: string; sortingKey: string },
): Array<number | null> {
  const names = new Set(columns.map((c) => c.name));
  const flagged = columns.every((c) => c.inPrimaryKey !== null);
  const inKey = flagged
    ? new Set(columns.filter((c) => c.inPrimaryKey).map((c) => c.name))
    : new Set(keyExpressionColumns(keys.sortingKey, names));
  const order = [
    ...keyExpressionColumns(flagged ? keys.primaryKey || keys.sortingKey : keys.sortingKey, names).filter((n) => inKey.has(n)),
    ...columns.map((c) => c.name).filter((n) => inKey.has(n)),
  ];
  const positions = new Map<string, number>();
  for (const name of order) if (!positions.has(name)) positions.set(name, positions.size + 1);
  return columns.map((c) => positions.get(c.name) ?? null);
}

/** The service database's tables, without the hidden `.inner.` tables of materialized views. */
export async function listTables(conn: ClickHouseConnection, meta: ServerMeta, signal: AbortSignal): Promise<TableListing[]> {
  const { rows } = await conn.select(
    `SELECT name, engine, ${meta.keyExpressions ? 'sorting_key, primary_key' : "'' AS sorting_key, '' AS primary_key"},
            ${meta.totalRows ? 'total_rows' : 'CAST(NULL AS Nullable(UInt64)) AS total_rows'}
       FROM system.tables WHERE database = currentDatabase() AND NOT is_temporary AND NOT startsWith(name, '.inner') ORDER BY name`,
    signal,
  );
  return rows.map((r) => ({
    name: String(r.name),
    engine: String(r.engine),
    sortingKey: String(r.sorting_key ?? ''),
    primaryKey: String(r.primary_key ?? ''),
    totalRows: r.total_rows === null ? null : Number(r.total_rows),
  }));
}

/**
 * Row counts: system.tables.total_rows where the server keeps it (exact for MergeTree and Memory),
 * else the active parts' row sum for MergeTree tables (exact, read from metadata), else count()
 * (other engines are small by design); a view is counted up to EXACT_COUNT_LIMIT + 1 rows.
 */
export async function rowCounts(
  conn: ClickHouseConnection,
  tables: Array<{ name: string; engine: string; totalRows: number | null }>,
  signal: AbortSignal,
): Promise<number[]> {
  const counts = tables.map((t) => t.totalRows);
  if (tables.some((t, i) => counts[i] === null && t.engine.endsWith('MergeTree'))) {
    const { rows } = await conn.select(
      'SELECT table, sum(rows) AS n FROM system.parts WHERE database = currentDatabase() AND active GROUP BY table',
      signal,
    );
    const byTable = new Map(rows.map((r) => [String(r.table), Number(r.n)]));
    tables.forEach((t, i) => {
      if (counts[i] === null && t.engine.endsWith('MergeTree')) counts[i] = byTable.get(t.name) ?? 0;
    });
  }
  for (let i = 0; i < tables.length; i++) {
    if (counts[i] !== null) continue;
    const t = tables[i]!;
    const source =
      t.engine === 'View'
        ? `(SELECT 1 FROM ${quoteClickHouse(conn.database)}.${quoteClickHouse(t.name)} LIMIT ${EXACT_COUNT_LIMIT + 1})`
        : `${quoteClickHouse(conn.database)}.${quoteClickHouse(t.name)}`;
    try {
      const { rows } = await conn.select(`SELECT count() AS n FROM ${source}`, signal);
      counts[i] = Number(rows[0]?.n ?? 0);
    } catch (error) {
      if (!isRefusal(error)) throw error;
      // A table that cannot be counted (a broken view, a Kafka or URL engine) still lists.
      counts[i] = 0;
    }
  }
  return counts.map((c) => c ?? 0);
}

/** The table and its columns from the catalog, matched here by exact name (no bound parameters in 18.16). */
export async function readTable(conn: ClickHouseConnection, meta: ServerMeta, ref: TableRef, signal: AbortSignal): Promise<ChTable> {
  checkTableRef(ref);
  if (ref.schema !== conn.database) requireTable(null, ref);
  const found = (await listTables(conn, meta, signal)).find((t) => t.name === ref.name);
  if (!found) requireTable(null, ref);
  const flags = meta.keyFlags
    ? 'is_in_primary_key, is_in_sorting_key OR is_in_partition_key AS in_storage_key'
    : 'CAST(NULL AS Nullable(UInt8)) AS is_in_primary_key, CAST(NULL AS Nullable(UInt8)) AS in_storage_key';
  const { rows } = await conn.select(
    `SELECT table, name, type, default_kind, default_expression, ${flags} FROM system.columns WHERE database = currentDatabase()`,
    signal,
  );
  const own = rows.filter((r) => r.table === ref.name);
  const positions = primaryKeyPositions(
    own.map((r) => ({ name: String(r.name), inPrimaryKey: r.is_in_primary_key === null ? null : Number(r.is_in_primary_key) === 1 })),
    found!,
  );
  const sortingColumns = new Set(keyExpressionColumns(found!.sortingKey, new Set(own.map((r) => String(r.name)))));
  const columns = own.map((r, i) => ({
    name: String(r.name),
    type: String(r.type),
    keyPosition: positions[i]!,
    inStorageKey: r.in_storage_key === null ? sortingColumns.has(String(r.name)) : Number(r.in_storage_key) === 1,
    defaultKind: String(r.default_kind ?? ''),
    defaultExpression: String(r.default_expression ?? ''),
  }));
  return { schema: conn.database, name: found!.name, engine: found!.engine, sortingKey: found!.sortingKey, columns };
}

/** Columns of the sorting key that are plain columns, in key order: the order the rows are stored in, and of stable pages. */
export function sortingColumns(table: ChTable): string[] {
  return keyExpressionColumns(table.sortingKey, new Set(table.columns.map((c) => c.name)));
}

/** The table's mutations, matched by name here (18.16 binds no values). */
export async function mutations(
  conn: ClickHouseConnection,
  table: TableRef,
  signal: AbortSignal,
): Promise<Array<{ id: string; done: boolean }>> {
  const { rows } = await conn.select('SELECT table, mutation_id, is_done FROM system.mutations WHERE database = currentDatabase()', signal);
  return rows.filter((r) => r.table === table.name).map((r) => ({ id: String(r.mutation_id), done: Number(r.is_done) === 1 }));
}
