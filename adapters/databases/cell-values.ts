import type { CellValue } from '../../src/databases/database-admin.port.js';

/**
 * Turns what a driver returns into the API's value forms (see CellValue): JSON's own types pass,
 * the rest becomes one documented string form, recursively through arrays and objects.
 */
export function toCell(value: unknown): CellValue {
  if (value === null || value === undefined) return null;
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      return Number.isFinite(value) ? value : String(value);
    case 'bigint':
      return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value.toString();
    case 'object':
      break;
    default:
      return String(value);
  }
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString();
  if (value instanceof Uint8Array) return binaryCell(value);
  if (value instanceof ArrayBuffer) return binaryCell(new Uint8Array(value));
  if (Array.isArray(value)) return value.map(toCell);
  if (value instanceof Map) return Object.fromEntries([...value].map(([k, v]) => [String(k), toCell(v)]));
  if (value instanceof Set) return [...value].map(toCell);
  const bsonType = (value as { _bsontype?: unknown })._bsontype;
  if (typeof bsonType === 'string') return bsonCell(bsonType, value);
  const out: Record<string, CellValue> = {};
  for (const [key, inner] of Object.entries(value)) out[key] = toCell(inner);
  return out;
}

export function binaryCell(bytes: Uint8Array): string {
  return `\\x${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex')}`;
}

/** BSON values (ObjectId, Decimal128, Long, Binary, Timestamp...) by their `_bsontype`, without importing bson here. */
function bsonCell(type: string, value: object): CellValue {
  const v = value as { toHexString?: () => string; toString: () => string; buffer?: Uint8Array; value?: unknown };
  if (type === 'ObjectId' && v.toHexString) return v.toHexString();
  if (type === 'Binary' && v.buffer instanceof Uint8Array) return binaryCell(v.buffer);
  if (type === 'Double' || type === 'Int32') return toCell(Number(v.value));
  if (type === 'Long') return toCell(BigInt(v.toString()));
  return v.toString();
}

/** Rows of a driver keyed by column name, each value through toCell. */
export function toRow(source: Record<string, unknown>): Record<string, CellValue> {
  const out: Record<string, CellValue> = {};
  for (const [key, value] of Object.entries(source)) out[key] = toCell(value);
  return out;
}
