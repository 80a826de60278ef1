import { ClickHouseError } from '@clickhouse/client';
import type { DatabaseEndpoint } from '../../src/databases/database-admin.port.js';
import { DomainError, QueryError } from '../../src/domain/errors.js';
import { connectionFailureCode, notRunning, redact } from './sql-admin-support.js';

/** What ClickHouse answers when it refuses a statement, in both its dialects (18.16 and current), as the port's errors. */

/** `Code: 159, e.displayText() = DB::Exception: ...` (18.16) or `Code: 159. DB::Exception: ...` (current), at the start of a line. */
export const EXCEPTION_LINE = /^Code: \d+(?:, e\.displayText\(\) = |\. )DB::Exception/;

/** 18.16: `Code: 62, e.displayText() = DB::Exception: <message>, e.what() = DB::Exception`; current: `Code: 62. DB::Exception: <message>. (SYNTAX_ERROR) (version ...)`. */
export function chError(text: string): QueryError {
  const old = /Code: (\d+), e\.displayText\(\) = (?:DB::Exception: )?([\s\S]*?)(?:, e\.what\(\) = [\s\S]*)?$/.exec(text.trim());
  if (old) return new QueryError(old[2]!.trim(), { code: Number(old[1]) });
  const current = /Code: (\d+)\. (?:DB::Exception: )?([\s\S]*?)(?: \(([A-Z0-9_]{3,})\))?(?: \(version [^)]*\))?\.?$/.exec(text.trim());
  if (current) return new QueryError(current[2]!.trim(), { code: Number(current[1]), ...(current[3] ? { type: current[3] } : {}) });
  return new QueryError(text.trim());
}

/** The server refused the statement (as opposed to a connection that failed): the caller may go on. */
export function isRefusal(error: unknown): boolean {
  return error instanceof ClickHouseError || /Code: \d+/.test(String((error as Error)?.message));
}

export function mapError(error: unknown, db: DatabaseEndpoint, secrets: string[]): Error {
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
