#!/usr/bin/env node
/**
 * A stand-in for `mongod` that speaks MongoDB's wire protocol, for testing code that uses the official
 * drivers where no MongoDB server can be installed. It is NOT MongoDB: a subset of commands and
 * operators, kept in memory and written to one file per database. README.md next to this file says
 * precisely what it implements and what it does not.
 *
 *   node server.mjs --port 27017 --dbpath /data/db [--bind_ip_all] [--bind_ip <addr>]
 *                   [--setParameter enableTestCommands=1] [--auth] [--quiet]
 *   env: MONGO_INITDB_ROOT_USERNAME / MONGO_INITDB_ROOT_PASSWORD (or *_FILE): as with the official
 *   image, a root user is created when the data directory is new, and authentication is required.
 *
 * In-process: `const server = await startServer({ port: 0, dbpath, rootUser, rootPassword })`
 * resolves with `{ port, host, close() }`.
 *
 * Plain JavaScript (ESM) for Node 18+; depends only on `bson` and Node's built-ins.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';
import { Binary, calculateObjectSize, Decimal128, deserialize, Double, Int32, Long, ObjectId, serialize, UUID } from 'bson';

// ---------------------------------------------------------------------------------------------------
// Constants

const VERSION = '7.0.0-standin';
const MAX_WIRE_VERSION = 21; // MongoDB 7.0
const MAX_BSON_SIZE = 16 * 1024 * 1024; // maxBsonObjectSize
const MAX_COMMAND_SIZE = MAX_BSON_SIZE + 16 * 1024; // a command document may exceed a document by its envelope
const MAX_MESSAGE_SIZE = 48_000_000; // maxMessageSizeBytes
const MAX_WRITE_BATCH = 100_000;
const MAX_BATCH_BYTES = MAX_BSON_SIZE; // a batch of a cursor reply holds up to 16 MiB of documents
const DEFAULT_FIRST_BATCH = 101;
const CURSOR_TIMEOUT_MS = 10 * 60_000;
const MAX_NESTING = 180;

const OP_REPLY = 1;
const OP_QUERY = 2004;
const OP_MSG = 2013;
const MSG_CHECKSUM_PRESENT = 1;
const MSG_MORE_TO_COME = 2;
const MSG_EXHAUST_ALLOWED = 1 << 16;
const MSG_REQUIRED_BITS = 0xffff; // bits 0-15 must be understood
const MSG_KNOWN_BITS = MSG_CHECKSUM_PRESENT | MSG_MORE_TO_COME;

const DESERIALIZE = { promoteValues: false, bsonRegExp: true };
const FILE_SUFFIX = '.mongo-standin.bson';
const FILE_FORMAT = 'slipway-mongo-wire-standin';

// ---------------------------------------------------------------------------------------------------
// Errors: a command fails with `{ok: 0, errmsg, code, codeName}` like mongod's.

class CommandError extends Error {
  constructor(code, codeName, errmsg, extra = {}) {
    super(errmsg);
    this.code = code;
    this.codeName = codeName;
    this.extra = extra;
  }
}
const fail = (code, codeName, errmsg, extra) => new CommandError(code, codeName, errmsg, extra);
const notImplemented = (what) => fail(238, 'NotImplemented', `${what} is not implemented by the MongoDB wire-protocol stand-in`);
const badValue = (msg) => fail(2, 'BadValue', msg);
const typeMismatch = (cmd, field, value, expected) =>
  fail(14, 'TypeMismatch', `BSON field '${cmd}.${field}' is the wrong type '${typeName(value)}', expected type '${expected}'`);

/** A malformed message: the connection is closed, as mongod does. */
class ProtocolError extends Error {}

// ---------------------------------------------------------------------------------------------------
// Values. Documents are kept as bson parses them with `promoteValues: false` (Int32, Double, Long and
// Decimal128 stay typed), so what is written comes back with the same BSON types.

const MISSING = Symbol('missing');

function bsonTypeOf(v) {
  return v !== null && typeof v === 'object' && typeof v._bsontype === 'string' ? v._bsontype : null;
}

function isPlainDoc(v) {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  if (bsonTypeOf(v) || v instanceof Date || v instanceof RegExp || ArrayBuffer.isView(v)) return false;
  return true;
}

function isNumeric(v) {
  if (typeof v === 'number' || typeof v === 'bigint') return true;
  const t = bsonTypeOf(v);
  return t === 'Int32' || t === 'Double' || t === 'Long' || t === 'Decimal128';
}

function toNumber(v) {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  switch (bsonTypeOf(v)) {
    case 'Int32':
    case 'Double':
      return Number(v.value);
    case 'Long':
      return v.toNumber();
    case 'Decimal128':
      return Number(v.toString());
    default:
      return NaN;
  }
}

/** An exact integer (for comparing Int32 and Long without rounding), else null. */
function exactInteger(v) {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number') return Number.isSafeInteger(v) ? BigInt(v) : null;
  switch (bsonTypeOf(v)) {
    case 'Int32':
      return BigInt(v.value);
    case 'Long':
      return BigInt(v.toString());
    case 'Double':
      return Number.isSafeInteger(v.value) ? BigInt(v.value) : null;
    default:
      return null;
  }
}

/** The BSON type alias (`$type` names): what the stand-in reports and what `$type` matches. */
function typeName(v) {
  if (v === null || v === undefined || v === MISSING) return 'null';
  switch (typeof v) {
    case 'string':
      return 'string';
    case 'boolean':
      return 'bool';
    case 'number':
      return Number.isInteger(v) && v >= -2147483648 && v <= 2147483647 ? 'int' : 'double';
    case 'bigint':
      return 'long';
    default:
      break;
  }
  if (Array.isArray(v)) return 'array';
  if (v instanceof Date) return 'date';
  if (v instanceof RegExp) return 'regex';
  switch (bsonTypeOf(v)) {
    case 'ObjectId':
      return 'objectId';
    case 'Int32':
      return 'int';
    case 'Double':
      return 'double';
    case 'Long':
      return 'long';
    case 'Decimal128':
      return 'decimal';
    case 'Binary':
      return 'binData';
    case 'Timestamp':
      return 'timestamp';
    case 'BSONRegExp':
      return 'regex';
    case 'MinKey':
      return 'minKey';
    case 'MaxKey':
      return 'maxKey';
    case 'Code':
      return 'javascript';
    case 'BSONSymbol':
      return 'symbol';
    default:
      return 'object';
  }
}

const TYPE_NUMBERS = {
  1: 'double',
  2: 'string',
  3: 'object',
  4: 'array',
  5: 'binData',
  6: 'undefined',
  7: 'objectId',
  8: 'bool',
  9: 'date',
  10: 'null',
  11: 'regex',
  13: 'javascript',
  14: 'symbol',
  16: 'int',
  17: 'timestamp',
  18: 'long',
  19: 'decimal',
  '-1': 'minKey',
  127: 'maxKey',
};

/** The canonical order of types in comparisons and sorts (MinKey < null < numbers < strings < ...). */
function typeRank(v) {
  if (v === null || v === undefined || v === MISSING) return 2;
  switch (typeof v) {
    case 'number':
    case 'bigint':
      return 3;
    case 'string':
      return 4;
    case 'boolean':
      return 9;
    default:
      break;
  }
  if (Array.isArray(v)) return 6;
  if (v instanceof Date) return 10;
  if (v instanceof RegExp) return 12;
  switch (bsonTypeOf(v)) {
    case 'MinKey':
      return 1;
    case 'Int32':
    case 'Double':
    case 'Long':
    case 'Decimal128':
      return 3;
    case 'BSONSymbol':
      return 4;
    case 'Binary':
      return 7;
    case 'ObjectId':
      return 8;
    case 'Timestamp':
      return 11;
    case 'BSONRegExp':
      return 12;
    case 'Code':
      return 12.5;
    case 'MaxKey':
      return 13;
    default:
      return 5;
  }
}

function compareNumbers(a, b) {
  const ia = exactInteger(a);
  const ib = exactInteger(b);
  if (ia !== null && ib !== null) return ia < ib ? -1 : ia > ib ? 1 : 0;
  const x = toNumber(a);
  const y = toNumber(b);
  if (Number.isNaN(x)) return Number.isNaN(y) ? 0 : -1;
  if (Number.isNaN(y)) return 1;
  return x < y ? -1 : x > y ? 1 : 0;
}

function binaryBytes(v) {
  return Buffer.from(v.buffer.buffer, v.buffer.byteOffset, v.position);
}

function regexParts(v) {
  if (v instanceof RegExp) return [v.source, v.flags];
  return [v.pattern, v.options];
}

/** MongoDB's comparison of two BSON values (type order first, then value). */
function compareValues(a, b) {
  const ra = typeRank(a);
  const rb = typeRank(b);
  if (ra !== rb) return ra < rb ? -1 : 1;
  switch (ra) {
    case 3:
      return compareNumbers(a, b);
    case 4: {
      const x = String(typeof a === 'string' ? a : a.value);
      const y = String(typeof b === 'string' ? b : b.value);
      return Buffer.compare(Buffer.from(x, 'utf8'), Buffer.from(y, 'utf8'));
    }
    case 5:
      return compareDocs(a, b);
    case 6: {
      for (let i = 0; i < Math.min(a.length, b.length); i++) {
        const c = compareValues(a[i], b[i]);
        if (c !== 0) return c;
      }
      return a.length - b.length === 0 ? 0 : a.length < b.length ? -1 : 1;
    }
    case 7: {
      if (a.position !== b.position) return a.position < b.position ? -1 : 1;
      if (a.sub_type !== b.sub_type) return a.sub_type < b.sub_type ? -1 : 1;
      return Buffer.compare(binaryBytes(a), binaryBytes(b));
    }
    case 8: {
      const x = a.toHexString();
      const y = b.toHexString();
      return x < y ? -1 : x > y ? 1 : 0;
    }
    case 9:
      return a === b ? 0 : a ? 1 : -1;
    case 10:
      return Math.sign(a.getTime() - b.getTime());
    case 11: {
      const x = BigInt(a.toString());
      const y = BigInt(b.toString());
      return x < y ? -1 : x > y ? 1 : 0;
    }
    case 12: {
      const [pa, fa] = regexParts(a);
      const [pb, fb] = regexParts(b);
      return pa < pb ? -1 : pa > pb ? 1 : fa < fb ? -1 : fa > fb ? 1 : 0;
    }
    default:
      return 0;
  }
}

function docEntries(v) {
  return bsonTypeOf(v) === 'DBRef' ? Object.entries(v.toJSON()) : Object.entries(v);
}

function compareDocs(a, b) {
  const ea = docEntries(a);
  const eb = docEntries(b);
  for (let i = 0; i < Math.min(ea.length, eb.length); i++) {
    const [ka, va] = ea[i];
    const [kb, vb] = eb[i];
    const rank = typeRank(va) - typeRank(vb);
    if (rank !== 0) return rank < 0 ? -1 : 1;
    if (ka !== kb) return ka < kb ? -1 : 1;
    const c = compareValues(va, vb);
    if (c !== 0) return c;
  }
  return ea.length === eb.length ? 0 : ea.length < eb.length ? -1 : 1;
}

/** A string equal for values MongoDB considers equal (1, 1.0 and NumberLong(1) are one `_id`). */
function valueKey(v) {
  if (v === null || v === undefined || v === MISSING) return 'z';
  switch (typeof v) {
    case 'string':
      return `s:${v}`;
    case 'boolean':
      return `b:${v}`;
    case 'number':
    case 'bigint':
      return `n:${numberKey(v)}`;
    default:
      break;
  }
  if (Array.isArray(v)) return `[${v.map(valueKey).join(',')}]`;
  if (v instanceof Date) return `d:${v.getTime()}`;
  switch (bsonTypeOf(v)) {
    case 'Int32':
    case 'Double':
    case 'Long':
    case 'Decimal128':
      return `n:${numberKey(v)}`;
    case 'ObjectId':
      return `o:${v.toHexString()}`;
    case 'Binary':
      return `B:${v.sub_type}:${binaryBytes(v).toString('hex')}`;
    case 'Timestamp':
      return `t:${v.toString()}`;
    case 'BSONRegExp':
      return `r:${v.pattern}/${v.options}`;
    case 'BSONSymbol':
      return `s:${v.value}`;
    case 'MinKey':
      return 'min';
    case 'MaxKey':
      return 'max';
    case 'Code':
      return `c:${v.code}`;
    default:
      break;
  }
  if (v instanceof RegExp) return `r:${v.source}/${v.flags}`;
  return `{${docEntries(v)
    .map(([k, x]) => `${JSON.stringify(k)}:${valueKey(x)}`)
    .join(',')}}`;
}

function numberKey(v) {
  const i = exactInteger(v);
  if (i !== null) return i.toString();
  const n = toNumber(v);
  return Number.isInteger(n) && Math.abs(n) < 2 ** 63 ? BigInt(n).toString() : String(n);
}

/** How mongod prints a value in messages (`{ _id: ObjectId('...') }`). */
function shellRepr(v) {
  if (v === null || v === undefined || v === MISSING) return 'null';
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v);
  if (Array.isArray(v)) return `[ ${v.map(shellRepr).join(', ')} ]`;
  if (v instanceof Date) return `new Date(${v.getTime()})`;
  switch (bsonTypeOf(v)) {
    case 'ObjectId':
      return `ObjectId('${v.toHexString()}')`;
    case 'Int32':
    case 'Double':
      return String(v.value);
    case 'Long':
      return v.toString();
    case 'Decimal128':
      return `NumberDecimal("${v.toString()}")`;
    case 'Binary':
      return `BinData(${v.sub_type}, ${binaryBytes(v).toString('hex').toUpperCase()})`;
    case 'Timestamp':
      return `Timestamp(${v.t ?? v.high}, ${v.i ?? v.low})`;
    case 'BSONRegExp':
      return `/${v.pattern}/${v.options}`;
    default:
      break;
  }
  const entries = docEntries(v);
  return entries.length ? `{ ${entries.map(([k, x]) => `${k}: ${shellRepr(x)}`).join(', ')} }` : '{}';
}

function nestingDepth(v, depth = 0) {
  if (depth > MAX_NESTING) return depth;
  let max = depth;
  if (Array.isArray(v)) {
    for (const x of v) max = Math.max(max, nestingDepth(x, depth + 1));
  } else if (isPlainDoc(v)) {
    for (const x of Object.values(v)) max = Math.max(max, nestingDepth(x, depth + 1));
  }
  return max;
}

