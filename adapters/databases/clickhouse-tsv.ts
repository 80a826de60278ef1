import { isUtf8 } from 'node:buffer';
import type { Readable } from 'node:stream';
import type { CellValue } from '../../src/databases/database-admin.port.js';
import { binaryCell } from './cell-values.js';
import { EXCEPTION_LINE, chError } from './clickhouse-errors.js';
import { converter, isByteString, isComposite } from './clickhouse-values.js';
import { type RowCap, rowOf, uniqueNames } from './sql-admin-support.js';

/**
 * ClickHouse answers in TabSeparatedWithNamesAndTypes: a line of names, a line of types, then one
 * line per row, fields escaped with backslashes. Read here as a stream, row by row, into a RowCap.
 */

export const TSV_WITH_HEADER = 'TabSeparatedWithNamesAndTypes';

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

/**
 * Reads a TabSeparatedWithNamesAndTypes body into at most `cap` rows (`cap + 1` noticed, then the
 * response is dropped by `stop`). A body in another format (a FORMAT clause of the user's) is shown
 * as its lines, one `result` column. An exception ClickHouse writes after rows had started is thrown.
 */
export async function readTsv(
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
