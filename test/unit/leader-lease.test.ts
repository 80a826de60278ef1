import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/persistence/database.js';
import { LeaderLease, type LeaseStore } from '../../src/platform/leader-lease.js';
import { createScratchDatabase } from '../helpers/postgres.js';

/*
 * The leader lease: the leases table's compare-and-set on SQLite and PostgreSQL (many asking at
 * once, one holder), and LeaderLease over it with a clock the test moves: one leader of two, the
 * other taking over once the leader's lease lapsed, and the old leader stepping down.
 */
const T0 = Date.parse('2026-11-28T12:00:00Z');

describe('the leases table', () => {
  const databases: Database[] = [];
  const scratches: Array<{ drop(): Promise<void> }> = [];
  afterAll(async () => {
    for (const database of databases) await database.close();
    for (const scratch of scratches) await scratch.drop();
  });

  for (const dialect of ['SQLite', 'PostgreSQL'] as const) {
    it(`${dialect}: one holder of many asking at once; renewed by it, taken over once it lapsed, released`, async () => {
      let database: Database;
      if (dialect === 'SQLite') database = await openDatabase({ dataDir: ':memory:' });
      else {
        const scratch = await createScratchDatabase();
        scratches.push(scratch);
        database = await openDatabase({ databaseUrl: scratch.url, dataDir: ':memory:' });
      }
      databases.push(database);
      const leases = database.store.leases;
      const version = database.store.version;
      const won = await Promise.all(Array.from({ length: 10 }, (_, i) => leases.acquire('events', `p${i}`, T0, 1_000)));
      expect(won.filter(Boolean)).toHaveLength(1);
      const holder = `p${won.indexOf(true)}`;
      const other = holder === 'p0' ? 'p1' : 'p0';
      expect(await leases.acquire('events', holder, T0 + 500, 1_000)).toBe(true);
      // Renewed until T0 + 1500: not another's at T0 + 1400, its at T0 + 1501.
      expect(await leases.acquire('events', other, T0 + 1_400, 1_000)).toBe(false);
      expect(await leases.acquire('events', other, T0 + 1_501, 1_000)).toBe(true);
      expect(await leases.acquire('events', holder, T0 + 1_600, 1_000)).toBe(false);
      // Only the holder releases it; then anyone takes it at once.
      await leases.release('events', holder);
      expect(await leases.acquire('events', holder, T0 + 1_700, 1_000)).toBe(false);
      await leases.release('events', other);
      expect(await leases.acquire('events', holder, T0 + 1_700, 1_000)).toBe(true);
      // Another lease's name is its own.
      expect(await leases.acquire('other', other, T0 + 1_700, 1_000)).toBe(true);
      // No cached read depends on them: the store's version does not move.
      expect(database.store.version).toBe(version);
    });
  }
});

/** A lease table in memory, with the same compare-and-set, that can be made to fail. */
class MemoryLeases implements LeaseStore {
  readonly rows = new Map<string, { holder: string; expiresMs: number }>();
  down = false;
  async acquire(name: string, holder: string, nowMs: number, ttlMs: number): Promise<boolean> {
    if (this.down) throw new Error('the database does not answer');
    const row = this.rows.get(name);
    if (row && row.holder !== holder && row.expiresMs >= nowMs) return false;
    this.rows.set(name, { holder, expiresMs: nowMs + ttlMs });
    return true;
  }
  async release(name: string, holder: string): Promise<void> {
    if (this.rows.get(name)?.holder === holder) this.rows.delete(name);
  }
}

describe('LeaderLease', () => {
  it('two processes: one leads; the other takes over when the leader stops or its lease lapses; a leader that cannot renew steps down', async () => {
    let now = T0;
    const clock = { now: () => new Date(now) };
    const leases = new MemoryLeases();
    const led: string[] = [];
    const role = (name: string) => ({
      lead: () => void led.push(`${name} leads`),
      follow: async () => void led.push(`${name} follows`),
    });
    // A long interval: the test runs each pass by hand through the private timer's wake.
    const a = new LeaderLease(() => leases, clock, 'events', 'a', 3_000_000, role('a'));
    const b = new LeaderLease(() => leases, clock, 'events', 'b', 3_000_000, role('b'));
    const pass = (lease: LeaderLease) => (lease as unknown as { pass(): Promise<void> }).pass().catch(() => {});
    await pass(a);
    await pass(b);
    expect([a.isLeader, b.isLeader]).toEqual([true, false]);
    // a's lease lapses without renewal (a stalled process): b takes over, and a steps down at its next pass.
    now += 3_000_001;
    await pass(b);
    expect(b.isLeader).toBe(true);
    await pass(a);
    expect(a.isLeader).toBe(false);
    // b cannot reach the database: it leads on while its lease runs, and steps down before it ends.
    leases.down = true;
    now += 1_000;
    await pass(b);
    expect(b.isLeader).toBe(true);
    now += 2_000_000;
    await pass(b);
    expect(b.isLeader).toBe(false);
    leases.down = false;
    // Its lease lapses (it could not release it): a takes over.
    now += 1_000_000;
    await pass(a);
    expect(a.isLeader).toBe(true);
    // Stopping gives the lease up: the other leads at its next pass without waiting for it to lapse.
    a.start();
    await a.stop();
    expect(a.isLeader).toBe(false);
    expect(leases.rows.size).toBe(0);
    await pass(b);
    expect(b.isLeader).toBe(true);
    expect(led).toEqual(['a leads', 'b leads', 'a follows', 'b follows', 'a leads', 'a follows', 'b leads']);
  });
});
