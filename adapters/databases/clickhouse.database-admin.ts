import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type net from 'node:net';
import { Readable } from 'node:stream';
import { isUtf8 } from 'node:buffer';
import { setTimeout as sleep } from 'node:timers/promises';
import { type ClickHouseClient, type ClickHouseSettings, ClickHouseError, ClickHouseLogLevel, createClient } from '@clickhouse/client';
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
import { ConflictError, DomainError, NotFoundError, QueryError, ValidationError } from '../../src/domain/errors.js';
import { binaryCell, toCell } from './cell-values.js';
import { PooledClients } from './pooled-clients.js';
import {
  type CatalogColumn,
  type CatalogTable,
  EXACT_COUNT_LIMIT,
  RowCap,
  SQL_ADMIN_DEFAULTS,
  type SqlAdminOptions,
  checkColumns,
  checkPage,
  checkPrimaryKey,
  checkQuery,
  checkTableRef,
  checkUpdateValues,
  connectionFailureCode,
  keyId,
  notRunning,
  onAbort,
  primaryKeyColumns,
  redact,
  requireTable,
  rowId,
  rowOf,
  timer,
  uniqueNames,
} from './sql-admin-support.js';

/**
 * ClickHouse over its HTTP interface (the service's port 8123) through one `@clickhouse/client` per
 * service. Written for ClickHouse 18.16 (Debian's) and current releases alike; what differs is asked of
 * the server once (its catalog's columns, its settings, a probe), never guessed from its version:
 * - catalog lookups read the service database's whole system.tables/system.columns and match names
 *   here; inserted rows travel as JSONEachRow data in the request body, never in SQL text;
 * - values inside statements (row keys, changed values) are query parameters (`{v0:UInt64}`) where the
 *   server has them (19.x on), and on older servers hex literals the server decodes
 *   (`CAST(unhex('3432') AS UInt64)`): the text of a value is never written into SQL;
 * - results are TabSeparatedWithNamesAndTypes (names and types in two header lines, then rows), parsed
 *   here and streamed, so a capped query reads `rowCap + 1` rows and closes the response;
 * - `total_rows` of system.tables is used where the server has it, else the active parts' row sum
 *   (MergeTree) or count().
 * A row is named by the table's primary key (`system.columns.is_in_primary_key`; the sorting key's
 * plain columns on servers without it). That key sorts and does not make rows unique, so an edit or a
 * deletion first counts the rows with that key: it goes ahead only for exactly one, as a mutation
 * (`ALTER TABLE ... UPDATE/DELETE WHERE`), awaited (`mutations_sync`, or system.mutations polled where
 * the server has no such setting).
 */

interface ChColumn extends CatalogColumn {
  /** Part of the sorting or the partition key: ClickHouse cannot change such a column in place. */
  inStorageKey: boolean;
  /** `DEFAULT`, `MATERIALIZED`, `ALIAS` or empty, with its expression (the server's own text). */
  defaultKind: string;
  defaultExpression: string;
}

interface ChTable extends CatalogTable {
  columns: ChColumn[];
  engine: string;
  sortingKey: string;
}

interface ChService {
  client: ClickHouseClient;
  agent: http.Agent;
  database: string;
  /** What this server has, asked once (its version decides nothing by itself: we look at its catalog). */
  meta: Promise<ServerMeta> | null;
}

interface ServerMeta {
  version: string;
  timezone: string;
  /** system.tables.total_rows exists (it does not in 18.16). */
  totalRows: boolean;
  /** system.columns has is_in_primary_key (and is_in_sorting_key, is_in_partition_key): 18.x on. */
  keyFlags: boolean;
  /** system.tables has sorting_key and primary_key (the key expressions' text). */
  keyExpressions: boolean;
  /** The `mutations_sync` setting exists (it does not in 18.16): an ALTER can wait for its mutation. */
  mutationsSync: boolean;
  /** Query parameters (`{name:Type}`) are bound by the server (they are not in 18.16). */
  queryParameters: boolean;
}

interface ConnectionKey {
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
}

const TSV_WITH_HEADER = 'TabSeparatedWithNamesAndTypes';
/** `Code: 159, e.displayText() = DB::Exception: ...` (18.16) or `Code: 159. DB::Exception: ...` (current). */
const EXCEPTION_LINE = /^Code: \d+(?:, e\.displayText\(\) = |\. )DB::Exception/;
/** A user's statement the server did not stop at its own timeout (whole seconds in 18.16) is cut this much later. */
const WATCHDOG_SLACK_MS = 1_500;

/** Backticks doubled as in MySQL; a backslash is ClickHouse's escape inside quotes, so it is doubled too (18.16 and current alike). */
export function quoteClickHouse(identifier: string): string {
  return `\`${identifier.replaceAll('\\', '\\\\').replaceAll('`', '``')}\``;
}

function qualified(table: TableRef): string {
  return `${quoteClickHouse(table.schema)}.${quoteClickHouse(table.name)}`;
}

/** An HTTP agent whose new sockets give up connecting after `ms`: request_timeout is an idle timeout, too long for that. */
class ConnectTimeoutAgent extends http.Agent {
  constructor(
    private readonly connectTimeoutMs: number,
    options: http.AgentOptions,
  ) {
    super(options);
  }

