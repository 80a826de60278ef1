import type { DatabaseEndpoint, DatabaseReadiness } from '../domain/database-engines.js';
import type { ColumnInfo, QueryResultView, RowsView, TableEntry } from './database-views.js';

/** The shapes the API answers are declared once, as zod views (database-views.ts); the port uses their types. */
export type { ColumnInfo, TableEntry };

// Declared in the domain: deployments check a new server's readiness through the same endpoint.
export type { DatabaseEndpoint } from '../domain/database-engines.js';

/**
 * A value as the API carries it. What JSON cannot carry comes back as one string form (docs/decisions.md):
 * integers beyond 2^53 and decimals as their decimal digits, binary as `\x` + lower-case hex,
 * timestamps and dates as ISO 8601 (`Z` when the engine stores the zone), ObjectId as its 24 hex digits.
 */
export type CellValue = string | number | boolean | null | CellValue[] | { [key: string]: CellValue };
export type Row = Record<string, CellValue>;

export interface TableRef {
  schema: string;
  name: string;
}

/** A page as an adapter reads it: the view's columns and total, its rows as the adapter's cells. */
export type RowsPage = Pick<RowsView, 'columns' | 'total'> & { rows: Row[] };

export interface QueryLimits {
  /** The statement is cancelled by the engine after this long. */
  timeoutMs: number;
  /** Rows beyond this are not read (and not held in memory): `truncated` says so. */
  rowCap: number;
}

/** A statement's result as an adapter reads it: the view's shape, its rows as the adapter's cells. */
export type QueryResult = Omit<QueryResultView, 'rows'> & { rows: Row[] };

/**
 * Administration of a user's database, one adapter per engine family. Identifiers are checked against
 * the engine's catalog (an unknown table is `NotFoundError('table', id)`); values are always bound;
 * an engine's refusal is `QueryError` with the engine's message; a connection that cannot be made is
 * `NotRunningError`. Every call honours its AbortSignal.
 */
export interface DatabaseAdmin extends DatabaseReadiness {
  /** `logicalDatabase`: Redis's database number (default 0); other engines ignore it. */
  listTables(db: DatabaseEndpoint, options: { logicalDatabase?: number }, signal: AbortSignal): Promise<TableEntry[]>;
  /** `limit` from 1 to ROWS_PAGE_LIMIT.max (database-views.ts), `offset` from 0: anything else is `ValidationError`. */
  readRows(db: DatabaseEndpoint, table: TableRef, page: { limit: number; offset: number }, signal: AbortSignal): Promise<RowsPage>;
  /** One statement (SQL), one command line (Redis) or one JSON command document (MongoDB). */
  query(db: DatabaseEndpoint, text: string, limits: QueryLimits, signal: AbortSignal): Promise<QueryResult>;
  /** Resolves with the new row's id: its primary key value (an object when the key has several columns). */
  insertRow(db: DatabaseEndpoint, table: TableRef, values: Row, signal: AbortSignal): Promise<{ id: CellValue }>;
  /** A table without a primary key: `ValidationError('table', ...)`. A key that matches nothing: `NotFoundError('row', ...)`. */
  updateRow(db: DatabaseEndpoint, table: TableRef, primaryKey: Row, values: Row, signal: AbortSignal): Promise<void>;
  deleteRow(db: DatabaseEndpoint, table: TableRef, primaryKey: Row, signal: AbortSignal): Promise<void>;
  /** Closes the pooled connections of one service (stopped, deleted, credentials changed). */
  release(serviceId: string): Promise<void>;
  closeAll(): Promise<void>;
}
