import type { CellValue } from '../../src/databases/database-admin.port.js';
import { parseType } from './clickhouse-values.js';

/**
 * Values going to ClickHouse: as JSONEachRow data (inserted rows) or as the values of one statement
 * (row keys, changed values), bound where the server binds and hex-encoded where it does not.
 */

/**
 * A value for a column of `type` as JSONEachRow data: ISO timestamps with a zone become unix seconds
 * (ClickHouse reads those in any column time zone; a wall time without zone is left to the column's zone).
 */
export function jsonValue(type: string, value: CellValue): CellValue {
  if (typeof value !== 'string') return value;
  const base = parseType(type.replace(/^(Nullable|LowCardinality)\((.*)\)$/s, '$2')).name;
  if (base === 'DateTime' || base === 'DateTime64') {
    if (/(Z|[+-]\d{2}:?\d{2})$/.test(value) && /^\d{4}-\d{2}-\d{2}T/.test(value)) {
      const ms = Date.parse(value);
      if (!Number.isNaN(ms)) {
        const fraction = /\.(\d+)/.exec(value)?.[1];
        return base === 'DateTime64' && fraction ? `${Math.floor(ms / 1000)}.${fraction}` : Math.floor(ms / 1000);
      }
    }
    return value.replace('T', ' ');
  }
  return value;
}

/** A string inside an Array/Map literal: quoted, with ClickHouse's backslash escapes. */
function quotedLiteral(text: string): string {
  return `'${text.replace(/[\\'\t\n\r\0]/g, (c) => ({ '\\': '\\\\', "'": "\\'", '\t': '\\t', '\n': '\\n', '\r': '\\r', '\0': '\\0' })[c]!)}'`;
}

function literalText(value: CellValue): string {
  if (value === null) return 'NULL';
  if (typeof value === 'string') return quotedLiteral(value);
  if (typeof value === 'boolean') return value ? '1' : '0';
  if (typeof value === 'number') return String(value);
  if (Array.isArray(value)) return `[${value.map(literalText).join(',')}]`;
  return `{${Object.entries(value)
    .map(([k, v]) => `${quotedLiteral(k)}:${literalText(v)}`)
    .join(',')}}`;
}

/**
 * A value as ClickHouse reads the text of a column of `type` (a CAST from String, a query parameter):
 * a string as it is, a number's digits, an array or a map as its literal, timestamps as unix seconds.
 */
export function valueText(type: string, value: Exclude<CellValue, null>): string {
  const data = jsonValue(type, value);
  if (typeof data === 'string') return data;
  if (typeof data === 'boolean') return data ? '1' : '0';
  return literalText(data);
}

/**
 * The values of one statement. Where the server binds query parameters, each value is one
 * (`{v0:UInt32}`, its text sent beside the statement); elsewhere (18.16) it is a hex literal that the
 * server decodes and casts (`CAST(unhex('3432') AS UInt32)`): hex digits are all a value can put into
 * the statement's text. The type comes from the server's own catalog.
 */
export class ClickHouseBindings {
  readonly params: Record<string, string> = {};
  private next = 0;

  constructor(private readonly serverSide: boolean) {}

  /** An expression of type `type` holding `value`. */
  bind(type: string, value: CellValue): string {
    if (value === null) return 'NULL';
    const text = valueText(type, value);
    if (!this.serverSide) return `CAST(unhex('${Buffer.from(text, 'utf8').toString('hex')}') AS ${type})`;
    const name = `v${this.next++}`;
    this.params[name] = text;
    return `{${name}:${type}}`;
  }
}