  override createConnection(options: http.ClientRequestArgs, callback?: (err: Error | null, stream: import('node:stream').Duplex) => void) {
    const socket = super.createConnection(options, callback) as net.Socket | null | undefined;
    if (socket?.connecting) {
      const stop = timer(this.connectTimeoutMs, () =>
        socket.destroy(Object.assign(new Error(`connect timed out after ${this.connectTimeoutMs} ms`), { code: 'ETIMEDOUT' })),
      );
      socket.once('connect', stop);
      socket.once('close', stop);
    }
    return socket;
  }
}

// ---- reading TabSeparated ---------------------------------------------------------------------------

/** Lines of a byte stream; chunks of a long line are joined once, when its end arrives. */
async function* lines(stream: Readable): AsyncGenerator<Buffer> {
  let pending: Buffer[] = [];
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    let start = 0;
    for (let nl = chunk.indexOf(10, start); nl !== -1; nl = chunk.indexOf(10, start)) {
      const piece = chunk.subarray(start, nl);
      yield pending.length ? Buffer.concat([...pending, piece]) : piece;
      pending = [];
      start = nl + 1;
    }
    if (start < chunk.length) pending.push(chunk.subarray(start));
  }
  if (pending.length) yield Buffer.concat(pending);
}

const ESCAPES: Record<number, number> = {
  98: 8,
  102: 12,
  114: 13,
  110: 10,
  116: 9,
  48: 0,
  39: 0x27,
  92: 0x5c,
  34: 0x22,
  97: 7,
  118: 11,
};

/** One TabSeparated field: `\N` is NULL, backslash escapes are undone. */
function unescapeField(field: Buffer): Buffer | null {
  if (field.length === 2 && field[0] === 0x5c && field[1] === 0x4e) return null;
  if (field.indexOf(0x5c) === -1) return field;
  const out = Buffer.allocUnsafe(field.length);
  let n = 0;
  for (let i = 0; i < field.length; i++) {
    const b = field[i]!;
    if (b === 0x5c && i + 1 < field.length) {
      const next = field[++i]!;
      out[n++] = ESCAPES[next] ?? next;
    } else out[n++] = b;
  }
  return out.subarray(0, n);
}

function splitFields(line: Buffer): Buffer[] {
  const fields: Buffer[] = [];
  let start = 0;
  for (let tab = line.indexOf(9, start); tab !== -1; tab = line.indexOf(9, start)) {
    fields.push(line.subarray(start, tab));
    start = tab + 1;
  }
  fields.push(line.subarray(start));
  return fields;
}

function textOf(field: Buffer): string {
  return unescapeField(field)?.toString('utf8') ?? '';
}

// ---- ClickHouse types and values ------------------------------------------------------------------

interface TypeNode {
  name: string;
  args: string[];
}

/** `Array(Nullable(String))` -> { name: 'Array', args: ['Nullable(String)'] }; quotes and nesting respected. */
function parseType(type: string): TypeNode {
  const open = type.indexOf('(');
  if (open === -1 || !type.endsWith(')')) return { name: type.trim(), args: [] };
  return { name: type.slice(0, open).trim(), args: splitTopLevel(type.slice(open + 1, -1)) };
}

function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quote = false;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quote) {
      if (c === '\\') i++;
      else if (c === "'") quote = false;
    } else if (c === "'") quote = true;
    else if (c === '(' || c === '[') depth++;
    else if (c === ')' || c === ']') depth--;
    else if (c === ',' && depth === 0) {
      parts.push(text.slice(start, i).trim());
      start = i + 1;
    }
  }
  const last = text.slice(start).trim();
  if (last) parts.push(last);
  return parts;
}

/** A named tuple element (`a UInt8`) is its type; a quoted argument (`'UTC'`) its unquoted text. */
function elementType(arg: string): string {
  const m = /^[A-Za-z_][A-Za-z0-9_]*\s+([A-Z].*)$/s.exec(arg);
  return m ? m[1]! : arg;
}

function unquote(arg: string | undefined): string | undefined {
  return arg?.startsWith("'") ? arg.slice(1, -1).replace(/\\(.)/g, '$1') : undefined;
}

const SMALL_INTS = new Set(['UInt8', 'UInt16', 'UInt32', 'Int8', 'Int16', 'Int32']);
const BIG_INTS = new Set(['UInt64', 'Int64', 'UInt128', 'Int128', 'UInt256', 'Int256']);
const UTC_ZONES = new Set(['UTC', 'Etc/UTC', 'GMT', 'Etc/GMT', 'Universal', 'Zulu', 'UCT', 'Etc/UCT']);

const zoneFormats = new Map<string, Intl.DateTimeFormat | null>();

