import { Repository } from '../persistence/repository.js';
import type { LeaseStore } from './leader-lease.js';

/**
 * Leases in the database (table `leases`): each change is one statement the database applies
 * atomically, so two processes asking at once never both hold one. These writes do not change the
 * store's version (no cached read depends on them).
 */
export class LeaseRepository extends Repository implements LeaseStore {
  async acquire(name: string, holder: string, nowMs: number, ttlMs: number): Promise<boolean> {
    const rows = await this.sql<{ holder: string }>(
      'insert into leases (name, holder, expires_ms) values (?, ?, ?) on conflict (name) do update set holder = excluded.holder, expires_ms = excluded.expires_ms where leases.holder = excluded.holder or leases.expires_ms < ? returning holder',
      [name, holder, nowMs + ttlMs, nowMs],
    );
    return rows[0]?.holder === holder;
  }

  async release(name: string, holder: string): Promise<void> {
    await this.sql('delete from leases where name = ? and holder = ?', [name, holder]);
  }

  /** One statement, the same text for SQLite and PostgreSQL; strings are bound (see bound-drivers.ts), numbers are ours. */
  private async sql<T>(query: string, params: Array<string | number>): Promise<T[]> {
    for (const param of params) if (typeof param === 'number' && !Number.isSafeInteger(param)) throw new Error(`not an integer: ${param}`);
    return (await this.fork().getConnection().execute(query, params, 'all')) as T[];
  }
}
