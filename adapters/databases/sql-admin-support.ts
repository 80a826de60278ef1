import type { CellValue, QueryLimits, Row, TableRef } from '../../src/databases/database-admin.port.js';
import { NotFoundError, NotRunningError, ValidationError } from '../../src/domain/errors.js';

/**
 * What the three SQL adapters (PostgreSQL, MySQL, ClickHouse) share: the checks of identifiers against
 * a catalog they read, of paging and query limits, the row cap, and the recognition of connections
 * that could not be made. Each adapter reads its own catalog; everything here works on that reading.
 */

/** Options of every SQL adapter; tests shorten the idle time to see pools close. */
export interface SqlAdminOptions {
  /** A pool unused this long is closed (its connections with it). */
  idleMs?: number;
  /** Opening one connection (TCP and handshake) gives up after this long: `NotRunningError`. */
  connectTimeoutMs?: number;
  /** Connections per service: admin traffic is one person clicking, a few suffice. */
  maxConnections?: number;
  /** Catalog reads, counts and row pages are cancelled by the engine after this long. */
  internalTimeoutMs?: number;
}

export const SQL_ADMIN_DEFAULTS = {
  idleMs: 60_000,
  connectTimeoutMs: 5_000,
  maxConnections: 3,
  internalTimeoutMs: 30_000,
} as const satisfies Required<SqlAdminOptions>;

/**
 * Row counts are exact up to this many rows; beyond it an engine's estimate stands in, since counting
 * tens of millions of rows to draw a table list or a page footer would take seconds per table.
 */
export const EXACT_COUNT_LIMIT = 100_000;

/** Bounds of what a caller may ask for: one query result is held in memory whole (a page's bound: rows-page.ts). */
export const MAX_ROW_CAP = 100_000;
export const MAX_QUERY_TIMEOUT_MS = 10 * 60_000;

/** A column as an adapter read it from its engine's catalog. */
export interface CatalogColumn {
  name: string;
  /** The engine's own type name, shown to the user. */
  type: string;
  /** 1-based position in the primary key, null when not part of it. */
  keyPosition: number | null;
}

export interface CatalogTable {
  schema: string;
  name: string;
  /** In the table's column order. */
  columns: CatalogColumn[];
}

export function tableId(table: TableRef): string {
  return `${table.schema}.${table.name}`;
}

/** The table a catalog lookup found, or the port's 404 for the id the caller gave. */
export function requireTable<T extends CatalogTable>(found: T | null | undefined, ref: TableRef): T {
  if (!found) throw new NotFoundError('table', tableId(ref));
  return found;
}

/** A table ref that cannot name anything (not strings, empty) is a 404 like any unknown table, never SQL. */
export function checkTableRef(ref: TableRef): TableRef {
  if (typeof ref?.schema !== 'string' || typeof ref.name !== 'string' || ref.name === '' || ref.schema === '') {
    throw new NotFoundError('table', `${String(ref?.schema)}.${String(ref?.name)}`);
  }
  return ref;
}

export function checkQuery(text: string, limits: QueryLimits): void {
  if (typeof text !== 'string' || text.trim() === '') throw new ValidationError('query', 'the query is empty');
  if (!Number.isSafeInteger(limits.rowCap) || limits.rowCap < 1 || limits.rowCap > MAX_ROW_CAP) {
    throw new ValidationError('rowCap', `rowCap must be an integer from 1 to ${MAX_ROW_CAP}`);
  }
  if (!Number.isSafeInteger(limits.timeoutMs) || limits.timeoutMs < 1 || limits.timeoutMs > MAX_QUERY_TIMEOUT_MS) {
    throw new ValidationError('timeoutMs', `timeoutMs must be an integer from 1 to ${MAX_QUERY_TIMEOUT_MS}`);
  }
}

function columnMap(table: CatalogTable): Map<string, CatalogColumn> {
  return new Map(table.columns.map((c) => [c.name, c]));
}

/** The columns `values` names, in its order, each known to the catalog; `field` names the input in errors. */
export function checkColumns(table: CatalogTable, values: Row, field: 'values' | 'primaryKey'): Array<[CatalogColumn, CellValue]> {
  if (typeof values !== 'object' || values === null || Array.isArray(values)) {
    throw new ValidationError(field, `${field} must be an object of column names to values`);
  }
  const byName = columnMap(table);
  return Object.entries(values).map(([name, value]) => {
    const column = byName.get(name);
    if (!column) throw new ValidationError(field, `unknown column ${JSON.stringify(name)}`);
    return [column, value];
  });
}

export function primaryKeyColumns(table: CatalogTable): CatalogColumn[] {
  return table.columns.filter((c) => c.keyPosition !== null).sort((a, b) => a.keyPosition! - b.keyPosition!);
}

export function noPrimaryKey(table: TableRef, reason = 'rows cannot be addressed one by one'): ValidationError {
  return new ValidationError('table', `table ${JSON.stringify(table.name)} has no primary key: ${reason}`);
}

/**
 * The primary key of an update or delete: exactly the table's key columns, none null, in key order.
 * A table without a key refuses first, so a caller learns that before fixing a key it cannot have.
 */