/** `2024-01-02 03:04:05[.123]` in zone `tz` -> ISO 8601 in UTC with `Z`, the fraction kept; unknown zones keep the text. */
export function wallTimeToIso(text: string, tz: string): string {
  const m = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(\.\d+)?$/.exec(text);
  if (!m || m[1] === '0000') return text;
  const fraction = m[7] ?? '';
  if (UTC_ZONES.has(tz)) return `${m[1]}-${m[2]}-${m[3]}T${m[4]}:${m[5]}:${m[6]}${fraction}Z`;
  let format = zoneFormats.get(tz);
  if (format === undefined) {
    try {
      format = new Intl.DateTimeFormat('en-US', {
        timeZone: tz,
        hourCycle: 'h23',
        year: 'numeric',
        month: 'numeric',
        day: 'numeric',
        hour: 'numeric',
        minute: 'numeric',
        second: 'numeric',
      });
    } catch {
      format = null;
    }
    zoneFormats.set(tz, format);
  }
  if (!format) return text;
  const wall = Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!);
  const offsetAt = (instant: number) => {
    const p = Object.fromEntries(format.formatToParts(new Date(instant)).map((x) => [x.type, Number(x.value)]));
    return Date.UTC(p.year!, p.month! - 1, p.day!, p.hour!, p.minute!, p.second!) - instant;
  };
  let utc = wall - offsetAt(wall);
  const second = wall - offsetAt(utc);
  if (second !== utc) utc = second;
  return `${new Date(utc).toISOString().slice(0, 19)}${fraction}Z`;
}

/** A scalar's text as the API's value, by its ClickHouse type (wrappers already removed). */
function scalar(text: string, type: TypeNode, serverTz: string): CellValue {
  const name = type.name;
  if (SMALL_INTS.has(name)) return Number(text);
  if (BIG_INTS.has(name)) return /^-?\d+$/.test(text) ? toCell(BigInt(text)) : text;
  if (name === 'Float32' || name === 'Float64') {
    if (text === 'inf' || text === '+inf') return toCell(Infinity);
    if (text === '-inf') return toCell(-Infinity);
    if (text === 'nan' || text === '-nan') return toCell(NaN);
    return Number(text);
  }
  if (name === 'Bool') return text === 'true' || text === '1';
  if (name === 'DateTime') return wallTimeToIso(text, unquote(type.args[0]) ?? serverTz);
  if (name === 'DateTime64') return wallTimeToIso(text, unquote(type.args[1]) ?? serverTz);
  if (name === 'Nothing') return null;
  return text;
}

/** Literals inside Array/Tuple/Map text: `[1,'a\'b',NULL,(2,'c')]`, `{'k':1}`. */
type Literal = { s: string } | { raw: string } | null | Literal[] | { pairs: Array<[Literal, Literal]> };

function parseLiteral(text: string): Literal {
  let i = 0;
  const value = (): Literal => {
    const c = text[i];
    if (c === '[' || c === '(') {
      const close = c === '[' ? ']' : ')';
      i++;
      const items: Literal[] = [];
      while (i < text.length && text[i] !== close) {
        items.push(value());
        if (text[i] === ',') i++;
      }
      i++;
      return items;
    }
    if (c === '{') {
      i++;
      const entries: Array<[Literal, Literal]> = [];
      while (i < text.length && text[i] !== '}') {
        const k = value();
        if (text[i] === ':') i++;
        entries.push([k, value()]);
        if (text[i] === ',') i++;
      }
      i++;
      return { pairs: entries };
    }
    if (c === "'") {
      let out = '';
      for (i++; i < text.length && text[i] !== "'"; i++) {
        if (text[i] === '\\' && i + 1 < text.length) {
          const next = text[++i]!;
          out +=
            next === 'n'
              ? '\n'
              : next === 't'
                ? '\t'
                : next === 'r'
                  ? '\r'
                  : next === '0'
                    ? '\0'
                    : next === 'b'
                      ? '\b'
                      : next === 'f'
                        ? '\f'
                        : next;
        } else out += text[i];
      }
      i++;
      return { s: out };
    }
    const start = i;
    while (i < text.length && !',])}:'.includes(text[i]!)) i++;
    const raw = text.slice(start, i).trim();
    return raw === 'NULL' ? null : { raw };
  };
  return value();
}

/** Turns a ClickHouse text value of `type` into the API's form; composite values through their literal. */
function converter(typeText: string, serverTz: string): (text: string) => CellValue {
  const type = parseType(typeText);
  if (type.name === 'Nullable' || type.name === 'LowCardinality' || type.name === 'SimpleAggregateFunction') {
    return converter(type.args[type.args.length - 1]!, serverTz);
  }
  if (type.name === 'Array' || type.name === 'Tuple' || type.name === 'Map') {
    const fromLiteral = literalConverter(typeText, serverTz);
    return (text) => fromLiteral(parseLiteral(text));
  }
  return (text) => scalar(text, type, serverTz);
}

function literalConverter(typeText: string, serverTz: string): (literal: Literal) => CellValue {
  const type = parseType(typeText);
  if (type.name === 'Nullable' || type.name === 'LowCardinality') return literalConverter(type.args[0]!, serverTz);
  if (type.name === 'Array') {
    const inner = literalConverter(elementType(type.args[0]!), serverTz);
    return (l) => (Array.isArray(l) ? l.map(inner) : null);
  }
  if (type.name === 'Tuple') {
    const inners = type.args.map((a) => literalConverter(elementType(a), serverTz));
    return (l) => (Array.isArray(l) ? l.map((x, k) => (inners[k] ?? literalConverter('String', serverTz))(x)) : null);
  }
  if (type.name === 'Map') {
    const key = literalConverter(type.args[0]!, serverTz);
    const val = literalConverter(type.args[1]!, serverTz);
    return (l) => (l && !Array.isArray(l) && 'pairs' in l ? Object.fromEntries(l.pairs.map(([k, v]) => [String(key(k)), val(v)])) : null);
  }
  return (l) => {
    if (l === null) return null;
    if (Array.isArray(l) || 'pairs' in l) return JSON.stringify(l);
    return scalar('s' in l ? l.s : l.raw, type, serverTz);
  };
}

