import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type net from 'node:net';
import { Readable } from 'node:stream';
import { isUtf8 } from 'node:buffer';
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
import { DomainError, QueryError } from '../../src/domain/errors.js';
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
  checkQuery,
  checkTableRef,
  connectionFailureCode,
  noPrimaryKey,
  notRunning,
  onAbort,
  redact,
  requireTable,
  rowOf,
  timer,
  uniqueNames,
} from './sql-admin-support.js';

/**
 * ClickHouse over its HTTP interface (the service's port 8123) through one `@clickhouse/client` per
 * service. Written for ClickHouse 18.16 (Debian's) and current releases alike, so it uses nothing newer:
 * - no query parameters (`{p:Type}` came in 19.x): catalog lookups read the service database's whole
 *   system.tables/system.columns and match names here; row values travel as JSONEachRow data in the
 *   request body, never in SQL text;
 * - results are TabSeparatedWithNamesAndTypes (names and types in two header lines, then rows), parsed
 *   here and streamed, so a capped query reads `rowCap + 1` rows and closes the response;
 * - `total_rows` of system.tables is used where the server has it, else the active parts' row sum
 *   (MergeTree) or count().
 * Single rows are never updated or deleted: a ClickHouse primary key is a sparse sort index, not a
 * unique key, and ALTER ... UPDATE/DELETE are asynchronous rewrites of whole parts (`mutations_sync`
 * does not exist in 18.16). Such changes go through `query` as ALTER statements, knowingly.
 */

