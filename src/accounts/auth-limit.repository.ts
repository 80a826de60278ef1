import { Repository } from '../persistence/repository.js';
import type { AuthLimitStore } from './auth-limits.port.js';

/**
 * The authentication counters and the sign-in backoff in the database (tables auth_rate_hits and
 * signin_backoffs), so every platform process sees the same ones. Each change is one statement that
 * the database applies atomically (an upsert that adds one, or a conditional update), so processes
 * side by side never lose each other's counts. These writes do not change the store's version.
 */
export class AuthLimitRepository extends Repository implements AuthLimitStore {
  async addHit(key: string, windowStart: number): Promise<number> {
    const rows = await this.sql<{ hits: number | string }>(
      'insert into auth_rate_hits (counter_key, window_start, hits) values (?, ?, 1) on conflict (counter_key, window_start) do update set hits = auth_rate_hits.hits + 1 returning hits',
      [key, windowStart],
    );
    return Number(rows[0]?.hits ?? 0);
  }

  async removeHit(key: string, windowStart: number): Promise<void> {
    await this.sql('update auth_rate_hits set hits = hits - 1 where counter_key = ? and window_start = ? and hits > 0', [key, windowStart]);
  }

  async hitsSince(key: string, fromWindow: number): Promise<{ total: number; oldest: number | null }> {
    const rows = await this.sql<{ total: number | string | null; oldest: number | string | null }>(
      'select sum(hits) as total, min(window_start) as oldest from auth_rate_hits where counter_key = ? and window_start >= ? and hits > 0',
      [key, fromWindow],
    );
    const row = rows[0];
    return { total: Number(row?.total ?? 0), oldest: row?.oldest == null ? null : Number(row.oldest) };
  }

  async pruneHits(before: number): Promise<void> {
    await this.sql('delete from auth_rate_hits where window_start < ?', [before]);
  }

  async backoffOf(key: string): Promise<{ failures: number; untilMs: number } | null> {
    const rows = await this.sql<{ failures: number | string; until_ms: number | string }>(
      'select failures, until_ms from signin_backoffs where account_key = ?',
      [key],
    );
    const row = rows[0];
    return row ? { failures: Number(row.failures), untilMs: Number(row.until_ms) } : null;
  }

  async addFailure(key: string, nowMs: number): Promise<number> {
    const rows = await this.sql<{ failures: number | string }>(
      'insert into signin_backoffs (account_key, failures, until_ms, last_failure_ms) values (?, 1, 0, ?) on conflict (account_key) do update set failures = signin_backoffs.failures + 1, last_failure_ms = excluded.last_failure_ms returning failures',
      [key, nowMs],
    );
    return Number(rows[0]?.failures ?? 0);
  }

  async raiseBackoff(key: string, untilMs: number): Promise<void> {
    await this.sql('update signin_backoffs set until_ms = ? where account_key = ? and until_ms < ?', [untilMs, key, untilMs]);
  }

  async clearBackoff(key: string): Promise<void> {
    await this.sql('delete from signin_backoffs where account_key = ?', [key]);
  }

  async pruneBackoffs(lastFailureBefore: number): Promise<void> {
    await this.sql('delete from signin_backoffs where last_failure_ms < ?', [lastFailureBefore]);
  }

  /** One statement, the same text for SQLite and PostgreSQL; strings are bound (see bound-drivers.ts), numbers are ours. */
  private async sql<T>(query: string, params: Array<string | number>): Promise<T[]> {
    for (const param of params) if (typeof param === 'number' && !Number.isSafeInteger(param)) throw new Error(`not an integer: ${param}`);
    return (await this.fork().getConnection().execute(query, params, 'all')) as T[];
  }
}