// Numbers written by the server ($inc, $sum): the widest of the operands' types, like mongod.
function numberKind(v) {
  const t = bsonTypeOf(v);
  if (t === 'Decimal128') return 3;
  if (t === 'Double') return 2;
  if (t === 'Long' || typeof v === 'bigint') return 1;
  if (t === 'Int32') return 0;
  if (typeof v === 'number') return Number.isInteger(v) && v >= -2147483648 && v <= 2147483647 ? 0 : 2;
  return 2;
}

function addNumbers(a, b) {
  const kind = Math.max(numberKind(a), numberKind(b));
  if (kind === 3) return Decimal128.fromString(String(toNumber(a) + toNumber(b)));
  if (kind === 2) return new Double(toNumber(a) + toNumber(b));
  const sum = exactInteger(a) + exactInteger(b);
  if (kind === 0 && sum >= -2147483648n && sum <= 2147483647n) return new Int32(Number(sum));
  if (sum < -(2n ** 63n) || sum >= 2n ** 63n) return new Double(Number(sum));
  return Long.fromBigInt(sum);
}

// ---------------------------------------------------------------------------------------------------
// Field paths

/** The values a dotted path reaches in a document, through arrays (`a.b` on `a: [{b: 1}, {b: 2}]`). */
function pathCandidates(value, parts, i, out) {
  if (i === parts.length) {
    out.push(value);
    return out;
  }
  const part = parts[i];
  if (Array.isArray(value)) {
    let reached = false;
    if (/^\d+$/.test(part)) {
      const index = Number(part);
      if (index < value.length) {
        pathCandidates(value[index], parts, i + 1, out);
        reached = true;
      }
    }
    for (const element of value) {
      if (isPlainDoc(element)) {
        pathCandidates(element, parts, i, out);
        reached = true;
      }
    }
    if (!reached) out.push(MISSING);
    return out;
  }
  if (isPlainDoc(value) && Object.hasOwn(value, part)) return pathCandidates(value[part], parts, i + 1, out);
  out.push(MISSING);
  return out;
}

function splitPath(p, what = 'field path') {
  if (typeof p !== 'string' || p === '' || p.split('.').some((s) => s === ''))
    throw fail(56, 'EmptyFieldName', `An empty ${what} is not valid: '${p}'`);
  return p.split('.');
}

// ---------------------------------------------------------------------------------------------------
// Query filters: compiled once, so an unknown operator fails even on an empty collection.

const QUERY_OPERATORS_KNOWN = new Set([
  '$eq',
  '$gt',
  '$gte',
  '$in',
  '$lt',
  '$lte',
  '$ne',
  '$nin',
  '$and',
  '$not',
  '$nor',
  '$or',
  '$exists',
  '$type',
  '$expr',
  '$jsonSchema',
  '$mod',
  '$regex',
  '$options',
  '$text',
  '$where',
  '$geoIntersects',
  '$geoWithin',
  '$near',
  '$nearSphere',
  '$all',
  '$elemMatch',
  '$size',
  '$bitsAllClear',
  '$bitsAllSet',
  '$bitsAnyClear',
  '$bitsAnySet',
  '$comment',
  '$rand',
  '$sampleRate',
  '$maxDistance',
  '$minDistance',
  '$geometry',
  '$box',
  '$center',
  '$centerSphere',
  '$polygon',
]);

function isOperatorDoc(v) {
  if (!isPlainDoc(v)) return false;
  const keys = Object.keys(v);
  return keys.length > 0 && keys[0].startsWith('$');
}

function isRegexValue(v) {
  return v instanceof RegExp || bsonTypeOf(v) === 'BSONRegExp';
}

function toJsRegExp(pattern, options) {
  let flags = '';
  for (const f of options) {
    if (f === 'i' || f === 'm' || f === 's') {
      if (!flags.includes(f)) flags += f;
    } else if (f === 'u') {
      // PCRE's UTF mode: JavaScript strings are Unicode already
    } else if (f === 'x') {
      throw notImplemented("the regular expression option 'x'");
    } else {
      throw fail(51108, 'Location51108', `invalid flag in regex options: ${f}`);
    }
  }
  try {
    return new RegExp(pattern, flags);
  } catch (e) {
    throw fail(51091, 'Location51091', `Regular expression is invalid: ${e.message}`);
  }
}

function regexOf(v) {
  const [pattern, options] = regexParts(v);
  return toJsRegExp(pattern, options);
}

/** Equality as `{field: value}` matches: null matches missing, a regex matches strings. */
function equalityPredicate(q) {
  if (isRegexValue(q)) {
    const re = regexOf(q);
    return (c) => (typeof c === 'string' && re.test(c)) || (isRegexValue(c) && compareValues(c, q) === 0);
  }
  if (q === null) return (c) => c === MISSING || c === null || c === undefined;
  return (c) => c !== MISSING && compareValues(c, q) === 0;
}

/** Any candidate, or any element of a candidate array, satisfies `pred`. */
function anyMatch(cands, pred) {
  for (const c of cands) {
    if (pred(c)) return true;
    if (Array.isArray(c)) for (const e of c) if (pred(e)) return true;
  }
  return false;
}

function compileFilter(filter) {
  if (!isPlainDoc(filter)) throw badValue('a query filter must be an object');
  const preds = [];
  for (const [key, value] of Object.entries(filter)) {
    if (key.startsWith('$')) {
      preds.push(compileTopLevelOperator(key, value));
      continue;
    }
    const parts = splitPath(key);
    const match = compileFieldMatch(value, key);
    preds.push((doc) => match(pathCandidates(doc, parts, 0, [])));
  }
  return (doc) => {
    for (const p of preds) if (!p(doc)) return false;
    return true;
  };
}

function compileTopLevelOperator(op, value) {
  switch (op) {
    case '$and':
    case '$or':
    case '$nor': {
      if (!Array.isArray(value) || value.length === 0) throw badValue(`${op} must be a nonempty array`);
      const subs = value.map((s) => {
        if (!isPlainDoc(s)) throw badValue(`${op}/$or/$nor entries need to be full objects`);
        return compileFilter(s);
      });
      if (op === '$and') return (doc) => subs.every((s) => s(doc));
      if (op === '$or') return (doc) => subs.some((s) => s(doc));
      return (doc) => !subs.some((s) => s(doc));
    }
    case '$comment':
      return () => true;
    default:
      if (QUERY_OPERATORS_KNOWN.has(op)) throw notImplemented(`the query operator ${op}`);
      throw badValue(
        `unknown top level operator: ${op}. If you have a field name that starts with a '$' symbol, consider using $getField or $setField.`,
      );
  }
}

function compileFieldMatch(value, field) {
  if (!isOperatorDoc(value)) {
    const eq = equalityPredicate(value);
    return (cands) => anyMatch(cands, eq);
  }
  const preds = [];
  const ops = value;
  for (const [op, arg] of Object.entries(ops)) {
    switch (op) {
      case '$eq': {
        const eq = equalityPredicate(arg);
        preds.push((cands) => anyMatch(cands, eq));
        break;
      }
      case '$ne': {
        if (isRegexValue(arg)) throw badValue("Can't have regex as arg to $ne.");
        const eq = equalityPredicate(arg);
        preds.push((cands) => !anyMatch(cands, eq));
        break;
      }
      case '$gt':
      case '$gte':
      case '$lt':
      case '$lte': {
        if (isOperatorDoc(arg)) throw badValue(`unknown operator: ${Object.keys(arg)[0]}`);
        const rank = typeRank(arg);
        const test = { $gt: (c) => c > 0, $gte: (c) => c >= 0, $lt: (c) => c < 0, $lte: (c) => c <= 0 }[op];
        const nullOk = arg === null && (op === '$gte' || op === '$lte');
        preds.push((cands) =>
          anyMatch(cands, (c) => {
            if (c === MISSING) return nullOk;
            return typeRank(c) === rank && test(compareValues(c, arg));
          }),
        );
        break;
      }
      case '$in':
      case '$nin': {
        if (!Array.isArray(arg)) throw badValue(`${op} needs an array`);
        const eqs = arg.map((x) => {
          if (isOperatorDoc(x)) throw badValue('cannot nest $ under $in');
          return equalityPredicate(x);
        });
        const inPred = (cands) => anyMatch(cands, (c) => eqs.some((eq) => eq(c)));
        preds.push(op === '$in' ? inPred : (cands) => !inPred(cands));
        break;
      }
      case '$exists': {
        const want = Boolean(isNumeric(arg) ? toNumber(arg) : arg);
        preds.push((cands) => cands.some((c) => c !== MISSING) === want);
        break;
      }
      case '$type': {
        const wanted = (Array.isArray(arg) ? arg : [arg]).map((t) => {
          if (typeof t === 'string') {
            if (t !== 'number' && !Object.values(TYPE_NUMBERS).includes(t)) throw badValue(`Unknown type name alias: ${t}`);
            return t;
          }
          if (isNumeric(t) && TYPE_NUMBERS[toNumber(t)]) return TYPE_NUMBERS[toNumber(t)];
          throw badValue(`Invalid numerical type code: ${shellRepr(t)}`);
        });
        const has = (c) => {
          if (c === MISSING) return false;
          const name = typeName(c);
          return wanted.includes(name) || (wanted.includes('number') && isNumeric(c));
        };
        preds.push((cands) => anyMatch(cands, has));
        break;
      }
      case '$regex': {
        let pattern;
        let options = typeof ops.$options === 'string' ? ops.$options : '';
        if (typeof arg === 'string') pattern = arg;
        else if (isRegexValue(arg)) {
          const [p, o] = regexParts(arg);
          pattern = p;
          options = ops.$options === undefined ? o : options;
        } else throw badValue('$regex has to be a string');
        const re = toJsRegExp(pattern, options);
        preds.push((cands) => anyMatch(cands, (c) => typeof c === 'string' && re.test(c)));
        break;
      }
      case '$options':
        if (ops.$regex === undefined) throw badValue('$options needs a $regex');
        break;
      case '$not': {
        let inner;
        if (isRegexValue(arg)) inner = compileFieldMatch(arg, field);
        else if (isOperatorDoc(arg)) inner = compileFieldMatch(arg, field);
        else throw badValue('$not needs a regex or a document');
        preds.push((cands) => !inner(cands));
        break;
      }
      default:
        if (QUERY_OPERATORS_KNOWN.has(op)) throw notImplemented(`the query operator ${op}`);
        throw badValue(`unknown operator: ${op}`);
    }
  }
  return (cands) => preds.every((p) => p(cands));
}

// ---------------------------------------------------------------------------------------------------
// Sort and projection

function directionOf(v) {
  if (isNumeric(v)) {
    const n = toNumber(v);
    if (n === 1 || n === -1) return n;
  }
  if (isPlainDoc(v) && v.$meta !== undefined) throw notImplemented('sorting by $meta');
  throw fail(15975, 'Location15975', '$sort key ordering must be 1 (for ascending) or -1 (for descending)');
}

function compileSort(spec) {
  if (!isPlainDoc(spec)) throw badValue('sort must be an object');
  const keys = Object.entries(spec).map(([field, dir]) => ({ parts: splitPath(field), dir: directionOf(dir) }));
  if (keys.length === 0) return null;
  const sortValue = (doc, parts, dir) => {
    const cands = pathCandidates(doc, parts, 0, []);
    let best = MISSING;
    let seen = false;
    const consider = (v) => {
      const value = v === MISSING ? null : v;
      if (!seen || (dir === 1 ? compareValues(value, best) < 0 : compareValues(value, best) > 0)) best = value;
      seen = true;
    };
    for (const c of cands) {
      if (Array.isArray(c)) {
        if (c.length === 0) consider(undefined);
        for (const e of c) consider(e);
      } else consider(c);
    }
    return seen ? best : null;
  };
  return (a, b) => {
    for (const { parts, dir } of keys) {
      const c = compareValues(sortValue(a, parts, dir), sortValue(b, parts, dir));
      if (c !== 0) return c * dir;
    }
    return 0;
  };
}

/** Projections: inclusion or exclusion of top-level fields, `_id` included unless excluded. */
function compileProjection(spec) {
  if (spec === undefined || spec === null) return null;
  if (!isPlainDoc(spec)) throw badValue('projection must be an object');
  const entries = Object.entries(spec);
  if (entries.length === 0) return null;
  let mode = null;
  let includeId = true;
  const fields = new Set();
  for (const [field, value] of entries) {
    if (field.includes('.')) throw notImplemented('projection of a dotted field path');
    if (field.startsWith('$')) throw notImplemented(`the projection operator ${field}`);
    let on;
    if (typeof value === 'boolean') on = value;
    else if (isNumeric(value)) on = toNumber(value) !== 0;
    else throw notImplemented('projection with expressions or projection operators');
    if (field === '_id') {
      includeId = on;
      continue;
    }
    const fieldMode = on ? 'include' : 'exclude';
    if (mode && mode !== fieldMode) {
      if (fieldMode === 'exclude') throw fail(31254, 'Location31254', `Cannot do exclusion on field ${field} in inclusion projection`);
      throw fail(31253, 'Location31253', `Cannot do inclusion on field ${field} in exclusion projection`);
    }
    mode = fieldMode;
    fields.add(field);
  }
  if (mode === null) mode = includeId ? 'include' : 'exclude';
  if (mode === 'include') {
    return (doc) => {
      const out = {};
      for (const [k, v] of Object.entries(doc)) if ((k === '_id' && includeId) || fields.has(k)) out[k] = v;
      return out;
    };
  }
  return (doc) => {
    const out = {};
    for (const [k, v] of Object.entries(doc)) if (!(fields.has(k) || (k === '_id' && !includeId))) out[k] = v;
    return out;
  };
}

// ---------------------------------------------------------------------------------------------------
// Updates

const UPDATE_OPERATORS_KNOWN = new Set([
  '$currentDate',
  '$inc',
  '$min',
  '$max',
  '$mul',
  '$rename',
  '$set',
  '$setOnInsert',
  '$unset',
  '$addToSet',
  '$pop',
  '$pull',
  '$push',
  '$pullAll',
  '$bit',
]);
const UPDATE_OPERATORS_SUPPORTED = new Set(['$set', '$unset', '$inc', '$setOnInsert']);