interface ChColumn extends CatalogColumn {
  isSortingKey: boolean;
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
 * A value for a column as JSONEachRow data: ISO timestamps with a zone become unix seconds (ClickHouse
 * reads those in any column time zone; a wall time without zone is left to the column's zone).
 */
function jsonValue(column: ChColumn, value: CellValue): CellValue {
  if (typeof value !== 'string') return value;
  const base = parseType(column.type.replace(/^(Nullable|LowCardinality)\((.*)\)$/s, '$2')).name;
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
    const { rows } = await this.select(
      service,
      'Etc/UTC',
      "SELECT version() AS version, timezone() AS tz, (SELECT count() FROM system.columns WHERE database = 'system' AND table = 'tables' AND name = 'total_rows') AS total_rows",
      signal,
    );
    const row = rows[0]!;
    return { version: String(row.version), timezone: String(row.tz), totalRows: Number(row.total_rows) > 0 };
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
    options: { cap?: number; timeoutMs?: number } = {},
  ): Promise<{ columns: Array<{ name: string; type: string }>; rows: Row[]; truncated: boolean; summary: Record<string, string> }> {
    const timeoutMs = options.timeoutMs ?? this.options.internalTimeoutMs;
    return this.request(service, signal, timeoutMs, async ({ queryId, abortSignal, cancel }) => {
      const settings = {
        // Statements without a FORMAT clause answer in our format; DDL and INSERT answer nothing.
        default_format: TSV_WITH_HEADER,
        max_execution_time: Math.max(1, Math.ceil(timeoutMs / 1000)),
      } as ClickHouseSettings;
      const result = await service.client.exec({ query, clickhouse_settings: settings, query_id: queryId, abort_signal: abortSignal });
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
  ): Promise<Array<{ name: string; engine: string; sortingKey: string; totalRows: number | null }>> {
    const { rows } = await this.select(
      service,
      meta.timezone,
      `SELECT name, engine, sorting_key, ${meta.totalRows ? 'total_rows' : 'CAST(NULL AS Nullable(UInt64)) AS total_rows'}
         FROM system.tables WHERE database = currentDatabase() AND NOT is_temporary AND NOT startsWith(name, '.inner') ORDER BY name`,
      signal,
    );
    return rows.map((r) => ({
      name: String(r.name),
      engine: String(r.engine),
      sortingKey: String(r.sorting_key ?? ''),
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
    const { rows } = await this.select(
      service,
      meta.timezone,
      'SELECT table, name, type, is_in_sorting_key FROM system.columns WHERE database = currentDatabase()',
      signal,
    );
    const columns = rows
      .filter((r) => r.table === ref.name)
      .map((r) => ({ name: String(r.name), type: String(r.type), isSortingKey: Number(r.is_in_sorting_key) === 1, keyPosition: null }));
    return { schema: service.database, name: found!.name, engine: found!.engine, sortingKey: found!.sortingKey, columns };
  }

  /** Columns of the sorting key that are plain columns, in key order: the order of stable pages. */
  private orderColumns(table: ChTable): string[] {
    const names = new Set(table.columns.map((c) => c.name));
    return splitTopLevel(table.sortingKey)
      .map((part) => (part.startsWith('`') && part.endsWith('`') ? part.slice(1, -1).replace(/\\(.)/g, '$1') : part))
      .filter((part) => names.has(part));
  }

  private async total(service: ChService, meta: ServerMeta, table: ChTable, signal: AbortSignal): Promise<number> {
    const [count] = await this.counts(service, meta, [{ name: table.name, engine: table.engine, totalRows: null }], signal);
    return count!;
  }

  async readRows(db: DatabaseEndpoint, ref: TableRef, page: { limit: number; offset: number }, signal: AbortSignal): Promise<RowsPage> {
    const { limit, offset } = checkPage(page);
    return this.withClient(db, signal, async (service, meta) => {
      const table = await this.table(service, meta, ref, signal);
      const order = this.orderColumns(table);
      // The two paging numbers are integers checked by checkPage, not values: ClickHouse 18.16 cannot bind them.
      const { rows } = await this.select(
        service,
        meta.timezone,
        `SELECT ${table.columns.map((c) => quoteClickHouse(c.name)).join(', ')} FROM ${qualified(table)}${order.length ? ` ORDER BY ${order.map(quoteClickHouse).join(', ')}` : ''} LIMIT ${limit} OFFSET ${offset}`,
        signal,
      );
      const total = await this.total(service, meta, table, signal);
      return {
        // No column is `primary`: a ClickHouse key sorts, it does not identify a row.
        columns: table.columns.map((c) => ({ name: c.name, type: c.type, primary: false })),
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
   * The row goes as one JSONEachRow line in the request body: values are data, not SQL. The id is
   * null: ClickHouse has no key that identifies one row (see the top of this file).
   */
  async insertRow(db: DatabaseEndpoint, ref: TableRef, values: Row, signal: AbortSignal): Promise<{ id: CellValue }> {
    return this.withClient(db, signal, async (service, meta) => {
      const table = await this.table(service, meta, ref, signal);
      const given = checkColumns(table, values, 'values');
      const line = `${JSON.stringify(Object.fromEntries(given.map(([c, v]) => [c.name, jsonValue(c as ChColumn, v)])))}\n`;
      const query = `INSERT INTO ${qualified(table)}${given.length ? ` (${given.map(([c]) => quoteClickHouse(c.name)).join(', ')})` : ''} FORMAT JSONEachRow`;
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
      return { id: null };
    });
  }

  async updateRow(db: DatabaseEndpoint, ref: TableRef, _primaryKey: Row, _values: Row, signal: AbortSignal): Promise<void> {
    await this.refuseRowChange(db, ref, signal);
  }

  async deleteRow(db: DatabaseEndpoint, ref: TableRef, _primaryKey: Row, signal: AbortSignal): Promise<void> {
    await this.refuseRowChange(db, ref, signal);
  }

  /** After the table check (an unknown table is still a 404): no single row can be addressed. */
  private async refuseRowChange(db: DatabaseEndpoint, ref: TableRef, signal: AbortSignal): Promise<never> {
    return this.withClient(db, signal, async (service, meta) => {
      const table = await this.table(service, meta, ref, signal);
      throw noPrimaryKey(table, 'ClickHouse keys sort rows and are not unique; change rows with ALTER TABLE ... UPDATE/DELETE in a query');
    });
  }

  async release(serviceId: string): Promise<void> {
    await this.pools.release(serviceId);
  }

  async closeAll(): Promise<void> {
    await this.pools.closeAll();
  }
}
