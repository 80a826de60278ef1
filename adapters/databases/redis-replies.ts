import { isUtf8 } from 'node:buffer';
import type { CellValue, QueryResult } from '../../src/databases/database-admin.port.js';
import { binaryCell, toCell } from './cell-values.js';

/**
 * Redis replies as the API's values (ioredis with RESP3 and `stringNumbers`): bulk strings as UTF-8 text
 * or `\x`+hex, numbers from their digits, maps and arrays recursively; a console reply as rows.
 */

/** Redis bytes as the API carries them: UTF-8 text when valid, else `\x` + hex. */
export function bytesCell(bytes: Buffer): string {
  return isUtf8(bytes) ? bytes.toString('utf8') : binaryCell(bytes);
}

/** A numeric reply (ioredis `stringNumbers`: integers and doubles arrive as their text). */
export function numberCell(text: string): CellValue {
  if (/^-?\d+$/.test(text)) return toCell(BigInt(text));
  const value = Number(text);
  return Number.isFinite(value) ? value : text; // inf, -inf, nan as Redis writes them
}

/** Any reply as a cell: bulk strings through bytesCell, numbers through numberCell, nested replies recursively. */
export function replyCell(reply: unknown): CellValue {
  if (reply === null || reply === undefined) return null;
  if (Buffer.isBuffer(reply)) return bytesCell(reply);
  if (typeof reply === 'string') return numberCell(reply);
  if (reply instanceof String) return String(reply); // a RESP3 verbatim string
  if (typeof reply === 'number') return Number.isFinite(reply) ? reply : reply > 0 ? 'inf' : reply < 0 ? '-inf' : 'nan';
  if (typeof reply === 'bigint' || typeof reply === 'boolean') return toCell(reply);
  if (reply instanceof Error) return reply.message;
  if (Array.isArray(reply)) return reply.map(replyCell);
  if (reply instanceof Set) return [...reply].map(replyCell);
  if (reply instanceof Map) return Object.fromEntries([...reply].map(([k, v]) => [keyText(k), replyCell(v)]));
  if (typeof reply === 'object') return Object.fromEntries(Object.entries(reply).map(([k, v]) => [k, replyCell(v)]));
  return String(reply);
}

export function keyText(key: unknown): string {
  return Buffer.isBuffer(key) ? bytesCell(key) : String(key);
}

/** The kind of a reply, for the query result's column type (see the vocabulary above). */
export function replyKind(reply: unknown): string {
  if (reply === null || reply === undefined) return 'nil';
  if (Buffer.isBuffer(reply) || reply instanceof String) return 'string';
  if (typeof reply === 'string') return /^-?\d+$/.test(reply) ? 'integer' : 'double';
  if (typeof reply === 'number') return Number.isInteger(reply) ? 'integer' : 'double';
  if (typeof reply === 'bigint') return 'integer';
  if (typeof reply === 'boolean') return 'boolean';
  if (reply instanceof Error) return 'error';
  if (Array.isArray(reply) || reply instanceof Set) return 'array';
  return 'map';
}

export function columnKind(replies: unknown[]): string {
  const kinds = new Set(replies.map(replyKind).filter((k) => k !== 'nil'));
  return kinds.size === 0 ? 'nil' : kinds.size === 1 ? [...kinds][0]! : 'mixed';
}

/**
 * A reply as rows: a map (HGETALL, CONFIG GET, HELLO...) is one `{field, value}` row per entry; an array
 * (LRANGE, KEYS, SMEMBERS, XRANGE...) one `{value}` row per element, nested replies as arrays/objects; any
 * other reply, nil included, one `{value}` row (nil is `null`; an empty array is no rows). At most `rowCap`
 * rows, `truncated` when the reply had more. The reply itself is read whole: Redis sends it in one piece.
 */
export function queryResult(reply: unknown, rowCap: number): QueryResult {
  if (
    reply !== null &&
    typeof reply === 'object' &&
    !Buffer.isBuffer(reply) &&
    !(reply instanceof String) &&
    !(reply instanceof Error) &&
    !Array.isArray(reply) &&
    !(reply instanceof Set)
  ) {
    const entries = reply instanceof Map ? [...reply] : Object.entries(reply);
    const kept = entries.slice(0, rowCap);
    return {
      columns: [
        { name: 'field', type: 'string' },
        { name: 'value', type: columnKind(kept.map(([, v]) => v)) },
      ],
      rows: kept.map(([k, v]) => ({ field: keyText(k), value: replyCell(v) })),
      rowCount: kept.length,
      truncated: entries.length > kept.length,
    };
  }
  const items = Array.isArray(reply) ? reply : reply instanceof Set ? [...reply] : [reply];
  const kept = items.slice(0, rowCap);
  return {
    columns: [{ name: 'value', type: columnKind(kept) }],
    rows: kept.map((v) => ({ value: replyCell(v) })),
    rowCount: kept.length,
    truncated: items.length > kept.length,
  };
}

/** ZRANGE ... WITHSCORES: pairs under RESP3, a flat member, score, ... list under RESP2. */
export function scoredPairs(reply: unknown): Array<[Buffer, unknown]> {
  const items = reply as unknown[];
  if (items.length > 0 && Array.isArray(items[0])) return items as Array<[Buffer, unknown]>;
  const pairs: Array<[Buffer, unknown]> = [];
  for (let i = 0; i + 1 < items.length; i += 2) pairs.push([items[i] as Buffer, items[i + 1]]);
  return pairs;
}

/** A stream entry's flat field, value, ... list as an object (a repeated field name keeps its last value). */
export function fieldsCell(flat: Buffer[]): Record<string, CellValue> {
  const out: Record<string, CellValue> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) out[bytesCell(flat[i]!)] = bytesCell(flat[i + 1]!);
  return out;
}