/** `{$set: ..., $inc: ...}` or a replacement document, checked before any document is touched. */
function compileUpdate(u) {
  if (Array.isArray(u)) throw notImplemented('a pipeline-style update');
  if (!isPlainDoc(u)) throw fail(14, 'TypeMismatch', 'Update argument must be either an object or an array');
  const keys = Object.keys(u);
  if (keys.length === 0 || !keys[0].startsWith('$')) {
    for (const k of keys) {
      if (k.startsWith('$'))
        throw fail(
          52,
          'DollarPrefixedFieldName',
          `The dollar ($) prefixed field '${k}' in '${k}' is not allowed in the context of an update's replacement document. Consider using an aggregation pipeline with $replaceWith.`,
        );
    }
    return { replacement: u };
  }
  const ops = [];
  const paths = [];
  for (const [op, arg] of Object.entries(u)) {
    if (!op.startsWith('$'))
      throw fail(
        9,
        'FailedToParse',
        `Unknown modifier: ${op}. Expected a valid update modifier or pipeline-style update specified as an array`,
      );
    if (!UPDATE_OPERATORS_KNOWN.has(op))
      throw fail(
        9,
        'FailedToParse',
        `Unknown modifier: ${op}. Expected a valid update modifier or pipeline-style update specified as an array`,
      );
    if (!UPDATE_OPERATORS_SUPPORTED.has(op)) throw notImplemented(`the update operator ${op}`);
    if (!isPlainDoc(arg)) {
      throw fail(
        9,
        'FailedToParse',
        `Modifiers operate on fields but we found type ${typeName(arg)} instead. For example: {$mod: {<field>: ...}} not {${op}: ${shellRepr(arg)}}`,
      );
    }
    for (const [field, value] of Object.entries(arg).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      if (field.split('.').some((p) => p.startsWith('$'))) throw notImplemented(`the positional path '${field}'`);
      const parts = splitPath(field, 'update path');
      if (op === '$inc' && !isNumeric(value)) {
        throw fail(14, 'TypeMismatch', `Cannot increment with non-numeric argument: {${field}: ${shellRepr(value)}}`);
      }
      ops.push({ op, field, parts, value });
      paths.push(field);
    }
  }
  for (let i = 0; i < paths.length; i++) {
    for (let j = 0; j < i; j++) {
      const [a, b] = [paths[i], paths[j]];
      if (a === b || a.startsWith(`${b}.`) || b.startsWith(`${a}.`)) {
        throw fail(
          40,
          'ConflictingUpdateOperators',
          `Updating the path '${a}' would create a conflict at '${a.length < b.length ? a : b}'`,
        );
      }
    }
  }
  return { ops };
}

function isContainer(v) {
  return Array.isArray(v) || isPlainDoc(v);
}

function pathNotViable(parts, i, holder) {
  return fail(28, 'PathNotViable', `Cannot create field '${parts[i]}' in element {${parts[i - 1] ?? ''}: ${shellRepr(holder)}}`);
}

function getChild(container, part) {
  if (Array.isArray(container)) return /^\d+$/.test(part) && Number(part) < container.length ? container[Number(part)] : MISSING;
  return Object.hasOwn(container, part) ? container[part] : MISSING;
}

function putChild(container, part, value, parts, i) {
  if (Array.isArray(container)) {
    if (!/^\d+$/.test(part)) throw pathNotViable(parts, i, container);
    const index = Number(part);
    while (container.length < index) container.push(null);
    container[index] = value;
  } else container[part] = value;
}

/** Walks to the parent of a path's last part, creating documents for missing parts when `create`. */
function parentOf(doc, parts, create) {
  let cur = doc;
  for (let i = 0; i < parts.length - 1; i++) {
    let next = getChild(cur, parts[i]);
    if (next === MISSING) {
      if (!create) return null;
      next = {};
      putChild(cur, parts[i], next, parts, i);
    } else if (!isContainer(next)) {
      if (!create) return null;
      throw pathNotViable(parts, i + 1, next);
    }
    cur = next;
  }
  return cur;
}

function applyOperators(doc, ops, inserting) {
  for (const { op, parts, value, field } of ops) {
    const last = parts[parts.length - 1];
    switch (op) {
      case '$setOnInsert':
        if (!inserting) break;
      // falls through
      case '$set': {
        const parent = parentOf(doc, parts, true);
        putChild(parent, last, cloneValue(value), parts, parts.length - 1);
        break;
      }
      case '$unset': {
        const parent = parentOf(doc, parts, false);
        if (!parent) break;
        if (Array.isArray(parent)) {
          if (getChild(parent, last) !== MISSING) parent[Number(last)] = null;
        } else delete parent[last];
        break;
      }
      case '$inc': {
        const parent = parentOf(doc, parts, true);
        const current = getChild(parent, last);
        if (current === MISSING) putChild(parent, last, cloneValue(value), parts, parts.length - 1);
        else if (!isNumeric(current)) {
          throw fail(
            14,
            'TypeMismatch',
            `Cannot apply $inc to a value of non-numeric type. {_id: ${shellRepr(doc._id)}} has the field '${field}' of non-numeric type ${typeName(current)}`,
          );
        } else putChild(parent, last, addNumbers(current, value), parts, parts.length - 1);
        break;
      }
      default:
        throw notImplemented(`the update operator ${op}`);
    }
  }
}

function cloneValue(v) {
  if (Array.isArray(v)) return v.map(cloneValue);
  if (isPlainDoc(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, cloneValue(x)]));
  return v;
}

/** The equality conditions of a filter, as the document an upsert starts from. */
function upsertSeed(filter) {
  const seed = {};
  const visit = (f) => {
    for (const [key, value] of Object.entries(f)) {
      if (key === '$and' && Array.isArray(value)) {
        for (const sub of value) if (isPlainDoc(sub)) visit(sub);
        continue;
      }
      if (key.startsWith('$')) continue;
      let eq = MISSING;
      if (!isOperatorDoc(value)) eq = value;
      else if (Object.hasOwn(value, '$eq')) eq = value.$eq;
      if (eq === MISSING || isRegexValue(eq)) continue;
      const parts = key.split('.');
      const parent = parentOf(seed, parts, true);
      putChild(parent, parts[parts.length - 1], cloneValue(eq), parts, parts.length - 1);
    }
  };
  visit(filter);
  return seed;
}

function withIdFirst(doc) {
  if (!Object.hasOwn(doc, '_id')) return { _id: new ObjectId(), ...doc };
  const { _id, ...rest } = doc;
  return { _id, ...rest };
}

// ---------------------------------------------------------------------------------------------------
// Aggregation

const STAGES_KNOWN = new Set([
  '$addFields',
  '$bucket',
  '$bucketAuto',
  '$changeStream',
  '$changeStreamSplitLargeEvent',
  '$collStats',
  '$count',
  '$currentOp',
  '$densify',
  '$documents',
  '$facet',
  '$fill',
  '$geoNear',
  '$graphLookup',
  '$group',
  '$indexStats',
  '$limit',
  '$listLocalSessions',
  '$listSampledQueries',
  '$listSearchIndexes',
  '$listSessions',
  '$lookup',
  '$match',
  '$merge',
  '$out',
  '$planCacheStats',
  '$project',
  '$redact',
  '$replaceRoot',
  '$replaceWith',
  '$sample',
  '$search',
  '$searchMeta',
  '$set',
  '$setWindowFields',
  '$shardedDataDistribution',
  '$skip',
  '$sort',
  '$sortByCount',
  '$unionWith',
  '$unset',
  '$unwind',
  '$vectorSearch',
]);
const ACCUMULATORS_KNOWN = new Set([
  '$accumulator',
  '$addToSet',
  '$avg',
  '$bottom',
  '$bottomN',
  '$count',
  '$first',
  '$firstN',
  '$last',
  '$lastN',
  '$max',
  '$maxN',
  '$median',
  '$mergeObjects',
  '$min',
  '$minN',
  '$percentile',
  '$push',
  '$stdDevPop',
  '$stdDevSamp',
  '$sum',
  '$top',
  '$topN',
]);

/** Expressions of `$group`: constants, `"$field.path"`, `"$$ROOT"`, objects of those, `{$literal}`. */
function compileExpression(expr) {
  if (typeof expr === 'string' && expr.startsWith('$')) {
    if (expr === '$$ROOT' || expr === '$$CURRENT') return (doc) => doc;
    if (expr.startsWith('$$')) throw notImplemented(`the variable ${expr}`);
    const parts = splitPath(expr.slice(1));
    return (doc) => exprPath(doc, parts, 0);
  }
  if (Array.isArray(expr)) {
    const items = expr.map(compileExpression);
    return (doc) =>
      items.map((f) => {
        const v = f(doc);
        return v === MISSING ? null : v;
      });
  }
  if (isPlainDoc(expr)) {
    const keys = Object.keys(expr);
    if (keys.length === 1 && keys[0] === '$literal') return () => expr.$literal;
    if (keys.some((k) => k.startsWith('$'))) throw notImplemented(`the expression operator ${keys.find((k) => k.startsWith('$'))}`);
    const fields = keys.map((k) => [k, compileExpression(expr[k])]);
    return (doc) => {
      const out = {};
      for (const [k, f] of fields) {
        const v = f(doc);
        if (v !== MISSING) out[k] = v;
      }
      return out;
    };
  }
  return () => expr;
}

function exprPath(v, parts, i) {
  if (i === parts.length) return v;
  if (Array.isArray(v)) {
    const out = [];
    for (const e of v) {
      if (isPlainDoc(e) || Array.isArray(e)) {
        const r = exprPath(e, parts, i);
        if (r !== MISSING) out.push(r);
      }
    }
    return out;
  }
  if (isPlainDoc(v) && Object.hasOwn(v, parts[i])) return exprPath(v[parts[i]], parts, i + 1);
  return MISSING;
}

function compileGroup(spec) {
  if (!isPlainDoc(spec)) throw fail(15947, 'Location15947', "a group's fields must be specified in an object");
  if (!Object.hasOwn(spec, '_id')) throw fail(15955, 'Location15955', 'a group specification must include an _id');
  const idExpr = compileExpression(spec._id);
  const accumulators = [];
  for (const [field, acc] of Object.entries(spec)) {
    if (field === '_id') continue;
    if (field.includes('.')) throw fail(40235, 'Location40235', `The field name '${field}' cannot contain '.'`);
    if (!isPlainDoc(acc) || Object.keys(acc).length !== 1)
      throw fail(40234, 'Location40234', `The field '${field}' must be an accumulator object`);
    const [op, arg] = Object.entries(acc)[0];
    if (!ACCUMULATORS_KNOWN.has(op)) throw fail(15952, 'Location15952', `unknown group operator '${op}'`);
    if (!['$sum', '$avg', '$min', '$max', '$first', '$last', '$push', '$count'].includes(op)) throw notImplemented(`the accumulator ${op}`);
    if (op === '$count' && !(isPlainDoc(arg) && Object.keys(arg).length === 0)) throw badValue('$count takes no arguments, i.e. $count:{}');
    accumulators.push({ field, op, expr: op === '$count' ? () => new Int32(1) : compileExpression(arg) });
  }
  return (docs, ctx) => {
    const groups = new Map();
    let n = 0;
    for (const doc of docs) {
      if (++n % 1024 === 0) ctx.checkTime();
      let id = idExpr(doc);
      if (id === MISSING) id = null;
      const key = valueKey(id);
      let group = groups.get(key);
      if (!group) {
        group = { id, states: accumulators.map(() => ({ sum: new Int32(0), count: 0, value: MISSING, items: [] })) };
        groups.set(key, group);
      }
      accumulators.forEach((acc, i) => accumulate(acc.op, group.states[i], acc.expr(doc)));
    }
    return [...groups.values()].map((group) => {
      const out = { _id: group.id };
      accumulators.forEach((acc, i) => {
        out[acc.field] = finishAccumulator(acc.op, group.states[i]);
      });
      return out;
    });
  };
}

function accumulate(op, state, v) {
  switch (op) {
    case '$sum':
    case '$count':
      if (isNumeric(v)) state.sum = addNumbers(state.sum, v);
      break;
    case '$avg':
      if (isNumeric(v)) {
        state.sum = addNumbers(state.sum, v);
        state.count++;
      }
      break;
    case '$min':
    case '$max':
      if (v === MISSING || v === null || v === undefined) break;
      if (state.value === MISSING || (op === '$min' ? compareValues(v, state.value) < 0 : compareValues(v, state.value) > 0))
        state.value = v;
      break;
    case '$first':
      if (state.count++ === 0) state.value = v;
      break;
    case '$last':
      state.value = v;
      break;
    case '$push':
      if (v !== MISSING) state.items.push(v);
      break;
    default:
      break;
  }
}

function finishAccumulator(op, state) {
  switch (op) {
    case '$sum':
    case '$count':
      return state.sum;
    case '$avg':
      return state.count ? new Double(toNumber(state.sum) / state.count) : null;
    case '$push':
      return state.items;
    default:
      return state.value === MISSING ? null : state.value;
  }
}

function positiveInteger(v, what, code, message) {
  if (!isNumeric(v) || !Number.isInteger(toNumber(v)))
    throw fail(code, `Location${code}`, `${what} must be an integer, got ${shellRepr(v)}`);
  const n = toNumber(v);
  if (n < 0 || (message.includes('positive') && n === 0)) throw fail(code, `Location${code}`, message);
  return n;
}