function isComposite(typeText: string): boolean {
  const t = parseType(typeText);
  if (t.name === 'Nullable' || t.name === 'LowCardinality') return isComposite(t.args[0]!);
  return t.name === 'Array' || t.name === 'Tuple' || t.name === 'Map';
}

/** String and FixedString hold bytes: valid UTF-8 is text, anything else the API's `\x` hex. */
function isByteString(typeText: string): boolean {
  const t = parseType(typeText);
  if (t.name === 'Nullable' || t.name === 'LowCardinality') return isByteString(t.args[0]!);
  return t.name === 'String' || t.name === 'FixedString';
}

/**
 * Reads a TabSeparatedWithNamesAndTypes body into at most `cap` rows (`cap + 1` noticed, then the
 * response is dropped by `stop`). A body in another format (a FORMAT clause of the user's) is shown
 * as its lines, one `result` column. An exception ClickHouse writes after rows had started is thrown.
 */
async function readTsv(
  stream: Readable,
  cap: RowCap,
  serverTz: string,
  stop: () => void,
): Promise<{ columns: Array<{ name: string; type: string }> }> {
  let names: string[] | null = null;
  let columns: Array<{ name: string; type: string }> = [];
  let convert: Array<(field: Buffer) => CellValue> = [];
  let raw = false;
  let first: Buffer | null = null;
  for await (const line of lines(stream)) {
    if (raw) {
      if (!cap.push({ result: line.toString('utf8') })) break;
      continue;
    }
    if (first === null && names === null) {
      first = line;
      continue;
    }
    if (names === null) {
      const header = splitFields(first!).map(textOf);
      const types = splitFields(line).map(textOf);
      if (header.length !== types.length || !types.every((t) => /^[A-Z][A-Za-z0-9_]*(\(.*\))?$/s.test(t))) {
        raw = true;
        columns = [{ name: 'result', type: 'String' }];
        if (!cap.push({ result: first!.toString('utf8') }) || !cap.push({ result: line.toString('utf8') })) break;
        continue;
      }
      names = uniqueNames(header);
      columns = names.map((name, k) => ({ name, type: types[k]! }));
      convert = types.map((type) => {
        const fromText = converter(type, serverTz);
        const bytes = isByteString(type);
        if (isComposite(type)) {
          // Arrays, tuples and maps are written as literals whose strings carry their own escapes:
          // TabSeparated does not escape them a second time.
          return (field: Buffer) =>
            field.length === 2 && field[0] === 0x5c && field[1] === 0x4e ? null : fromText(field.toString('utf8'));
        }
        return (field: Buffer) => {
          const value = unescapeField(field);
          if (value === null) return null;
          if (bytes && !isUtf8(value)) return binaryCell(value);
          return fromText(value.toString('utf8'));
        };
      });
      continue;
    }
    // An exception after rows had started comes as a line of text in the body (the status was sent already).
    if (line.length > 10 && line[0] === 0x43 && EXCEPTION_LINE.test(line.subarray(0, 200).toString('latin1')))
      throw chError(line.toString('utf8'));
    const fields = splitFields(line);
    if (!cap.push(rowOf(names, fields, (field, k) => convert[k]!(field as Buffer)))) break;
  }
  if (cap.truncated) stop();
  if (first !== null && names === null && !raw) {
    // A body of one line: no header pair, so not ours.
    columns = [{ name: 'result', type: 'String' }];
    cap.push({ result: first.toString('utf8') });
  }
  return { columns };
}

// ---- values written -------------------------------------------------------------------------------

/**
 * A value for a column of `type` as JSONEachRow data: ISO timestamps with a zone become unix seconds
 * (ClickHouse reads those in any column time zone; a wall time without zone is left to the column's zone).
 */
function jsonValue(type: string, value: CellValue): CellValue {
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

// ---- errors -------------------------------------------------------------------------------------

/** 18.16: `Code: 62, e.displayText() = DB::Exception: <message>, e.what() = DB::Exception`; current: `Code: 62. DB::Exception: <message>. (SYNTAX_ERROR) (version ...)`. */
function chError(text: string): QueryError {
  const old = /Code: (\d+), e\.displayText\(\) = (?:DB::Exception: )?([\s\S]*?)(?:, e\.what\(\) = [\s\S]*)?$/.exec(text.trim());
  if (old) return new QueryError(old[2]!.trim(), { code: Number(old[1]) });
  const current = /Code: (\d+)\. (?:DB::Exception: )?([\s\S]*?)(?: \(([A-Z0-9_]{3,})\))?(?: \(version [^)]*\))?\.?$/.exec(text.trim());
  if (current) return new QueryError(current[2]!.trim(), { code: Number(current[1]), ...(current[3] ? { type: current[3] } : {}) });
  return new QueryError(text.trim());
}

