import type { CellValue } from '../../src/databases/database-admin.port.js';
import { toCell } from './cell-values.js';

/**
 * ClickHouse's type names and the text of their values, read into the API's value forms (CellValue):
 * integers beyond 2^53 as digits, DateTime as ISO 8601 in UTC, arrays, tuples and maps from their
 * literals. The same code reads what 18.16 and current servers write.
 */

export interface TypeNode {
  name: string;
  args: string[];
}

/** `Array(Nullable(String))` -> { name: 'Array', args: ['Nullable(String)'] }; quotes and nesting respected. */
export function parseType(type: string): TypeNode {
  const open = type.indexOf('(');
  if (open === -1 || !type.endsWith(')')) return { name: type.trim(), args: [] };
  return { name: type.slice(0, open).trim(), args: splitTopLevel(type.slice(open + 1, -1)) };
}

export function splitTopLevel(text: string): string[] {
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
export function converter(typeText: string, serverTz: string): (text: string) => CellValue {
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

export function isComposite(typeText: string): boolean {
  const t = parseType(typeText);
  if (t.name === 'Nullable' || t.name === 'LowCardinality') return isComposite(t.args[0]!);
  return t.name === 'Array' || t.name === 'Tuple' || t.name === 'Map';
}

/** String and FixedString hold bytes: valid UTF-8 is text, anything else the API's `\x` hex. */
export function isByteString(typeText: string): boolean {
  const t = parseType(typeText);
  if (t.name === 'Nullable' || t.name === 'LowCardinality') return isByteString(t.args[0]!);
  return t.name === 'String' || t.name === 'FixedString';
}