export function checkPrimaryKey(table: CatalogTable, primaryKey: Row): Array<[CatalogColumn, CellValue]> {
  const keyColumns = primaryKeyColumns(table);
  if (keyColumns.length === 0) throw noPrimaryKey(table);
  const given = new Map(checkColumns(table, primaryKey, 'primaryKey').map(([c, v]) => [c.name, v]));
  for (const name of given.keys()) {
    if (!keyColumns.some((c) => c.name === name)) {
      throw new ValidationError(
        'primaryKey',
        `column ${JSON.stringify(name)} is not part of the primary key (${keyColumns.map((c) => c.name).join(', ')})`,
      );
    }
  }
  return keyColumns.map((column) => {
    if (!given.has(column.name))
      throw new ValidationError('primaryKey', `missing column ${JSON.stringify(column.name)} of the primary key`);
    const value = given.get(column.name)!;
    if (value === null) throw new ValidationError('primaryKey', `column ${JSON.stringify(column.name)} is null: a key value is never null`);
    return [column, value];
  });
}

export function checkUpdateValues(table: CatalogTable, values: Row): Array<[CatalogColumn, CellValue]> {
  const columns = checkColumns(table, values, 'values');
  if (columns.length === 0) throw new ValidationError('values', 'no column to update');
  return columns;
}

/** How a row is named in a 404: its table and key, as the caller gave them. */
export function rowId(table: TableRef, key: Array<[CatalogColumn, CellValue]>): string {
  return `${tableId(table)} ${JSON.stringify(Object.fromEntries(key.map(([c, v]) => [c.name, v])))}`;
}

/** The id of an inserted row: the key's single value, or an object when the key has several columns. */
export function keyId(keyColumns: CatalogColumn[], row: Row): CellValue {
  if (keyColumns.length === 0) return null;
  if (keyColumns.length === 1) return row[keyColumns[0]!.name] ?? null;
  return Object.fromEntries(keyColumns.map((c) => [c.name, row[c.name] ?? null]));
}

/**
 * Names a result's columns uniquely (`a`, `a_2`): rows are objects keyed by column name, and
 * `SELECT 1 AS a, 2 AS a` would otherwise lose a value without a word.
 */
export function uniqueNames(names: string[]): string[] {
  const seen = new Set<string>();
  return names.map((name) => {
    let unique = name;
    for (let n = 2; seen.has(unique); n++) unique = `${name}_${n}`;
    seen.add(unique);
    return unique;
  });
}

/** Zips a driver's array row with the (unique) column names, each value through the adapter's cell form. */
export function rowOf(names: string[], values: readonly unknown[], cell: (value: unknown, index: number) => CellValue): Row {
  const row: Row = {};
  for (let i = 0; i < names.length; i++) row[names[i]!] = cell(values[i], i);
  return row;
}

/**
 * Collects at most `cap` rows and notices a row beyond it: the adapters read `cap + 1` rows at most,
 * so `truncated` is known without reading (or holding) the rest.
 */
export class RowCap {
  readonly rows: Row[] = [];
  truncated = false;
  constructor(private readonly cap: number) {}

  /** False once the cap is passed: the caller stops reading. */
  push(row: Row): boolean {
    if (this.rows.length >= this.cap) {
      this.truncated = true;
      return false;
    }
    this.rows.push(row);
    return true;
  }
}

/** Runs `onAbort` once if the signal aborts; the returned function detaches it. */
export function onAbort(signal: AbortSignal, onAbort: () => void): () => void {
  if (signal.aborted) {
    onAbort();
    return () => undefined;
  }
  signal.addEventListener('abort', onAbort, { once: true });
  return () => signal.removeEventListener('abort', onAbort);
}

/**
 * Waits for `promise` unless the signal aborts first; a value that arrives after the abort (a pooled
 * connection still being opened) is handed to `lateValue` so it is given back, not leaked.
 */
export async function untilAborted<T>(promise: Promise<T>, signal: AbortSignal, lateValue: (value: T) => void): Promise<T> {
  if (signal.aborted) {
    promise.then(lateValue, () => undefined);
    throw signal.reason;
  }
  let detach = () => undefined as void;
  const aborted = new Promise<never>((_, reject) => {
    detach = onAbort(signal, () => reject(signal.reason));
  });
  try {
    return await Promise.race([promise, aborted]);
  } catch (error) {
    if (signal.aborted) promise.then(lateValue, () => undefined);
    throw error;
  } finally {
    detach();
  }
}

const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  'ECONNABORTED',
  'ESOCKETTIMEDOUT',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_SOCKET',
]);

/** A network-level failure (no server listening, unreachable, cut): a code on the error or its cause. */
export function connectionFailureCode(error: unknown): string | null {
  for (let e: unknown = error, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && CONNECTION_CODES.has(code)) return code;
    const errors = (e as { errors?: unknown }).errors;
    if (Array.isArray(errors)) {
      // Node's happy-eyeballs connect rejects with an AggregateError of one failure per address.
      const inner = errors.map(connectionFailureCode).find((c) => c !== null);
      if (inner) return inner;
    }
  }
  return null;
}

export function notRunning(engine: string, host: string, port: number, reason: string): NotRunningError {
  return new NotRunningError(`${engine} at ${host}:${port} does not accept connections (${reason})`, { reason });
}

/** Removes secrets from a message in case a driver echoes one (a URL, a failed SET). */
export function redact(message: string, secrets: Array<string | undefined>): string {
  let out = message;
  for (const secret of secrets) if (secret && secret.length >= 3) out = out.split(secret).join('***');
  return out;
}

/** `\x` + hex, the API's binary form, as bytes for a binary column; anything else passes unchanged. */
export function binaryParam(value: CellValue): CellValue | Buffer {
  if (typeof value === 'string' && /^\\x(?:[0-9a-fA-F]{2})*$/.test(value)) return Buffer.from(value.slice(2), 'hex');
  return value;
}

/** Starts a timer the event loop does not wait for; the returned function stops it. */
export function timer(ms: number, fire: () => void): () => void {
  const t = setTimeout(fire, ms);
  t.unref();
  return () => clearTimeout(t);
}