function mapError(error: unknown, db: DatabaseEndpoint, secrets: string[]): Error {
  if (error instanceof DomainError) {
    return error instanceof QueryError ? new QueryError(redact(error.message, secrets), error.details) : error;
  }
  if (error instanceof ClickHouseError) {
    return new QueryError(redact(error.message.trim(), secrets), { code: Number(error.code), type: error.type });
  }
  const code = connectionFailureCode(error);
  if (code) return notRunning('ClickHouse', db.host, db.port, code);
  const message = error instanceof Error ? error.message : String(error);
  if (/Code: \d+/.test(message)) {
    const mapped = chError(message);
    return new QueryError(redact(mapped.message, secrets), mapped.details);
  }
  if (/socket hang up|ECONNRESET|connect timed out/i.test(message)) return notRunning('ClickHouse', db.host, db.port, message);
  return error instanceof Error ? error : new Error(message);
}

// ---- the adapter --------------------------------------------------------------------------------

export class ClickHouseDatabaseAdmin implements DatabaseAdmin {
  private readonly pools: PooledClients<ChService>;
  private readonly options: Required<SqlAdminOptions>;

  constructor(options: SqlAdminOptions = {}) {
    this.options = { ...SQL_ADMIN_DEFAULTS, ...options };
    this.pools = new PooledClients<ChService>(
      async (key) => this.open(JSON.parse(key) as ConnectionKey),
      async (service) => {
        await service.client.close();
        service.agent.destroy();
      },
      this.options.idleMs,
    );
  }

  /** Services with an open client (tests: one per service, closed when idle). */
  get openPools(): number {
    return this.pools.size;
  }

  private async open(key: ConnectionKey): Promise<ChService> {
    const agent = new ConnectTimeoutAgent(this.options.connectTimeoutMs, {
      keepAlive: true,
      maxSockets: this.options.maxConnections,
      maxFreeSockets: this.options.maxConnections,
      // Below ClickHouse's own keep_alive_timeout (3 s in 18.16), so a reused socket is never one it closed.
      timeout: 2_500,
    });
    const client = createClient({
      url: `http://${key.host}:${key.port}`,
      username: key.user,
      password: key.password,
      database: key.database,
      http_agent: agent,
      max_open_connections: this.options.maxConnections,
      // Every call has its own deadline through its abort signal: the socket's idle timeout stays out of the way.
      request_timeout: 24 * 3_600_000,
      compression: { request: false, response: false },
      // The client would log failed requests with their queries and values: errors reach the caller instead.
      log: { level: ClickHouseLogLevel.OFF },
    });
    return { client, agent, database: key.database, meta: null };
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
    work: (service: ChService, meta: ServerMeta) => Promise<T>,
  ): Promise<T> {
    signal.throwIfAborted();
    const key = this.endpointKey(db);
    try {
      return await this.pools.use(db.serviceId, JSON.stringify(key), async (service) => {
        if (!service.meta) {
          service.meta = this.serverMeta(service, signal);
          service.meta.catch(() => (service.meta = null));
        }
        return work(service, await service.meta);
      });
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      throw mapError(error, db, [key.password]);
    }
  }

  private async serverMeta(service: ChService, signal: AbortSignal): Promise<ServerMeta> {
    // /ping answers at once on a running server: a port that accepts and then stays silent (a proxy in
    // front of nothing) is told apart here, on first contact, from a statement that takes its time.
    const deadline = AbortSignal.timeout(this.options.connectTimeoutMs);
    const reach = await service.client.ping({ select: false, abort_signal: AbortSignal.any([signal, deadline]) });
    if (!reach.success) {
      signal.throwIfAborted();
      if (deadline.aborted)
        throw Object.assign(new Error(`no answer to /ping within ${this.options.connectTimeoutMs} ms`), { code: 'ETIMEDOUT' });
      throw reach.error;
    }
    const has = (table: string, column: string) =>
      `(SELECT count() FROM system.columns WHERE database = 'system' AND table = '${table}' AND name = '${column}')`;
    const { rows } = await this.select(
      service,
      'Etc/UTC',
      `SELECT version() AS version, timezone() AS tz, ${has('tables', 'total_rows')} AS total_rows,
              ${has('columns', 'is_in_primary_key')} AS key_flags, ${has('tables', 'primary_key')} AS key_expressions,
              (SELECT count() FROM system.settings WHERE name = 'mutations_sync') AS mutations_sync`,
      signal,
    );
    const row = rows[0]!;
    return {
      version: String(row.version),
      timezone: String(row.tz),
      totalRows: Number(row.total_rows) > 0,
      keyFlags: Number(row.key_flags) > 0,
      keyExpressions: Number(row.key_expressions) > 0,
      mutationsSync: Number(row.mutations_sync) > 0,
      queryParameters: await this.bindsParameters(service, signal),
    };
  }

  /** Whether the server binds query parameters: 18.16 refuses `param_p` as an unknown setting. */
  private async bindsParameters(service: ChService, signal: AbortSignal): Promise<boolean> {
    try {
      const { rows } = await this.select(service, 'Etc/UTC', 'SELECT {p:UInt8} AS ok', signal, { params: { p: '1' } });
      return rows[0]?.ok === 1;
    } catch (error) {
      signal.throwIfAborted();
      if (error instanceof ClickHouseError || /Code: \d+/.test(String((error as Error)?.message))) return false;
      throw error;
    }
  }