function compilePipeline(pipeline) {
  if (!Array.isArray(pipeline)) throw fail(14, 'TypeMismatch', "'pipeline' option must be specified as an array");
  return pipeline.map((stage) => {
    if (!isPlainDoc(stage) || Object.keys(stage).length !== 1) {
      throw fail(40323, 'Location40323', 'A pipeline stage specification object must contain exactly one field.');
    }
    const [name, arg] = Object.entries(stage)[0];
    switch (name) {
      case '$match': {
        const match = compileFilter(arg);
        return (docs, ctx) =>
          docs.filter((d, i) => {
            if (i % 1024 === 0) ctx.checkTime();
            return match(d);
          });
      }
      case '$sort': {
        if (!isPlainDoc(arg) || Object.keys(arg).length === 0)
          throw fail(15976, 'Location15976', '$sort stage must have at least one sort key');
        const cmp = compileSort(arg);
        return (docs) => [...docs].sort(cmp);
      }
      case '$skip': {
        const n = positiveInteger(
          arg,
          '$skip',
          15956,
          `invalid argument to $skip stage: Expected a non-negative number in: $skip: ${shellRepr(arg)}`,
        );
        return (docs) => docs.slice(n);
      }
      case '$limit': {
        const n = positiveInteger(arg, '$limit', 15958, 'the limit must be positive');
        return (docs) => docs.slice(0, n);
      }
      case '$count': {
        if (typeof arg !== 'string' || arg === '') throw fail(40156, 'Location40156', 'the count field must be a non-empty string');
        if (arg.startsWith('$')) throw fail(40158, 'Location40158', 'the count field cannot be a $-prefixed path');
        if (arg.includes('.')) throw fail(40160, 'Location40160', "the count field cannot contain '.'");
        return (docs) => (docs.length === 0 ? [] : [{ [arg]: new Int32(docs.length) }]);
      }
      case '$project': {
        if (!isPlainDoc(arg) || Object.keys(arg).length === 0)
          throw fail(51272, 'Location51272', '$project specification must have at least one field');
        const project = compileProjection(arg);
        return (docs) => docs.map(project);
      }
      case '$group': {
        const group = compileGroup(arg);
        return (docs, ctx) => group(docs, ctx);
      }
      default:
        if (STAGES_KNOWN.has(name)) throw notImplemented(`the aggregation stage ${name}`);
        throw fail(40324, 'Location40324', `Unrecognized pipeline stage name: '${name}'`);
    }
  });
}

// ---------------------------------------------------------------------------------------------------
// Storage: documents in memory (each with its BSON bytes), one file per database under dbpath.

class Entry {
  constructor(doc, raw) {
    this.doc = doc;
    this.raw = raw;
    this.key = valueKey(doc._id);
  }
}

class Collection {
  constructor(dbName, name, options = {}, uuid = new UUID()) {
    this.dbName = dbName;
    this.name = name;
    this.options = options;
    this.uuid = uuid;
    this.entries = [];
    this.byId = new Map();
    this.dataSize = 0;
  }

  get ns() {
    return `${this.dbName}.${this.name}`;
  }

  add(entry) {
    this.entries.push(entry);
    this.byId.set(entry.key, entry);
    this.dataSize += entry.raw.length;
  }

  replace(entry, next) {
    const i = this.entries.indexOf(entry);
    this.entries[i] = next;
    this.byId.delete(entry.key);
    this.byId.set(next.key, next);
    this.dataSize += next.raw.length - entry.raw.length;
  }

  removeAll(set) {
    if (set.size === 0) return;
    this.entries = this.entries.filter((e) => !set.has(e));
    for (const e of set) {
      this.byId.delete(e.key);
      this.dataSize -= e.raw.length;
    }
  }
}