  private bindings(meta: ServerMeta): ClickHouseBindings {
    return new ClickHouseBindings(meta.queryParameters);
  }

  /**
   * One HTTP request for one statement, with a deadline and the caller's signal. An abort or a missed
   * deadline cancels the request and kills the statement on the server by the id we gave it (KILL
   * QUERY): 18.16 computes on after its client went away, until it next writes.
   */
  private async request<T>(
    service: ChService,
    signal: AbortSignal,
    timeoutMs: number,
    run: (call: { queryId: string; abortSignal: AbortSignal; cancel: () => void }) => Promise<T>,
  ): Promise<T> {
    const controller = new AbortController();
    const queryId = randomUUID();
    const cancel = (reason: unknown) => {
      controller.abort(reason);
      void this.kill(service, queryId);
    };
    let timedOut = false;
    const detach = onAbort(signal, () => cancel(signal.reason));
    const stopWatchdog = timer(timeoutMs + WATCHDOG_SLACK_MS, () => {
      timedOut = true;
      cancel(new Error('timeout'));
    });
    try {
      return await run({ queryId, abortSignal: controller.signal, cancel: () => cancel(new Error('done reading')) });
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      if (timedOut) throw new QueryError(`the statement ran past its timeout of ${timeoutMs} ms and was cancelled`, { code: 159 });
      throw error;
    } finally {
      stopWatchdog();
      detach();
    }
  }

  /** One statement, its result read as TabSeparatedWithNamesAndTypes into at most `cap` rows, the rest not read. */
  private async select(
    service: ChService,
    serverTz: string,
    query: string,
    signal: AbortSignal,
    options: { cap?: number; timeoutMs?: number; params?: Record<string, string>; settings?: ClickHouseSettings } = {},
  ): Promise<{ columns: Array<{ name: string; type: string }>; rows: Row[]; truncated: boolean; summary: Record<string, string> }> {
    const timeoutMs = options.timeoutMs ?? this.options.internalTimeoutMs;
    return this.request(service, signal, timeoutMs, async ({ queryId, abortSignal, cancel }) => {
      const settings = {
        // Statements without a FORMAT clause answer in our format; DDL and INSERT answer nothing.
        default_format: TSV_WITH_HEADER,
        max_execution_time: Math.max(1, Math.ceil(timeoutMs / 1000)),
        ...options.settings,
      } as ClickHouseSettings;
      const params = options.params && Object.keys(options.params).length > 0 ? { query_params: options.params } : {};
      const result = await service.client.exec({
        query,
        clickhouse_settings: settings,
        query_id: queryId,
        abort_signal: abortSignal,
        ...params,
      });
      const cap = new RowCap(options.cap ?? Number.MAX_SAFE_INTEGER);
      const { columns } = await readTsv(result.stream, cap, serverTz, () => {
        result.stream.destroy();
        cancel();
      });
      const summary = (result as { summary?: Record<string, string> }).summary ?? {};
      return { columns, rows: cap.rows, truncated: cap.truncated, summary };
    });
  }

  /** KILL QUERY for a statement of ours: `queryId` is a UUID we generated, never user input. */
  private async kill(service: ChService, queryId: string): Promise<void> {
    if (!/^[0-9a-f-]{36}$/.test(queryId)) return;
    await service.client
      .command({
        query: `KILL QUERY WHERE query_id = '${queryId}' ASYNC`,
        abort_signal: AbortSignal.timeout(this.options.connectTimeoutMs),
      })
      .catch(() => undefined);
  }

  async checkReady(db: DatabaseEndpoint, signal: AbortSignal): Promise<string> {
    return this.withClient(db, signal, async (service, meta) => {
      const { rows } = await this.select(service, meta.timezone, 'SELECT 1 AS ok', signal);
      if (rows[0]?.ok !== 1) throw new QueryError('SELECT 1 did not answer 1');
      return `SELECT 1 answered (ClickHouse ${meta.version})`;
    });
  }

  async listTables(db: DatabaseEndpoint, _options: { logicalDatabase?: number }, signal: AbortSignal): Promise<TableEntry[]> {
    return this.withClient(db, signal, async (service, meta) => {
      const tables = await this.tables(service, meta, signal);
      const counts = await this.counts(service, meta, tables, signal);
      return tables.map((t, i) => ({ id: `${service.database}.${t.name}`, name: t.name, schema: service.database, rowCount: counts[i]! }));
    });
  }

  /** The service database's tables, without the hidden `.inner.` tables of materialized views. */
  private async tables(
    service: ChService,
    meta: ServerMeta,
    signal: AbortSignal,
  ): Promise<Array<{ name: string; engine: string; sortingKey: string; primaryKey: string; totalRows: number | null }>> {
    const { rows } = await this.select(
      service,
      meta.timezone,
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
  private async counts(
    service: ChService,
    meta: ServerMeta,
    tables: Array<{ name: string; engine: string; totalRows: number | null }>,
    signal: AbortSignal,
  ): Promise<number[]> {
    const counts = tables.map((t) => t.totalRows);
    if (tables.some((t, i) => counts[i] === null && t.engine.endsWith('MergeTree'))) {
      const { rows } = await this.select(
        service,
        meta.timezone,
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
          ? `(SELECT 1 FROM ${quoteClickHouse(service.database)}.${quoteClickHouse(t.name)} LIMIT ${EXACT_COUNT_LIMIT + 1})`
          : `${quoteClickHouse(service.database)}.${quoteClickHouse(t.name)}`;
      try {
        const { rows } = await this.select(service, meta.timezone, `SELECT count() AS n FROM ${source}`, signal);
        counts[i] = Number(rows[0]?.n ?? 0);
      } catch (error) {
        if (!(error instanceof ClickHouseError) && !/Code: \d+/.test(String((error as Error)?.message))) throw error;
        // A table that cannot be counted (a broken view, a Kafka or URL engine) still lists.
        counts[i] = 0;
      }
    }
    return counts.map((c) => c ?? 0);
  }

  /** The table and its columns from the catalog, matched here by exact name (no bound parameters in 18.16). */
  private async table(service: ChService, meta: ServerMeta, ref: TableRef, signal: AbortSignal): Promise<ChTable> {
    checkTableRef(ref);
    if (ref.schema !== service.database) requireTable(null, ref);
    const found = (await this.tables(service, meta, signal)).find((t) => t.name === ref.name);
    if (!found) requireTable(null, ref);
    const flags = meta.keyFlags
      ? 'is_in_primary_key, is_in_sorting_key OR is_in_partition_key AS in_storage_key'
      : 'CAST(NULL AS Nullable(UInt8)) AS is_in_primary_key, CAST(NULL AS Nullable(UInt8)) AS in_storage_key';
    const { rows } = await this.select(
      service,
      meta.timezone,
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
    return { schema: service.database, name: found!.name, engine: found!.engine, sortingKey: found!.sortingKey, columns };
  }

  private async total(service: ChService, meta: ServerMeta, table: ChTable, signal: AbortSignal): Promise<number> {
    const [count] = await this.counts(service, meta, [{ name: table.name, engine: table.engine, totalRows: null }], signal);
    return count!;
  }

  async readRows(db: DatabaseEndpoint, ref: TableRef, page: { limit: number; offset: number }, signal: AbortSignal): Promise<RowsPage> {
    const { limit, offset } = checkPage(page);
    return this.withClient(db, signal, async (service, meta) => {
      const table = await this.table(service, meta, ref, signal);
      // Pages in sorting key order (its plain columns): the order the data is stored in.
      const order = keyExpressionColumns(table.sortingKey, new Set(table.columns.map((c) => c.name)));
      // The two paging numbers are integers checked by checkPage, not values: ClickHouse 18.16 cannot bind them.
      const { rows } = await this.select(
        service,
        meta.timezone,
        `SELECT ${table.columns.map((c) => quoteClickHouse(c.name)).join(', ')} FROM ${qualified(table)}${order.length ? ` ORDER BY ${order.map(quoteClickHouse).join(', ')}` : ''} LIMIT ${limit} OFFSET ${offset}`,
        signal,
      );
      const total = await this.total(service, meta, table, signal);
      return {
        columns: table.columns.map((c) => ({ name: c.name, type: c.type, primary: c.keyPosition !== null })),
        rows,
        total: Math.max(total, offset + rows.length),
      };
    });
  }

  async query(db: DatabaseEndpoint, text: string, limits: QueryLimits, signal: AbortSignal): Promise<QueryResult> {
    checkQuery(text, limits);
    return this.withClient(db, signal, async (service, meta) => {
      const result = await this.select(service, meta.timezone, text, signal, { cap: limits.rowCap, timeoutMs: limits.timeoutMs });
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
    return this.withClient(db, signal, async (service, meta) => {
      const table = await this.table(service, meta, ref, signal);
      const given = checkColumns(table, values, 'values') as Array<[ChColumn, CellValue]>;
      const keyColumns = primaryKeyColumns(table) as ChColumn[];
      const key = keyColumns.length ? await this.keyOfNewRow(service, meta, keyColumns, given, signal) : null;
      const written = new Map<string, CellValue>(given.map(([c, v]) => [c.name, jsonValue(c.type, v)]));
      if (key) {
        // A MATERIALIZED column is the server's to compute: it is answered, never written.
        for (const c of keyColumns)
          if (!written.has(c.name) && c.defaultKind !== 'MATERIALIZED' && c.name in key)
            written.set(c.name, jsonValue(c.type, key[c.name]!));
      }
      const names = [...written.keys()];
      const line = `${JSON.stringify(Object.fromEntries(written))}\n`;
      const query = `INSERT INTO ${qualified(table)}${names.length ? ` (${names.map(quoteClickHouse).join(', ')})` : ''} FORMAT JSONEachRow`;
      await this.request(service, signal, this.options.internalTimeoutMs, async ({ queryId, abortSignal }) => {
        const settings = { max_execution_time: Math.ceil(this.options.internalTimeoutMs / 1000) };
        const result = await service.client.exec({
          query,
          values: Readable.from([line]),
          query_id: queryId,
          abort_signal: abortSignal,
          clickhouse_settings: settings,
        });
        for await (const _ of result.stream) void _;
      });
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
    service: ChService,
    meta: ServerMeta,
    keyColumns: ChColumn[],
    given: Array<[ChColumn, CellValue]>,
    signal: AbortSignal,
  ): Promise<Row | null> {
    const bindings = this.bindings(meta);
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
      const { rows } = await this.select(service, meta.timezone, `SELECT ${expressions.join(', ')}${context}`, signal, {
        params: bindings.params,
      });
      const row = rows[0];
      if (!row) return null;
      return Object.fromEntries(keyColumns.map((c, i) => [c.name, row[`k${i}`] ?? null]));
    } catch (error) {
      signal.throwIfAborted();
      if (!(error instanceof ClickHouseError) && !/Code: \d+/.test(String((error as Error)?.message))) throw error;
      return Object.fromEntries(keyColumns.filter((c) => byName.has(c.name)).map((c) => [c.name, byName.get(c.name)!]));
    }
  }

  /**
   * One row, named by its whole primary key, changed in place by a mutation (`ALTER TABLE ... UPDATE`),
   * when exactly one row has that key. Columns of the sorting or partition key cannot be updated by
   * ClickHouse: such a change is refused before anything runs.
   */
  async updateRow(db: DatabaseEndpoint, ref: TableRef, primaryKey: Row, values: Row, signal: AbortSignal): Promise<void> {
    await this.withClient(db, signal, async (service, meta) => {
      const table = await this.table(service, meta, ref, signal);
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
      const bindings = this.bindings(meta);
      const where = this.keyCondition(key, bindings);
      await this.requireOneRow(service, meta, table, key, where, bindings, signal);
      const assignments = set.map(([c, v]) => `${quoteClickHouse(c.name)} = ${bindings.bind(c.type, v)}`).join(', ');
      await this.mutate(service, meta, table, `UPDATE ${assignments} WHERE ${where}`, bindings, signal);
    });
  }

  /** One row, named by its whole primary key, deleted by a mutation (`ALTER TABLE ... DELETE`), when exactly one row has that key. */
  async deleteRow(db: DatabaseEndpoint, ref: TableRef, primaryKey: Row, signal: AbortSignal): Promise<void> {
    await this.withClient(db, signal, async (service, meta) => {
      const table = await this.table(service, meta, ref, signal);
      const key = checkPrimaryKey(table, primaryKey) as Array<[ChColumn, CellValue]>;
      const bindings = this.bindings(meta);
      const where = this.keyCondition(key, bindings);
      await this.requireOneRow(service, meta, table, key, where, bindings, signal);
      await this.mutate(service, meta, table, `DELETE WHERE ${where}`, bindings, signal);
    });
  }

  private keyCondition(key: Array<[ChColumn, CellValue]>, bindings: ClickHouseBindings): string {
    return key.map(([c, v]) => `${quoteClickHouse(c.name)} = ${bindings.bind(c.type, v)}`).join(' AND ');
  }

  /** A key names one row or none: ClickHouse keys are not unique, so several rows are refused with how many. */
  private async requireOneRow(
    service: ChService,
    meta: ServerMeta,
    table: ChTable,
    key: Array<[ChColumn, CellValue]>,
    where: string,
    bindings: ClickHouseBindings,
    signal: AbortSignal,
  ): Promise<void> {
    const { rows } = await this.select(service, meta.timezone, `SELECT count() AS n FROM ${qualified(table)} WHERE ${where}`, signal, {
      params: bindings.params,
    });
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
    service: ChService,
    meta: ServerMeta,
    table: ChTable,
    command: string,
    bindings: ClickHouseBindings,
    signal: AbortSignal,
  ): Promise<void> {
    const statement = `ALTER TABLE ${qualified(table)} ${command}`;
    if (meta.mutationsSync) {
      await this.select(service, meta.timezone, statement, signal, { params: bindings.params, settings: { mutations_sync: '2' } });
      return;
    }
    const before = new Set((await this.mutations(service, meta, table, signal)).map((m) => m.id));
    await this.select(service, meta.timezone, statement, signal, { params: bindings.params });
    const deadline = Date.now() + this.options.internalTimeoutMs;
    for (let pause = 10; ; pause = Math.min(pause * 2, 200)) {
      const pending = (await this.mutations(service, meta, table, signal)).filter((m) => !before.has(m.id) && !m.done);
      if (pending.length === 0) return;
      if (Date.now() > deadline)
        throw new QueryError(
          `the mutation of table ${JSON.stringify(table.name)} did not finish within ${this.options.internalTimeoutMs} ms; it goes on in the server`,
          { mutations: pending.map((m) => m.id) },
        );
      await sleep(pause, undefined, { signal });
    }
  }

  /** The table's mutations, matched by name here (18.16 binds no values). */
  private async mutations(
    service: ChService,
    meta: ServerMeta,
    table: ChTable,
    signal: AbortSignal,
  ): Promise<Array<{ id: string; done: boolean }>> {
    const { rows } = await this.select(
      service,
      meta.timezone,
      'SELECT table, mutation_id, is_done FROM system.mutations WHERE database = currentDatabase()',
      signal,
    );
    return rows.filter((r) => r.table === table.name).map((r) => ({ id: String(r.mutation_id), done: Number(r.is_done) === 1 }));
  }

  async release(serviceId: string): Promise<void> {
    await this.pools.release(serviceId);
  }

  async closeAll(): Promise<void> {
    await this.pools.closeAll();
  }
}