function validateDbName(name) {
  if (typeof name !== 'string' || name === '' || name.length >= 64 || /[/\\. "$*<>:|?\0]/.test(name)) {
    throw fail(73, 'InvalidNamespace', `Invalid database name: '${String(name)}'`);
  }
}

function validateCollectionName(db, name) {
  if (typeof name !== 'string') throw fail(73, 'InvalidNamespace', `collection name has invalid type ${typeName(name)}`);
  if (name === '' || name.includes('\0') || name.includes('$') || name.startsWith('.') || Buffer.byteLength(`${db}.${name}`) > 255) {
    throw fail(73, 'InvalidNamespace', `Invalid namespace specified '${db}.${name}'`);
  }
}

class Store {
  constructor(dbpath, log) {
    this.dbpath = dbpath;
    this.log = log;
    this.databases = new Map();
    this.writes = new Map();
    this.fresh = true;
  }

  fileOf(db) {
    return path.join(this.dbpath, `${db}${FILE_SUFFIX}`);
  }

  load() {
    if (!this.dbpath) return;
    fs.mkdirSync(this.dbpath, { recursive: true });
    for (const name of fs.readdirSync(this.dbpath)) {
      if (name.includes(`${FILE_SUFFIX}.tmp`)) {
        fs.rmSync(path.join(this.dbpath, name), { force: true });
        continue;
      }
      if (!name.endsWith(FILE_SUFFIX)) continue;
      const file = path.join(this.dbpath, name);
      this.loadFile(file, name.slice(0, -FILE_SUFFIX.length));
      this.fresh = false;
    }
  }

  loadFile(file, dbName) {
    const bytes = fs.readFileSync(file);
    let offset = 0;
    const next = () => {
      if (offset + 5 > bytes.length) throw new Error(`${file}: truncated`);
      const size = bytes.readInt32LE(offset);
      if (size < 5 || offset + size > bytes.length) throw new Error(`${file}: truncated or corrupt at byte ${offset}`);
      const raw = bytes.subarray(offset, offset + size);
      offset += size;
      return raw;
    };
    const header = deserialize(next());
    if (header.format !== FILE_FORMAT || header.db !== dbName) throw new Error(`${file}: not a database file of this stand-in`);
    const db = new Map();
    while (offset < bytes.length) {
      const meta = deserialize(next(), { promoteValues: true });
      const coll = new Collection(dbName, meta.collection, meta.options ?? {}, meta.uuid ?? new UUID());
      for (let i = 0; i < meta.count; i++) {
        const raw = Buffer.from(next());
        coll.add(new Entry(deserialize(raw, DESERIALIZE), raw));
      }
      db.set(coll.name, coll);
    }
    this.databases.set(dbName, db);
  }

  collection(dbName, name) {
    return this.databases.get(dbName)?.get(name) ?? null;
  }

  /** The collection, created implicitly (as an insert or an upsert does) when missing. */
  ensureCollection(dbName, name, options = {}) {
    validateDbName(dbName);
    validateCollectionName(dbName, name);
    let db = this.databases.get(dbName);
    if (!db) {
      db = new Map();
      this.databases.set(dbName, db);
    }
    let coll = db.get(name);
    if (!coll) {
      coll = new Collection(dbName, name, options);
      db.set(name, coll);
    }
    return coll;
  }

  dropCollection(dbName, name) {
    const db = this.databases.get(dbName);
    if (!db?.delete(name)) return false;
    if (db.size === 0) this.databases.delete(dbName);
    return true;
  }

  dropDatabase(dbName) {
    return this.databases.delete(dbName);
  }

  /**
   * Writes the database's file (temp file, fsync, rename), after the writes that came before this call.
   * Calls made while a write waits to start share it; the snapshot is taken when it starts.
   */
  persist(dbName) {
    if (!this.dbpath) return Promise.resolve();
    let state = this.writes.get(dbName);
    if (!state) {
      state = { tail: Promise.resolve(), pending: null };
      this.writes.set(dbName, state);
    }
    if (state.pending) return state.pending;
    const pending = state.tail.then(() => {
      if (state.pending === pending) state.pending = null;
      return this.writeSnapshot(dbName);
    });
    state.pending = pending;
    state.tail = pending.catch(() => undefined);
    return pending;
  }

  async writeSnapshot(dbName) {
    const file = this.fileOf(dbName);
    const db = this.databases.get(dbName);
    if (!db || db.size === 0) {
      await fsp.rm(file, { force: true });
      return;
    }
    const parts = [serialize({ format: FILE_FORMAT, version: 1, db: dbName })];
    for (const coll of db.values()) {
      parts.push(serialize({ collection: coll.name, options: coll.options, uuid: coll.uuid, count: coll.entries.length }));
      for (const e of coll.entries) parts.push(e.raw);
    }
    const tmp = `${file}.tmp`;
    const handle = await fsp.open(tmp, 'w');
    try {
      for (let i = 0; i < parts.length; ) {
        const chunk = [];
        let bytes = 0;
        while (i < parts.length && (chunk.length === 0 || bytes < 8 * 1024 * 1024)) {
          bytes += parts[i].length;
          chunk.push(parts[i++]);
        }
        await handle.write(Buffer.concat(chunk, bytes));
      }
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fsp.rename(tmp, file);
  }

  async flush() {
    await Promise.all([...this.writes.values()].map((s) => s.tail));
  }
}

// ---------------------------------------------------------------------------------------------------
// SCRAM (RFC 5802 / 7677) as mongod does it: SHA-1 over the legacy `user:mongo:password` MD5 digest,
// SHA-256 over the (SASLprepped) password. Credentials are stored like mongod's admin.system.users.

const SCRAM = {
  'SCRAM-SHA-1': { hash: 'sha1', size: 20, saltSize: 16, iterations: 10000 },
  'SCRAM-SHA-256': { hash: 'sha256', size: 32, saltSize: 28, iterations: 15000 },
};

/** SASLprep (RFC 4013) for what passwords contain in practice: spaces mapped, NFKC, controls refused. */
function saslprep(password) {
  const mapped = password
    .replace(/[\u00A0\u1680\u2000-\u200B\u202F\u205F\u3000]/g, ' ')
    .replace(/[\u00AD\u034F\u1806\u180B-\u180D\u200C\u200D\u2060\uFE00-\uFE0F\uFEFF]/g, '');
  return mapped.normalize('NFKC');
}

function scramCredentials(mechanism, user, password) {
  const { hash, size, saltSize, iterations } = SCRAM[mechanism];
  const secret =
    mechanism === 'SCRAM-SHA-1' ? crypto.createHash('md5').update(`${user}:mongo:${password}`).digest('hex') : saslprep(password);
  const salt = crypto.randomBytes(saltSize);
  const salted = crypto.pbkdf2Sync(secret, salt, iterations, size, hash);
  const clientKey = crypto.createHmac(hash, salted).update('Client Key').digest();
  return {
    iterationCount: iterations,
    salt: salt.toString('base64'),
    storedKey: crypto.createHash(hash).update(clientKey).digest('base64'),
    serverKey: crypto.createHmac(hash, salted).update('Server Key').digest('base64'),
  };
}

function userDocument(user, password) {
  return {
    _id: `admin.${user}`,
    userId: new UUID(),
    user,
    db: 'admin',
    credentials: {
      'SCRAM-SHA-1': scramCredentials('SCRAM-SHA-1', user, password),
      'SCRAM-SHA-256': scramCredentials('SCRAM-SHA-256', user, password),
    },
    roles: [{ role: 'root', db: 'admin' }],
  };
}

function payloadText(payload) {
  if (typeof payload === 'string') return payload;
  if (bsonTypeOf(payload) === 'Binary') return binaryBytes(payload).toString('utf8');
  if (ArrayBuffer.isView(payload)) return Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength).toString('utf8');
  throw fail(17, 'ProtocolError', 'SASL payload must be BinData or a string');
}

function scramAttributes(text) {
  const out = {};
  for (const part of text.split(',')) {
    const eq = part.indexOf('=');
    if (eq === 1) out[part[0]] = part.slice(2);
  }
  return out;
}

const authFailed = () => fail(18, 'AuthenticationFailed', 'Authentication failed.');

// ---------------------------------------------------------------------------------------------------
// Wire protocol

const CRC32C_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

export function crc32c(bytes) {
  let c = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) c = CRC32C_TABLE[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function readCString(buf, offset, end) {
  const zero = buf.indexOf(0, offset);
  if (zero < 0 || zero >= end) throw new ProtocolError('unterminated cstring');
  return [buf.toString('utf8', offset, zero), zero + 1];
}

function readDocument(buf, offset, end, maxSize) {
  if (offset + 5 > end) throw new ProtocolError('truncated document');
  const size = buf.readInt32LE(offset);
  if (size < 5 || offset + size > end) throw new ProtocolError('invalid document size');
  if (size > maxSize) {
    throw fail(
      10334,
      'BSONObjectTooLarge',
      `BSONObj size: ${size} (0x${size.toString(16).toUpperCase()}) is invalid. Size must be between 0 and ${MAX_COMMAND_SIZE}(16MB)`,
    );
  }
  const raw = buf.subarray(offset, offset + size);
  let doc;
  try {
    doc = deserialize(raw, DESERIALIZE);
  } catch (e) {
    throw new ProtocolError(`invalid BSON: ${e.message}`);
  }
  return [doc, offset + size];
}

/** OP_MSG: flag bits, one kind-0 body, kind-1 document sequences folded into the body as arrays. */
function parseOpMsg(msg) {
  const end0 = msg.length;
  const flags = msg.readUInt32LE(16);
  if (flags & MSG_REQUIRED_BITS & ~MSG_KNOWN_BITS) throw new ProtocolError('unknown required OP_MSG flag bits');
  let end = end0;
  if (flags & MSG_CHECKSUM_PRESENT) {
    if (end0 < 25) throw new ProtocolError('OP_MSG too short for a checksum');
    end = end0 - 4;
    if (crc32c(msg.subarray(0, end)) !== msg.readUInt32LE(end)) throw new ProtocolError('OP_MSG checksum mismatch');
  }
  let offset = 20;
  let body = null;
  let bodyError = null;
  const sequences = [];
  while (offset < end) {
    const kind = msg[offset++];
    if (kind === 0) {
      if (body || bodyError) throw new ProtocolError('OP_MSG with several bodies');
      try {
        [body, offset] = readDocument(msg, offset, end, MAX_COMMAND_SIZE);
      } catch (e) {
        if (!(e instanceof CommandError)) throw e;
        bodyError = e;
        offset += msg.readInt32LE(offset);
      }
    } else if (kind === 1) {
      if (offset + 4 > end) throw new ProtocolError('truncated document sequence');
      const size = msg.readInt32LE(offset);
      const seqEnd = offset + size;
      if (size < 5 || seqEnd > end) throw new ProtocolError('invalid document sequence size');
      let [identifier, pos] = readCString(msg, offset + 4, seqEnd);
      const docs = [];
      while (pos < seqEnd) {
        let doc;
        [doc, pos] = readDocument(msg, pos, seqEnd, Infinity);
        docs.push(doc);
      }
      sequences.push([identifier, docs]);
      offset = seqEnd;
    } else {
      throw new ProtocolError(`unknown OP_MSG section kind ${kind}`);
    }
  }
  if (offset !== end) throw new ProtocolError('OP_MSG sections overrun the message');
  if (!body && !bodyError) throw new ProtocolError('OP_MSG without a body');
  return { flags, body, bodyError, sequences };
}

function parseOpQuery(msg) {
  const flags = msg.readInt32LE(16);
  const [ns, afterNs] = readCString(msg, 20, msg.length);
  if (afterNs + 8 > msg.length) throw new ProtocolError('truncated OP_QUERY');
  const [query, afterQuery] = readDocument(msg, afterNs + 8, msg.length, MAX_COMMAND_SIZE);
  if (afterQuery < msg.length) readDocument(msg, afterQuery, msg.length, MAX_COMMAND_SIZE); // returnFieldsSelector
  return { flags, ns, query };
}

/** A raw BSON array of already-serialized documents (cursor batches are not re-encoded). */
class RawArray {
  constructor(docs) {
    this.docs = docs;
  }
}

function cstring(s) {
  return Buffer.from(`${s}\0`, 'utf8');
}

/** Serializes a reply; plain objects are walked so a RawArray can sit anywhere in them. */
function encodeDocument(obj) {
  const parts = [];
  let size = 5;
  for (const [key, value] of Object.entries(obj)) {
    if (value === undefined) continue;
    let element;
    if (value instanceof RawArray) {
      const items = [];
      let arraySize = 5;
      value.docs.forEach((raw, i) => {
        const k = cstring(String(i));
        items.push(Buffer.from([0x03]), k, raw);
        arraySize += 1 + k.length + raw.length;
      });
      const head = Buffer.alloc(4);
      head.writeInt32LE(arraySize);
      element = Buffer.concat([Buffer.from([0x04]), cstring(key), head, ...items, Buffer.from([0])]);
    } else if (isPlainDoc(value)) {
      element = Buffer.concat([Buffer.from([0x03]), cstring(key), encodeDocument(value)]);
    } else {
      const one = serialize({ [key]: value });
      element = one.subarray(4, one.length - 1);
    }
    parts.push(element);
    size += element.length;
  }
  const head = Buffer.alloc(4);
  head.writeInt32LE(size);
  return Buffer.concat([head, ...parts, Buffer.from([0])], size);
}

let nextRequestId = 1;

function header(length, responseTo, opCode) {
  const h = Buffer.alloc(16);
  h.writeInt32LE(length, 0);
  h.writeInt32LE(nextRequestId, 4);
  nextRequestId = (nextRequestId + 1) & 0x7fffffff || 1;
  h.writeInt32LE(responseTo, 8);
  h.writeInt32LE(opCode, 12);
  return h;
}

function opMsgReply(responseTo, doc, flags = 0) {
  const body = encodeDocument(doc);
  const fl = Buffer.alloc(5);
  fl.writeUInt32LE(flags >>> 0, 0);
  fl[4] = 0;
  return Buffer.concat([header(16 + 5 + body.length, responseTo, OP_MSG), fl, body]);
}

function opReply(responseTo, doc) {
  const body = encodeDocument(doc);
  const fields = Buffer.alloc(20);
  fields.writeInt32LE(8, 0); // AwaitCapable, as mongod sets it
  // cursorID 0, startingFrom 0
  fields.writeInt32LE(1, 16); // numberReturned
  return Buffer.concat([header(16 + 20 + body.length, responseTo, OP_REPLY), fields, body]);
}

function errorReply(e) {
  return { ok: new Double(0), errmsg: e.message, code: e.code, codeName: e.codeName, ...e.extra };
}

const OK = () => new Double(1);

// ---------------------------------------------------------------------------------------------------
// Connections

const UNAUTHENTICATED_COMMANDS = new Set([
  'hello',
  'isMaster',
  'ismaster',
  'ping',
  'saslStart',
  'saslContinue',
  'buildInfo',
  'buildinfo',
  'connectionStatus',
]);

const GENERIC_FIELDS = new Set([
  '$db',
  'lsid',
  'txnNumber',
  'autocommit',
  'startTransaction',
  'stmtId',
  '$clusterTime',
  '$readPreference',
  'readConcern',
  'writeConcern',
  'maxTimeMS',
  'comment',
  'apiVersion',
  'apiStrict',
  'apiDeprecationErrors',
  '$audit',
  '$client',
  'clientOperationKey',
  'mayBypassWriteBlocking',
  '$configTime',
  '$topologyTime',
  'databaseVersion',
  'shardVersion',
  'rawData',
  '$queryOptions',
  'backpressure',
]);

class Connection {
  constructor(server, socket) {
    this.server = server;
    this.socket = socket;
    this.id = ++server.connectionCounter;
    this.chunks = [];
    this.buffered = 0;
    this.queue = [];
    this.queuedBytes = 0;
    this.processing = false;
    this.closed = false;
    this.user = null;
    this.sasl = null;
    this.saslCounter = 0;
    this.sawHello = false;
    this.waiters = new Set();
    socket.setNoDelay(true);
    socket.on('data', (chunk) => this.onData(chunk));
    socket.on('error', () => this.destroy());
    socket.on('close', () => this.destroy());
  }

  get remote() {
    return `${this.socket.remoteAddress}:${this.socket.remotePort}`;
  }

  destroy(reason) {
    if (this.closed) return;
    this.closed = true;
    if (reason)
      this.server.log('W', 'NETWORK', 22989, 'Closing the connection after a malformed message', {
        connectionId: this.id,
        remote: this.remote,
        reason,
      });
    this.socket.destroy();
    for (const w of this.waiters) w();
    this.waiters.clear();
    this.chunks = [];
    this.queue = [];
    this.server.connections.delete(this);
  }

  /** Waits `ms`, or less when the connection closes first (true when the wait was cut short). */
  wait(ms) {
    return new Promise((resolve) => {
      if (this.closed) return resolve(true);
      let timer = null;
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        resolve(this.closed);
      };
      timer = setTimeout(done, ms);
      this.waiters.add(done);
    });
  }

  onData(chunk) {
    if (this.closed) return;
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    try {
      while (this.buffered >= 4) {
        if (this.chunks[0].length < 4) this.chunks = [Buffer.concat(this.chunks)];
        const length = this.chunks[0].readInt32LE(0);
        if (length < 16 || length > MAX_MESSAGE_SIZE) throw new ProtocolError(`message length ${length} is invalid`);
        if (this.buffered < length) break;
        const all = this.chunks.length === 1 ? this.chunks[0] : Buffer.concat(this.chunks);
        this.queue.push(all.subarray(0, length));
        this.queuedBytes += length;
        const rest = all.subarray(length);
        this.chunks = rest.length ? [rest] : [];
        this.buffered = rest.length;
      }
    } catch (e) {
      this.destroy(e.message);
      return;
    }
    // A client that sends faster than commands run (moreToCome writes) is read no further for a while.
    if (this.queuedBytes > 64 * 1024 * 1024) this.socket.pause();
    void this.drain();
  }

  async drain() {
    if (this.processing) return;
    this.processing = true;
    try {
      while (!this.closed && this.queue.length > 0) {
        const msg = this.queue.shift();
        this.queuedBytes -= msg.length;
        if (this.socket.isPaused() && this.queuedBytes < 16 * 1024 * 1024) this.socket.resume();
        try {
          await this.handleMessage(msg);
        } catch (e) {
          if (e instanceof ProtocolError) this.destroy(e.message);
          else {
            this.server.log('E', 'NETWORK', 22990, 'Unexpected error, closing the connection', {
              connectionId: this.id,
              error: String(e?.stack ?? e),
            });
            this.destroy();
          }
        }
      }
    } finally {
      this.processing = false;
    }
  }

  send(buffer) {
    if (!this.closed) this.socket.write(buffer);
  }

  async handleMessage(msg) {
    if (msg.length < 16) throw new ProtocolError('short message');
    const requestId = msg.readInt32LE(4);
    const opCode = msg.readInt32LE(12);
    if (opCode === OP_MSG) {
      if (msg.length < 21) throw new ProtocolError('short OP_MSG');
      const { flags, body, bodyError, sequences } = parseOpMsg(msg);
      const moreToCome = (flags & MSG_MORE_TO_COME) !== 0;
      let reply;
      if (bodyError) reply = errorReply(bodyError);
      else {
        for (const [identifier, docs] of sequences) {
          if (Object.hasOwn(body, identifier)) {
            reply = errorReply(fail(40431, 'Location40431', `Duplicate field ${identifier} in OP_MSG`));
            break;
          }
          body[identifier] = docs;
        }
        if (!reply) {
          const exhaust = (flags & MSG_EXHAUST_ALLOWED) !== 0 && !moreToCome;
          reply = await this.server.runCommand(this, body, { exhaust, requestId });
        }
      }
      if (!moreToCome && reply) this.send(opMsgReply(requestId, reply));
      return;
    }
    if (opCode === OP_QUERY) {
      const { ns, query } = parseOpQuery(msg);
      const cmd = isPlainDoc(query.$query) ? query.$query : isPlainDoc(query.query) ? query.query : query;
      const name = Object.keys(cmd)[0];
      let reply;
      if (ns.endsWith('.$cmd') && (name === 'hello' || name === 'isMaster' || name === 'ismaster')) {
        try {
          reply = this.server.hello(this, cmd, name, ns.slice(0, -5));
        } catch (e) {
          reply = errorReply(e instanceof CommandError ? e : fail(1, 'InternalError', String(e.message)));
        }
      } else {
        reply = errorReply(
          fail(
            352,
            'UnsupportedOpQueryCommand',
            `Unsupported OP_QUERY command: ${name}. The client driver may require an upgrade. For more details see https://dochub.mongodb.org/core/legacy-opcode-removal`,
          ),
        );
      }
      this.send(opReply(requestId, reply));
      return;
    }
    throw new ProtocolError(`unsupported opCode ${opCode}`);
  }
}

// ---------------------------------------------------------------------------------------------------
// The server and its commands

function numberArg(cmdName, field, v, { min, integer = true } = {}) {
  if (v === undefined || v === null) return undefined;
  if (!isNumeric(v))
    throw fail(
      14,
      'TypeMismatch',
      `BSON field '${cmdName}.${field}' is the wrong type '${typeName(v)}', expected types '[long, int, decimal, double]'`,
    );
  const n = toNumber(v);
  if (integer && !Number.isInteger(n)) throw badValue(`BSON field '${cmdName}.${field}' value must be an integer, actual value '${n}'`);
  if (min !== undefined && n < min)
    throw fail(51024, 'Location51024', `BSON field '${field}' value must be >= ${min}, actual value '${n}'`);
  return n;
}

function docArg(cmdName, field, v) {
  if (v === undefined || v === null) return undefined;
  if (!isPlainDoc(v)) throw typeMismatch(cmdName, field, v, 'object');
  return v;
}

function arrayArg(cmdName, field, v) {
  if (!Array.isArray(v)) throw typeMismatch(cmdName, field, v, 'array');
  return v;
}

function checkFields(cmdName, cmd, allowed) {
  for (const key of Object.keys(cmd)) {
    if (key === cmdName || GENERIC_FIELDS.has(key) || allowed.includes(key)) continue;
    throw fail(40415, 'Location40415', `BSON field '${cmdName}.${key}' is an unknown field.`);
  }
}

function refuseUnsupported(cmdName, cmd, fields) {
  for (const f of fields) {
    const v = cmd[f];
    if (v !== undefined && v !== null && v !== false && !(isPlainDoc(v) && Object.keys(v).length === 0))
      throw notImplemented(`the option '${cmdName}.${f}'`);
  }
}

function lsidKey(cmd) {
  const id = cmd.lsid?.id;
  if (bsonTypeOf(id) === 'Binary') return binaryBytes(id).toString('hex');
  return null;
}

function uuidText(hex) {
  return hex && hex.length === 32
    ? `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
    : String(hex);
}

class StandinServer {
  constructor(options) {
    this.host = options.host ?? '127.0.0.1';
    this.requestedPort = options.port ?? 27017;
    this.rootUser = options.rootUser || null;
    this.rootPassword = options.rootPassword || null;
    this.authRequired = Boolean((this.rootUser && this.rootPassword) || options.auth);
    this.testCommands = Boolean(options.testCommands);
    this.logEnabled = Boolean(options.log);
    this.store = new Store(options.dbpath ?? null);
    this.connections = new Set();
    this.connectionCounter = 0;
    this.totalConnections = 0;
    this.cursors = new Map();
    this.processId = new ObjectId();
    this.startedAt = Date.now();
    this.opcounters = { insert: 0, query: 0, update: 0, delete: 0, getmore: 0, command: 0 };
    this.tcp = null;
    this.sweeper = null;
  }

  log(severity, component, id, msg, attr = {}) {
    if (!this.logEnabled) return;
    const line = { t: { $date: new Date().toISOString() }, s: severity, c: component, id, ctx: 'standin', msg, attr };
    process.stdout.write(`${JSON.stringify(line)}\n`);
  }

  async start() {
    this.store.load();
    this.initialize();
    await Promise.all([...this.store.databases.keys()].map((db) => this.store.persist(db)));
    this.tcp = net.createServer((socket) => {
      this.totalConnections++;
      const conn = new Connection(this, socket);
      this.connections.add(conn);
    });
    this.tcp.on('error', (e) => this.log('E', 'NETWORK', 23024, 'Listener error', { error: e.message }));
    await new Promise((resolve, reject) => {
      this.tcp.once('error', reject);
      this.tcp.listen(this.requestedPort, this.host, () => {
        this.tcp.off('error', reject);
        resolve();
      });
    });
    this.port = this.tcp.address().port;
    this.sweeper = setInterval(() => this.sweepCursors(), 60_000);
    this.sweeper.unref();
    this.log('I', 'NETWORK', 23016, 'Waiting for connections', { port: this.port, ssl: 'off' });
  }

  /** A new data directory gets the root user (and the system collections mongod creates). */
  initialize() {
    const fresh = this.store.fresh;
    const version = this.store.ensureCollection('admin', 'system.version');
    if (!version.byId.has(valueKey('featureCompatibilityVersion')))
      this.insertRaw(version, { _id: 'featureCompatibilityVersion', version: '7.0' });
    this.store.ensureCollection('config', 'system.sessions');
    const startup = this.store.ensureCollection('local', 'startup_log');
    this.insertRaw(startup, {
      _id: `${os.hostname()}-${Date.now()}`,
      hostname: os.hostname(),
      startTime: new Date(),
      startTimeLocal: new Date().toString(),
      cmdLine: { net: { port: this.requestedPort }, storage: { dbPath: this.store.dbpath ?? '(memory)' } },
      pid: Long.fromNumber(process.pid),
      buildinfo: { version: VERSION },
    });
    if (this.rootUser && this.rootPassword) {
      const users = this.store.ensureCollection('admin', 'system.users');
      if (fresh && users.entries.length === 0) {
        this.insertRaw(users, userDocument(this.rootUser, this.rootPassword));
        this.log('I', 'ACCESS', 20320, 'Created the root user', { user: this.rootUser, db: 'admin' });
      } else if (!users.byId.has(valueKey(`admin.${this.rootUser}`))) {
        this.log('W', 'ACCESS', 20321, 'The data directory was initialised already: MONGO_INITDB_ROOT_* are ignored', {
          user: this.rootUser,
        });
      }
    }
  }

  insertRaw(coll, doc) {
    const raw = serialize(withIdFirst(doc));
    coll.add(new Entry(deserialize(raw, DESERIALIZE), raw));
  }

  findUser(name) {
    const users = this.store.collection('admin', 'system.users');
    const entry = users?.byId.get(valueKey(`admin.${name}`));
    return entry ? deserialize(entry.raw) : null;
  }

  async close() {
    clearInterval(this.sweeper);
    const closed = this.tcp ? new Promise((resolve) => this.tcp.close(() => resolve())) : Promise.resolve();
    for (const conn of [...this.connections]) conn.destroy();
    this.cursors.clear();
    await closed;
    await this.store.flush();
  }

  sweepCursors() {
    const now = Date.now();
    for (const [id, cursor] of this.cursors) if (now - cursor.lastUsed > CURSOR_TIMEOUT_MS) this.cursors.delete(id);
  }

  // ---- dispatch

  async runCommand(conn, cmd, wire) {
    const name = Object.keys(cmd)[0];
    this.opcounters.command++;
    try {
      if (name === undefined) throw fail(59, 'CommandNotFound', "no such command: ''");
      if (!Object.hasOwn(cmd, '$db')) throw fail(40571, 'Location40571', 'OP_MSG requests require a $db argument');
      const dbName = cmd.$db;
      if (typeof dbName !== 'string') throw typeMismatch(name, '$db', dbName, 'string');
      const command = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : null;
      if (!command || (command.test && !this.testCommands)) throw fail(59, 'CommandNotFound', `no such command: '${name}'`);
      if (this.authRequired && !conn.user && !UNAUTHENTICATED_COMMANDS.has(name)) {
        throw fail(13, 'Unauthorized', `Command ${name} requires authentication`);
      }
      validateDbName(dbName);
      if (cmd.txnNumber !== undefined || cmd.startTransaction !== undefined || cmd.autocommit !== undefined) {
        throw fail(20, 'IllegalOperation', 'Transaction numbers are only allowed on a replica set member or mongos');
      }
      const maxTimeMS = numberArg(name, 'maxTimeMS', cmd.maxTimeMS, { min: 0 }) ?? 0;
      const deadline = maxTimeMS > 0 ? Date.now() + maxTimeMS : Infinity;
      const ctx = {
        conn,
        cmd,
        db: dbName,
        name,
        wire,
        deadline,
        lsid: lsidKey(cmd),
        checkTime: () => {
          if (Date.now() > deadline) throw fail(50, 'MaxTimeMSExpired', 'operation exceeded time limit');
        },
      };
      return await command.run.call(this, ctx);
    } catch (e) {
      if (e instanceof CommandError) return errorReply(e);
      if (e instanceof ProtocolError) throw e;
      this.log('E', 'COMMAND', 21962, 'Command failed unexpectedly', { command: name, error: String(e?.stack ?? e) });
      return errorReply(fail(1, 'InternalError', String(e?.message ?? e)));
    }
  }

  // ---- hello and authentication

  hello(conn, cmd, name, dbName) {
    if (cmd.client !== undefined && conn.sawHello) {
      throw fail(186, 'ClientMetadataCannotBeMutated', 'The client metadata document may only be sent in the first hello');
    }
    conn.sawHello = true;
    const reply = {};
    if (name === 'hello') reply.isWritablePrimary = true;
    else reply.ismaster = true;
    if (name !== 'hello' && cmd.helloOk) reply.helloOk = true;
    reply.topologyVersion = { processId: this.processId, counter: Long.fromNumber(0) };
    reply.maxBsonObjectSize = MAX_BSON_SIZE;
    reply.maxMessageSizeBytes = MAX_MESSAGE_SIZE;
    reply.maxWriteBatchSize = MAX_WRITE_BATCH;
    reply.localTime = new Date();
    reply.logicalSessionTimeoutMinutes = 30;
    reply.connectionId = conn.id;
    reply.minWireVersion = 0;
    reply.maxWireVersion = MAX_WIRE_VERSION;
    reply.readOnly = false;
    if (typeof cmd.saslSupportedMechs === 'string') {
      const [db, ...rest] = cmd.saslSupportedMechs.split('.');
      if (db === 'admin' && this.findUser(rest.join('.'))) reply.saslSupportedMechs = ['SCRAM-SHA-1', 'SCRAM-SHA-256'];
    }
    if (isPlainDoc(cmd.speculativeAuthenticate)) {
      const spec = cmd.speculativeAuthenticate;
      try {
        if (spec.saslStart === undefined) throw authFailed();
        const started = this.saslStart(conn, spec, typeof spec.db === 'string' ? spec.db : dbName);
        reply.speculativeAuthenticate = { conversationId: started.conversationId, done: started.done, payload: started.payload };
      } catch {
        // as mongod: a failed speculative attempt is left out, and the client authenticates the long way
      }
    }
    reply.ok = OK();
    return reply;
  }

  saslStart(conn, cmd, dbName) {
    const mechanism = cmd.mechanism;
    if (!SCRAM[mechanism]) {
      throw fail(334, 'MechanismUnavailable', `Received authentication for mechanism ${String(mechanism)} which is unknown or not enabled`);
    }
    conn.sasl = null;
    const text = payloadText(cmd.payload);
    const m = /^([ny]),(a=[^,]*)?,(.*)$/s.exec(text);
    if (!m) throw fail(17, 'ProtocolError', 'Incorrect SCRAM client|server nonce or channel binding flag');
    const bare = m[3];
    const attrs = scramAttributes(bare);
    if (attrs.n === undefined || !attrs.r) throw fail(17, 'ProtocolError', 'Invalid SCRAM client-first message');
    const userName = attrs.n.replace(/=2C/g, ',').replace(/=3D/g, '=');
    const user = dbName === 'admin' ? this.findUser(userName) : null;
    const creds = user?.credentials?.[mechanism];
    if (!creds) {
      this.log('I', 'ACCESS', 20249, 'Authentication failed', { mechanism, user: userName, db: dbName, error: 'UserNotFound' });
      throw authFailed();
    }
    const nonce = `${attrs.r}${crypto.randomBytes(24).toString('base64')}`;
    const serverFirst = `r=${nonce},s=${creds.salt},i=${creds.iterationCount}`;
    const skipEmptyExchange = Boolean(cmd.options?.skipEmptyExchange);
    conn.sasl = {
      id: ++conn.saslCounter,
      mechanism,
      userName,
      dbName,
      bare,
      serverFirst,
      nonce,
      creds,
      gs2: `${m[1]},${m[2] ?? ''},`,
      step: 1,
      skipEmptyExchange,
    };
    return { conversationId: conn.sasl.id, done: false, payload: new Binary(Buffer.from(serverFirst)), ok: OK() };
  }

  saslContinue(conn, cmd) {
    const sasl = conn.sasl;
    const id = isNumeric(cmd.conversationId) ? toNumber(cmd.conversationId) : NaN;
    if (!sasl || sasl.id !== id) throw fail(17, 'ProtocolError', 'No SASL session state found');
    if (sasl.step === 2) {
      conn.sasl = null;
      conn.user = { user: sasl.userName, db: sasl.dbName };
      return { conversationId: id, done: true, payload: new Binary(Buffer.alloc(0)), ok: OK() };
    }
    const { hash } = SCRAM[sasl.mechanism];
    const text = payloadText(cmd.payload);
    const proofAt = text.lastIndexOf(',p=');
    const attrs = scramAttributes(text);
    const failNow = (why) => {
      conn.sasl = null;
      this.log('I', 'ACCESS', 20249, 'Authentication failed', {
        mechanism: sasl.mechanism,
        user: sasl.userName,
        db: sasl.dbName,
        error: why,
      });
      return authFailed();
    };
    if (proofAt < 0 || attrs.r !== sasl.nonce || attrs.c !== Buffer.from(sasl.gs2).toString('base64')) throw failNow('ProtocolError');
    const withoutProof = text.slice(0, proofAt);
    const authMessage = `${sasl.bare},${sasl.serverFirst},${withoutProof}`;
    const storedKey = Buffer.from(sasl.creds.storedKey, 'base64');
    const proof = Buffer.from(attrs.p ?? '', 'base64');
    const signature = crypto.createHmac(hash, storedKey).update(authMessage).digest();
    if (proof.length !== signature.length) throw failNow('AuthenticationFailed');
    const clientKey = Buffer.alloc(proof.length);
    for (let i = 0; i < proof.length; i++) clientKey[i] = proof[i] ^ signature[i];
    if (!crypto.timingSafeEqual(crypto.createHash(hash).update(clientKey).digest(), storedKey)) throw failNow('AuthenticationFailed');
    const serverSignature = crypto.createHmac(hash, Buffer.from(sasl.creds.serverKey, 'base64')).update(authMessage).digest('base64');
    const payload = new Binary(Buffer.from(`v=${serverSignature}`));
    if (sasl.skipEmptyExchange) {
      conn.sasl = null;
      conn.user = { user: sasl.userName, db: sasl.dbName };
      this.log('I', 'ACCESS', 5286306, 'Successfully authenticated', { mechanism: sasl.mechanism, user: sasl.userName, db: sasl.dbName });
      return { conversationId: id, done: true, payload, ok: OK() };
    }
    sasl.step = 2;
    return { conversationId: id, done: false, payload, ok: OK() };
  }

  // ---- cursors

  /** Replies `{cursor: {firstBatch, id, ns}}`; the rest of `items` (BSON bytes) waits for getMore. */
  openCursor(ctx, ns, items, firstBatchSize, singleBatch = false) {
    const cursor = { ns, items, pos: 0, lsid: ctx.lsid, user: ctx.conn.user?.user ?? null, lastUsed: Date.now() };
    const batch = this.takeBatch(cursor, firstBatchSize);
    let id = Long.fromNumber(0);
    if (!singleBatch && cursor.pos < items.length) {
      let big;
      do {
        big = crypto.randomBytes(8).readBigInt64LE() & 0x7fffffffffffffffn;
      } while (big === 0n || this.cursors.has(big.toString()));
      id = Long.fromBigInt(big);
      cursor.id = id;
      this.cursors.set(big.toString(), cursor);
    }
    return { cursor: { firstBatch: new RawArray(batch), id, ns }, ok: OK() };
  }

  takeBatch(cursor, max) {
    const out = [];
    let bytes = 0;
    while (cursor.pos < cursor.items.length && out.length < max) {
      const raw = cursor.items[cursor.pos];
      if (out.length > 0 && bytes + raw.length > MAX_BATCH_BYTES) break;
      out.push(raw);
      bytes += raw.length;
      cursor.pos++;
    }
    return out;
  }

  /** Matching entries of a collection, in natural order, checking maxTimeMS as it scans. */
  scan(ctx, coll, filter) {
    const match = compileFilter(filter ?? {});
    if (!coll) return [];
    const out = [];
    let n = 0;
    for (const entry of coll.entries) {
      if (++n % 1024 === 0) ctx.checkTime();
      if (match(entry.doc)) out.push(entry);
    }
    return out;
  }
}

function rawOf(doc, entryByDoc) {
  const entry = entryByDoc?.get(doc);
  if (entry) return entry.raw;
  const size = calculateObjectSize(doc);
  if (size > MAX_BSON_SIZE)
    throw fail(
      10334,
      'BSONObjectTooLarge',
      `BSONObj size: ${size} (0x${size.toString(16).toUpperCase()}) is invalid. Size must be between 0 and ${MAX_BSON_SIZE}(16MB)`,
    );
  return serialize(doc);
}

function collectionInfo(coll) {
  return {
    name: coll.name,
    type: 'collection',
    options: coll.options,
    info: { readOnly: false, uuid: coll.uuid },
    idIndex: { v: 2, key: { _id: 1 }, name: '_id_' },
  };
}

function duplicateKey(coll, id) {
  return fail(11000, 'DuplicateKey', `E11000 duplicate key error collection: ${coll.ns} index: _id_ dup key: { _id: ${shellRepr(id)} }`, {
    keyPattern: { _id: 1 },
    keyValue: { _id: id },
  });
}

function writeError(index, e) {
  const out = { index, code: e.code, errmsg: e.message };
  if (e.extra?.keyPattern) Object.assign(out, e.extra);
  return out;
}

function checkHint(_cmdName, hint) {
  if (hint === undefined || hint === null) return;
  if (typeof hint === 'string' && (hint === '_id_' || hint === '')) return;
  if (isPlainDoc(hint)) {
    const keys = Object.keys(hint);
    if (keys.length === 0) return;
    if (keys.length === 1 && keys[0] === '_id' && isNumeric(hint._id) && toNumber(hint._id) === 1) return;
    if (keys.length === 1 && keys[0] === '$natural') return;
  }
  throw badValue(`error processing query: planner returned error :: caused by :: hint provided does not correspond to an existing index`);
}

/** Validates a document for storage (size, `_id`, nesting), puts `_id` first and serializes it. */
function prepareDocument(doc) {
  const withId = withIdFirst(doc);
  if (Array.isArray(withId._id)) throw fail(53, 'InvalidIdField', "The '_id' value cannot be of type array");
  if (isRegexValue(withId._id)) throw fail(53, 'InvalidIdField', "can't use a regex for _id");
  if (nestingDepth(withId) > MAX_NESTING) throw fail(15, 'Overflow', `Document exceeds maximum nesting depth of ${MAX_NESTING}`);
  const raw = serialize(withId);
  return new Entry(deserialize(raw, DESERIALIZE), raw);
}

const COMMANDS = {
  hello: {
    run(ctx) {
      return helloCommand.call(this, ctx);
    },
  },
  isMaster: {
    run(ctx) {
      return helloCommand.call(this, ctx);
    },
  },
  ismaster: {
    run(ctx) {
      return helloCommand.call(this, ctx);
    },
  },

  ping: { run: () => ({ ok: OK() }) },

  buildInfo: { run: buildInfo },
  buildinfo: { run: buildInfo },

  saslStart: {
    run(ctx) {
      return this.saslStart(ctx.conn, ctx.cmd, ctx.db);
    },
  },
  saslContinue: {
    run(ctx) {
      return this.saslContinue(ctx.conn, ctx.cmd);
    },
  },

  connectionStatus: {
    run(ctx) {
      const users = ctx.conn.user ? [ctx.conn.user] : [];
      return {
        authInfo: { authenticatedUsers: users, authenticatedUserRoles: ctx.conn.user ? [{ role: 'root', db: 'admin' }] : [] },
        ok: OK(),
      };
    },
  },

  endSessions: { run: () => ({ ok: OK() }) },

  serverStatus: {
    run() {
      return {
        host: os.hostname(),
        version: VERSION,
        process: 'mongod',
        pid: Long.fromNumber(process.pid),
        uptime: new Double((Date.now() - this.startedAt) / 1000),
        uptimeMillis: Long.fromNumber(Date.now() - this.startedAt),
        localTime: new Date(),
        connections: { current: this.connections.size, available: 838860 - this.connections.size, totalCreated: this.totalConnections },
        opcounters: Object.fromEntries(Object.entries(this.opcounters).map(([k, v]) => [k, Long.fromNumber(v)])),
        metrics: {
          cursor: { open: { total: Long.fromNumber(this.cursors.size), noTimeout: Long.fromNumber(0), pinned: Long.fromNumber(0) } },
        },
        storageEngine: { name: 'standin', supportsCommittedReads: false, persistent: Boolean(this.store.dbpath) },
        ok: OK(),
      };
    },
  },

  sleep: {
    test: true,
    async run(ctx) {
      const { cmd } = ctx;
      const ms = numberArg('sleep', 'millis', cmd.millis, { min: 0 }) ?? (numberArg('sleep', 'secs', cmd.secs, { min: 0 }) ?? 100) * 1000;
      const end = Date.now() + ms;
      // Cut by maxTimeMS: the deadline is the end, whether or not the clock has passed it when the timer fires.
      const expires = ctx.deadline < end;
      const cut = await ctx.conn.wait(Math.max(0, (expires ? ctx.deadline : end) - Date.now()));
      if (cut) return { ok: new Double(0), errmsg: 'operation was interrupted', code: 11601, codeName: 'Interrupted' };
      if (expires) throw fail(50, 'MaxTimeMSExpired', 'operation exceeded time limit');
      return { ok: OK() };
    },
  },

  listDatabases: {
    run(ctx) {
      const { cmd } = ctx;
      checkFields('listDatabases', cmd, ['filter', 'nameOnly', 'authorizedDatabases']);
      if (ctx.db !== 'admin') throw fail(13, 'Unauthorized', 'listDatabases may only be run against the admin database.');
      const filter = docArg('listDatabases', 'filter', cmd.filter);
      const match = filter ? compileFilter(filter) : null;
      const databases = [];
      let totalSize = 0;
      for (const name of [...this.store.databases.keys()].sort()) {
        const db = this.store.databases.get(name);
        let size = 0;
        for (const coll of db.values()) size += coll.dataSize + 4096;
        const info = cmd.nameOnly ? { name } : { name, sizeOnDisk: Long.fromNumber(size), empty: false };
        if (match && !match({ name, sizeOnDisk: Long.fromNumber(size), empty: false })) continue;
        databases.push(info);
        totalSize += size;
      }
      if (cmd.nameOnly) return { databases, ok: OK() };
      return { databases, totalSize: Long.fromNumber(totalSize), totalSizeMb: Long.fromNumber(Math.floor(totalSize / 1048576)), ok: OK() };
    },
  },

  listCollections: {
    run(ctx) {
      const { cmd } = ctx;
      checkFields('listCollections', cmd, ['filter', 'nameOnly', 'authorizedCollections', 'cursor', 'includePendingDrops']);
      const filter = docArg('listCollections', 'filter', cmd.filter);
      const cursorOpts = docArg('listCollections', 'cursor', cmd.cursor) ?? {};
      const batchSize = numberArg('listCollections', 'cursor.batchSize', cursorOpts.batchSize, { min: 0 }) ?? Infinity;
      const match = filter ? compileFilter(filter) : null;
      const db = this.store.databases.get(ctx.db);
      const items = [];
      for (const name of db ? [...db.keys()].sort() : []) {
        const info = collectionInfo(db.get(name));
        if (match && !match(info)) continue;
        items.push(serialize(cmd.nameOnly ? { name: info.name, type: info.type } : info));
      }
      return this.openCursor(ctx, `${ctx.db}.$cmd.listCollections`, items, batchSize);
    },
  },

  listIndexes: {
    run(ctx) {
      const { cmd } = ctx;
      checkFields('listIndexes', cmd, ['cursor', 'includeBuildUUIDs', 'includeIndexBuildInfo']);
      validateCollectionName(ctx.db, cmd.listIndexes);
      if (!this.store.collection(ctx.db, cmd.listIndexes))
        throw fail(26, 'NamespaceNotFound', `ns does not exist: ${ctx.db}.${cmd.listIndexes}`);
      return this.openCursor(ctx, `${ctx.db}.${cmd.listIndexes}`, [serialize({ v: 2, key: { _id: 1 }, name: '_id_' })], Infinity);
    },
  },

  create: {
    async run(ctx) {
      const { cmd } = ctx;
      checkFields('create', cmd, [
        'capped',
        'size',
        'max',
        'autoIndexId',
        'validator',
        'validationLevel',
        'validationAction',
        'viewOn',
        'pipeline',
        'collation',
        'timeseries',
        'expireAfterSeconds',
        'clusteredIndex',
        'changeStreamPreAndPostImages',
        'storageEngine',
        'indexOptionDefaults',
        'encryptedFields',
        'idIndex',
        'flags',
      ]);
      refuseUnsupported('create', cmd, [
        'capped',
        'validator',
        'viewOn',
        'pipeline',
        'collation',
        'timeseries',
        'expireAfterSeconds',
        'clusteredIndex',
        'encryptedFields',
        'changeStreamPreAndPostImages',
      ]);
      const name = cmd.create;
      validateCollectionName(ctx.db, name);
      if (name.startsWith('system.')) throw fail(73, 'InvalidNamespace', `Invalid system namespace: ${ctx.db}.${name}`);
      if (this.store.collection(ctx.db, name)) throw fail(48, 'NamespaceExists', `Collection ${ctx.db}.${name} already exists.`);
      this.store.ensureCollection(ctx.db, name);
      await this.store.persist(ctx.db);
      return { ok: OK() };
    },
  },

  drop: {
    async run(ctx) {
      const { cmd } = ctx;
      checkFields('drop', cmd, []);
      validateCollectionName(ctx.db, cmd.drop);
      const ns = `${ctx.db}.${cmd.drop}`;
      if (!this.store.dropCollection(ctx.db, cmd.drop)) return { ok: OK() };
      for (const [id, c] of this.cursors) if (c.ns === ns) this.cursors.delete(id);
      await this.store.persist(ctx.db);
      return { nIndexesWas: 1, ns, ok: OK() };
    },
  },

  dropDatabase: {
    async run(ctx) {
      checkFields('dropDatabase', ctx.cmd, []);
      if (this.store.dropDatabase(ctx.db)) {
        for (const [id, c] of this.cursors) if (c.ns.startsWith(`${ctx.db}.`)) this.cursors.delete(id);
        await this.store.persist(ctx.db);
      }
      return { ok: OK() };
    },
  },

  insert: {
    async run(ctx) {
      const { cmd } = ctx;
      checkFields('insert', cmd, ['documents', 'ordered', 'bypassDocumentValidation']);
      const documents = arrayArg('insert', 'documents', cmd.documents);
      if (documents.length > MAX_WRITE_BATCH)
        throw fail(16, 'InvalidLength', `Write batch sizes must be between 1 and ${MAX_WRITE_BATCH}. Got ${documents.length} operations.`);
      const ordered = cmd.ordered !== false;
      const coll = this.store.ensureCollection(ctx.db, cmd.insert);
      const writeErrors = [];
      let n = 0;
      for (let i = 0; i < documents.length; i++) {
        this.opcounters.insert++;
        try {
          const doc = documents[i];
          if (!isPlainDoc(doc)) throw typeMismatch('insert', 'documents', doc, 'object');
          const size = calculateObjectSize(doc);
          if (size > MAX_BSON_SIZE) throw badValue(`object to insert too large. size in bytes: ${size}, max size: ${MAX_BSON_SIZE}`);
          const entry = prepareDocument(doc);
          if (coll.byId.has(entry.key)) throw duplicateKey(coll, entry.doc._id);
          coll.add(entry);
          n++;
        } catch (e) {
          if (!(e instanceof CommandError)) throw e;
          writeErrors.push(writeError(i, e));
          if (ordered) break;
        }
      }
      await this.store.persist(ctx.db);
      return writeErrors.length ? { n, writeErrors, ok: OK() } : { n, ok: OK() };
    },
  },

  find: {
    run(ctx) {
      const { cmd } = ctx;
      checkFields('find', cmd, [
        'filter',
        'sort',
        'projection',
        'hint',
        'skip',
        'limit',
        'batchSize',
        'singleBatch',
        'max',
        'min',
        'returnKey',
        'showRecordId',
        'tailable',
        'oplogReplay',
        'noCursorTimeout',
        'awaitData',
        'allowPartialResults',
        'collation',
        'allowDiskUse',
        'let',
        'readOnce',
        'term',
        'ntoreturn',
      ]);
      refuseUnsupported('find', cmd, ['max', 'min', 'returnKey', 'showRecordId', 'tailable', 'awaitData', 'collation', 'let']);
      validateCollectionName(ctx.db, cmd.find);
      this.opcounters.query++;
      const filter = docArg('find', 'filter', cmd.filter) ?? {};
      const sort = docArg('find', 'sort', cmd.sort);
      const projection = compileProjection(docArg('find', 'projection', cmd.projection));
      checkHint('find', cmd.hint);
      const skip = numberArg('find', 'skip', cmd.skip, { min: 0 }) ?? 0;
      const limit = numberArg('find', 'limit', cmd.limit, { min: 0 }) ?? 0;
      const batchSize = numberArg('find', 'batchSize', cmd.batchSize, { min: 0 }) ?? DEFAULT_FIRST_BATCH;
      const compare = sort ? compileSort(sort) : null;
      let entries = this.scan(ctx, this.store.collection(ctx.db, cmd.find), filter);
      if (compare) entries = [...entries].sort((a, b) => compare(a.doc, b.doc));
      entries = entries.slice(skip, limit > 0 ? skip + limit : undefined);
      const items = entries.map((e) => (projection ? rawOf(projection(e.doc)) : e.raw));
      const first = limit > 0 ? Math.min(batchSize, limit) : batchSize;
      return this.openCursor(ctx, `${ctx.db}.${cmd.find}`, items, first, Boolean(cmd.singleBatch));
    },
  },

  getMore: {
    run(ctx) {
      const { cmd } = ctx;
      checkFields('getMore', cmd, ['collection', 'batchSize', 'term', 'lastKnownCommittedOpTime', 'includeQueryStatsMetrics']);
      if (bsonTypeOf(cmd.getMore) !== 'Long') throw typeMismatch('getMore', 'getMore', cmd.getMore, 'long');
      if (typeof cmd.collection !== 'string') throw typeMismatch('getMore', 'collection', cmd.collection, 'string');
      if (cmd.maxTimeMS !== undefined) throw badValue('cannot set maxTimeMS on getMore command for a non-awaitData cursor');
      this.opcounters.getmore++;
      const key = BigInt(cmd.getMore.toString()).toString();
      const cursor = this.cursors.get(key);
      if (!cursor) throw fail(43, 'CursorNotFound', `cursor id ${key} not found`);
      const ns = `${ctx.db}.${cmd.collection}`;
      if (cursor.ns !== ns)
        throw fail(13, 'Unauthorized', `Requested getMore on namespace '${ns}', but cursor belongs to a different namespace ${cursor.ns}`);
      if (cursor.lsid && !ctx.lsid)
        throw fail(
          50737,
          'Location50737',
          `Cannot run getMore on cursor ${key}, which was created in session ${uuidText(cursor.lsid)}, without an lsid`,
        );
      if (cursor.lsid && ctx.lsid !== cursor.lsid)
        throw fail(
          50738,
          'Location50738',
          `Cannot run getMore on cursor ${key}, which was created in session ${uuidText(cursor.lsid)}, in session ${uuidText(ctx.lsid)}`,
        );
      const batchSize = numberArg('getMore', 'batchSize', cmd.batchSize, { min: 0 }) || Infinity;
      cursor.lastUsed = Date.now();
      const batch = this.takeBatch(cursor, batchSize);
      let id = cursor.id;
      if (cursor.pos >= cursor.items.length) {
        this.cursors.delete(key);
        id = Long.fromNumber(0);
      }
      return { cursor: { nextBatch: new RawArray(batch), id, ns: cursor.ns }, ok: OK() };
    },
  },

  killCursors: {
    run(ctx) {
      const { cmd } = ctx;
      checkFields('killCursors', cmd, ['cursors']);
      const ids = arrayArg('killCursors', 'cursors', cmd.cursors);
      const ns = `${ctx.db}.${cmd.killCursors}`;
      const cursorsKilled = [];
      const cursorsNotFound = [];
      for (const id of ids) {
        if (bsonTypeOf(id) !== 'Long') throw typeMismatch('killCursors', 'cursors', id, 'long');
        const key = BigInt(id.toString()).toString();
        const cursor = this.cursors.get(key);
        if (cursor && cursor.ns === ns) {
          this.cursors.delete(key);
          cursorsKilled.push(id);
        } else cursorsNotFound.push(id);
      }
      return { cursorsKilled, cursorsNotFound, cursorsAlive: [], cursorsUnknown: [], ok: OK() };
    },
  },

  count: {
    run(ctx) {
      const { cmd } = ctx;
      checkFields('count', cmd, ['query', 'limit', 'skip', 'hint', 'collation', 'fields', 'let']);
      refuseUnsupported('count', cmd, ['collation', 'let']);
      validateCollectionName(ctx.db, cmd.count);
      checkHint('count', cmd.hint);
      const query = docArg('count', 'query', cmd.query) ?? {};
      const skip = numberArg('count', 'skip', cmd.skip, { min: 0 }) ?? 0;
      const limit = Math.abs(numberArg('count', 'limit', cmd.limit) ?? 0);
      const coll = this.store.collection(ctx.db, cmd.count);
      let n = Object.keys(query).length === 0 ? (coll?.entries.length ?? 0) : this.scan(ctx, coll, query).length;
      n = Math.max(0, n - skip);
      if (limit > 0) n = Math.min(n, limit);
      return { n, ok: OK() };
    },
  },

  aggregate: {
    run(ctx) {
      const { cmd } = ctx;
      checkFields('aggregate', cmd, [
        'pipeline',
        'cursor',
        'explain',
        'allowDiskUse',
        'bypassDocumentValidation',
        'hint',
        'collation',
        'let',
        'fromMongos',
        'needsMerge',
        'exchange',
        'isMapReduceCommand',
        'collectionUUID',
      ]);
      refuseUnsupported('aggregate', cmd, ['explain', 'collation', 'let', 'exchange']);
      const pipeline = compilePipeline(cmd.pipeline);
      const cursorOpts = docArg('aggregate', 'cursor', cmd.cursor);
      if (!cursorOpts) throw fail(9, 'FailedToParse', "The 'cursor' option is required, except for aggregate with the explain argument");
      const batchSize = numberArg('aggregate', 'cursor.batchSize', cursorOpts.batchSize, { min: 0 }) ?? DEFAULT_FIRST_BATCH;
      checkHint('aggregate', cmd.hint);
      let ns;
      let input;
      const entryByDoc = new Map();
      if (isNumeric(cmd.aggregate) && toNumber(cmd.aggregate) === 1) {
        if (pipeline.length > 0) throw notImplemented('a collectionless aggregate ({aggregate: 1})');
        ns = `${ctx.db}.$cmd.aggregate`;
        input = [];
      } else {
        validateCollectionName(ctx.db, cmd.aggregate);
        ns = `${ctx.db}.${cmd.aggregate}`;
        const coll = this.store.collection(ctx.db, cmd.aggregate);
        input = [];
        for (const e of coll?.entries ?? []) {
          input.push(e.doc);
          entryByDoc.set(e.doc, e);
        }
      }
      let docs = input;
      for (const stage of pipeline) {
        ctx.checkTime();
        docs = stage(docs, ctx);
      }
      const items = docs.map((d) => rawOf(d, entryByDoc));
      return this.openCursor(ctx, ns, items, batchSize);
    },
  },

  update: {
    async run(ctx) {
      const { cmd } = ctx;
      checkFields('update', cmd, ['updates', 'ordered', 'bypassDocumentValidation', 'let']);
      refuseUnsupported('update', cmd, ['let']);
      const updates = arrayArg('update', 'updates', cmd.updates);
      const ordered = cmd.ordered !== false;
      validateCollectionName(ctx.db, cmd.update);
      let coll = this.store.collection(ctx.db, cmd.update);
      const writeErrors = [];
      const upserted = [];
      let n = 0;
      let nModified = 0;
      let touched = false;
      for (let i = 0; i < updates.length; i++) {
        this.opcounters.update++;
        try {
          const stmt = updates[i];
          if (!isPlainDoc(stmt)) throw typeMismatch('update', 'updates', stmt, 'object');
          checkFields('update.updates', stmt, [
            'q',
            'u',
            'upsert',
            'multi',
            'arrayFilters',
            'collation',
            'hint',
            'c',
            'upsertSupplied',
            'sort',
          ]);
          refuseUnsupported('update', stmt, ['arrayFilters', 'collation', 'c', 'sort']);
          checkHint('update', stmt.hint);
          const q = docArg('update.updates', 'q', stmt.q);
          if (!q) throw fail(40414, 'Location40414', "BSON field 'update.updates.q' is missing but a required field");
          if (stmt.u === undefined) throw fail(40414, 'Location40414', "BSON field 'update.updates.u' is missing but a required field");
          const spec = compileUpdate(stmt.u);
          const multi = Boolean(stmt.multi);
          if (multi && spec.replacement) throw fail(9, 'FailedToParse', 'multi update is not supported for replacement-style update');
          const matched = this.scan(ctx, coll, q);
          const targets = multi ? matched : matched.slice(0, 1);
          if (targets.length === 0 && stmt.upsert) {
            coll = coll ?? this.store.ensureCollection(ctx.db, cmd.update);
            let doc;
            if (spec.replacement) {
              const seed = upsertSeed(q);
              doc = { ...cloneValue(spec.replacement) };
              if (!Object.hasOwn(doc, '_id') && Object.hasOwn(seed, '_id')) doc._id = seed._id;
            } else {
              doc = upsertSeed(q);
              applyOperators(doc, spec.ops, true);
            }
            const entry = prepareDocument(doc);
            if (entry.raw.length > MAX_BSON_SIZE)
              throw fail(17419, 'Location17419', `Resulting document after update is larger than ${MAX_BSON_SIZE}`);
            if (coll.byId.has(entry.key)) throw duplicateKey(coll, entry.doc._id);
            coll.add(entry);
            touched = true;
            upserted.push({ index: i, _id: entry.doc._id });
            n++;
            continue;
          }
          for (const target of targets) {
            const doc = deserialize(target.raw, DESERIALIZE);
            let next;
            if (spec.replacement) {
              const replacement = cloneValue(spec.replacement);
              if (Object.hasOwn(replacement, '_id') && compareValues(replacement._id, doc._id) !== 0) {
                throw fail(
                  66,
                  'ImmutableField',
                  `After applying the update, the (immutable) field '_id' was found to have been altered to _id: ${shellRepr(replacement._id)}`,
                );
              }
              delete replacement._id;
              next = { _id: doc._id, ...replacement };
            } else {
              applyOperators(doc, spec.ops, false);
              if (
                !Object.hasOwn(doc, '_id') ||
                compareValues(doc._id, target.doc._id) !== 0 ||
                typeName(doc._id) !== typeName(target.doc._id)
              ) {
                throw fail(66, 'ImmutableField', "Performing an update on the path '_id' would modify the immutable field '_id'");
              }
              next = doc;
            }
            if (nestingDepth(next) > MAX_NESTING) throw fail(15, 'Overflow', `Document exceeds maximum nesting depth of ${MAX_NESTING}`);
            const size = calculateObjectSize(next);
            if (size > MAX_BSON_SIZE) throw fail(17419, 'Location17419', `Resulting document after update is larger than ${MAX_BSON_SIZE}`);
            const raw = serialize(next);
            n++;
            if (Buffer.compare(raw, target.raw) !== 0) {
              coll.replace(target, new Entry(deserialize(raw, DESERIALIZE), raw));
              nModified++;
              touched = true;
            }
          }
        } catch (e) {
          if (!(e instanceof CommandError)) throw e;
          writeErrors.push(writeError(i, e));
          if (ordered) break;
        }
      }
      if (touched) await this.store.persist(ctx.db);
      const reply = { n, nModified };
      if (upserted.length) reply.upserted = upserted;
      if (writeErrors.length) reply.writeErrors = writeErrors;
      reply.ok = OK();
      return reply;
    },
  },

  delete: {
    async run(ctx) {
      const { cmd } = ctx;
      checkFields('delete', cmd, ['deletes', 'ordered', 'let']);
      refuseUnsupported('delete', cmd, ['let']);
      const deletes = arrayArg('delete', 'deletes', cmd.deletes);
      const ordered = cmd.ordered !== false;
      validateCollectionName(ctx.db, cmd.delete);
      const coll = this.store.collection(ctx.db, cmd.delete);
      const writeErrors = [];
      let n = 0;
      for (let i = 0; i < deletes.length; i++) {
        this.opcounters.delete++;
        try {
          const stmt = deletes[i];
          if (!isPlainDoc(stmt)) throw typeMismatch('delete', 'deletes', stmt, 'object');
          checkFields('delete.deletes', stmt, ['q', 'limit', 'collation', 'hint']);
          refuseUnsupported('delete', stmt, ['collation']);
          checkHint('delete', stmt.hint);
          const q = docArg('delete.deletes', 'q', stmt.q);
          if (!q) throw fail(40414, 'Location40414', "BSON field 'delete.deletes.q' is missing but a required field");
          const limit = numberArg('delete.deletes', 'limit', stmt.limit);
          if (limit === undefined) throw fail(40414, 'Location40414', "BSON field 'delete.deletes.limit' is missing but a required field");
          if (limit !== 0 && limit !== 1) throw fail(9, 'FailedToParse', `The limit field in delete objects must be 0 or 1. Got ${limit}`);
          const matched = this.scan(ctx, coll, q);
          const gone = new Set(limit === 1 ? matched.slice(0, 1) : matched);
          coll?.removeAll(gone);
          n += gone.size;
        } catch (e) {
          if (!(e instanceof CommandError)) throw e;
          writeErrors.push(writeError(i, e));
          if (ordered) break;
        }
      }
      if (n > 0) await this.store.persist(ctx.db);
      return writeErrors.length ? { n, writeErrors, ok: OK() } : { n, ok: OK() };
    },
  },
};

async function helloCommand(ctx) {
  const { conn, cmd, name, wire } = ctx;
  const reply = this.hello(conn, cmd, name, ctx.db);
  const tv = cmd.topologyVersion;
  const maxAwait = cmd.maxAwaitTimeMS;
  if (!isPlainDoc(tv) || maxAwait === undefined) return reply;
  // An awaitable hello (the driver's streaming monitor): nothing ever changes here, so it answers after
  // maxAwaitTimeMS; with exhaustAllowed it keeps answering (moreToCome) until the connection closes.
  const wait = numberArg(name, 'maxAwaitTimeMS', maxAwait, { min: 0 });
  const sameProcess = bsonTypeOf(tv.processId) === 'ObjectId' && tv.processId.equals(this.processId);
  if (!sameProcess) return reply;
  if (await conn.wait(wait)) return null;
  if (!wire?.exhaust) return this.hello(conn, { ...cmd, client: undefined }, name, ctx.db);
  for (;;) {
    conn.send(opMsgReply(wire.requestId, this.hello(conn, { ...cmd, client: undefined }, name, ctx.db), MSG_MORE_TO_COME));
    if (await conn.wait(wait)) return null;
  }
}

function buildInfo() {
  return {
    version: VERSION,
    gitVersion: 'standin',
    modules: [],
    allocator: 'system',
    javascriptEngine: 'none',
    sysInfo: 'deprecated',
    versionArray: [new Int32(7), new Int32(0), new Int32(0), new Int32(0)],
    openssl: { running: 'disabled', compiled: 'disabled' },
    buildEnvironment: { target_os: process.platform, target_arch: process.arch },
    bits: 64,
    debug: false,
    maxBsonObjectSize: MAX_BSON_SIZE,
    storageEngines: ['standin'],
    ok: OK(),
  };
}

// ---------------------------------------------------------------------------------------------------
// Entry points

/**
 * Starts a stand-in server. `port: 0` picks a free port; `dbpath` omitted keeps data in memory only.
 * With `rootUser` and `rootPassword`, authentication is required and the user is created when the
 * data directory is new (later starts keep the stored user, as the official image does).
 */
export async function startServer(options = {}) {
  const server = new StandinServer(options);
  await server.start();
  return {
    port: server.port,
    host: server.host,
    close: () => server.close(),
  };
}

function parseArgs(argv) {
  const opts = { port: 27017, host: '127.0.0.1', dbpath: '/data/db', auth: false, testCommands: false, quiet: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const [flag, inline] =
      arg.includes('=') && arg.startsWith('--') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    const value = () => (inline !== undefined ? inline : argv[++i]);
    switch (flag) {
      case '--port':
        opts.port = Number(value());
        break;
      case '--dbpath':
        opts.dbpath = value();
        break;
      case '--bind_ip_all':
        opts.host = '0.0.0.0';
        break;
      case '--bind_ip':
        opts.host = String(value()).split(',')[0].trim() || '127.0.0.1';
        break;
      case '--auth':
        opts.auth = true;
        break;
      case '--quiet':
        opts.quiet = true;
        break;
      case '--setParameter': {
        const setting = String(value());
        if (/^enableTestCommands=(1|true)$/.test(setting)) opts.testCommands = true;
        break;
      }
      case 'mongod':
        break;
      default:
        process.stderr.write(`mongo-wire stand-in: ignoring unsupported option ${arg}\n`);
        if (!arg.startsWith('--')) break;
        if (inline === undefined && argv[i + 1] !== undefined && !argv[i + 1].startsWith('--')) i++;
    }
  }
  if (!Number.isInteger(opts.port) || opts.port < 0 || opts.port > 65535) throw new Error('--port must be a port number');
  return opts;
}

function envSecret(name) {
  if (process.env[`${name}_FILE`]) return fs.readFileSync(process.env[`${name}_FILE`], 'utf8').trim();
  return process.env[name] || '';
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const rootUser = envSecret('MONGO_INITDB_ROOT_USERNAME');
  const rootPassword = envSecret('MONGO_INITDB_ROOT_PASSWORD');
  if (Boolean(rootUser) !== Boolean(rootPassword)) {
    process.stderr.write('error: both MONGO_INITDB_ROOT_USERNAME and MONGO_INITDB_ROOT_PASSWORD must be set\n');
    process.exit(1);
  }
  const server = new StandinServer({ ...opts, rootUser, rootPassword, log: !opts.quiet });
  // A stand-in bug must cost one request, not the server: logged, and the server keeps serving.
  process.on('uncaughtException', (e) => server.log('E', 'CONTROL', 4757800, 'Unexpected error', { error: String(e?.stack ?? e) }));
  process.on('unhandledRejection', (e) => server.log('E', 'CONTROL', 4757800, 'Unexpected error', { error: String(e?.stack ?? e) }));
  try {
    await server.start();
  } catch (e) {
    process.stderr.write(`mongo-wire stand-in: cannot start: ${e.message}\n`);
    process.exit(100);
  }
  let stopping = false;
  const stop = (signal) => {
    if (stopping) return;
    stopping = true;
    server.log('I', 'CONTROL', 23377, 'Received signal', { signal });
    server.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

const invokedDirectly = (() => {
  try {
    return process.argv[1] && fs.realpathSync(process.argv[1]) === fs.realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
})();
if (invokedDirectly) void main();
