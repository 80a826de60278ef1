import { afterAll, describe, expect, it } from 'vitest';
import type { AuthLimitStore } from '../../src/accounts/auth-limits.port.js';
import { FixedMinuteCounter, limitKey, SlidingMinuteCounter } from '../../src/accounts/auth-rate-counters.js';
import { SigninBackoff } from '../../src/accounts/signin-backoff.js';
import { RateLimitedError } from '../../src/domain/errors.js';
import { openDatabase, type Database } from '../../src/persistence/database.js';
import { createScratchDatabase } from '../helpers/postgres.js';

/**
 * The authentication limits' rules over a store every process shares: the per-address budgets (a
 * sliding minute), the failed-authentication count (fixed minutes) and the per-account backoff.
 * Two counters (or backoffs) on one store stand for two platform processes on one database. Then
 * the store itself, on SQLite and on PostgreSQL, with concurrent writers.
 */
class MemoryAuthLimits implements AuthLimitStore {
  readonly hits = new Map<string, number>();
  readonly backoffs = new Map<string, { failures: number; untilMs: number; lastFailureMs: number }>();
  async addHit(key: string, windowStart: number) {
    const id = `${key}@${windowStart}`;
    this.hits.set(id, (this.hits.get(id) ?? 0) + 1);
    return this.hits.get(id)!;
  }
  async removeHit(key: string, windowStart: number) {
    const id = `${key}@${windowStart}`;
    if ((this.hits.get(id) ?? 0) > 0) this.hits.set(id, this.hits.get(id)! - 1);
  }
  async hitsSince(key: string, fromWindow: number) {
    let total = 0;
    let oldest: number | null = null;
    for (const [id, hits] of this.hits) {
      const [k, w] = id.split('@') as [string, string];
      if (k !== key || Number(w) < fromWindow || hits <= 0) continue;
      total += hits;
      oldest = oldest === null ? Number(w) : Math.min(oldest, Number(w));
    }
    return { total, oldest };
  }
  async pruneHits(before: number) {
    for (const id of [...this.hits.keys()]) if (Number(id.split('@')[1]) < before) this.hits.delete(id);
  }
  async backoffOf(key: string) {
    const entry = this.backoffs.get(key);
    return entry ? { failures: entry.failures, untilMs: entry.untilMs } : null;
  }
  async addFailure(key: string, nowMs: number) {
    const entry = this.backoffs.get(key) ?? { failures: 0, untilMs: 0, lastFailureMs: nowMs };
    entry.failures++;
    entry.lastFailureMs = nowMs;
    this.backoffs.set(key, entry);
    return entry.failures;
  }
  async raiseBackoff(key: string, untilMs: number) {
    const entry = this.backoffs.get(key);
    if (entry && entry.untilMs < untilMs) entry.untilMs = untilMs;
  }
  async clearBackoff(key: string) {
    this.backoffs.delete(key);
  }
  async pruneBackoffs(lastFailureBefore: number) {
    for (const [key, entry] of this.backoffs) if (entry.lastFailureMs < lastFailureBefore) this.backoffs.delete(key);
  }
}

const T0 = Date.parse('2026-11-28T10:00:00.000Z');

describe('the per-address budget: a sliding minute shared by every process', () => {
  it('refuses the 6th within a minute wherever the minute starts, counting at both processes', async () => {
    // Starting at the end of a second, or mid-minute: the window is the last 60 s, not a clock minute.
    for (const start of [T0, T0 + 999, T0 + 30_500]) {
      const store = new MemoryAuthLimits();
      let now = start;
      const [a, b] = [
        new SlidingMinuteCounter(
          () => store,
          5,
          () => now,
        ),
        new SlidingMinuteCounter(
          () => store,
          5,
          () => now,
        ),
      ];
      const key = limitKey('auth-attempt', 'signup', '203.0.113.9');
      for (let i = 0; i < 5; i++) {
        expect(await (i % 2 ? b : a).hit(key)).toBe(0);
        now += 14_000;
      }
      // 56 s after the first: the 6th within the minute, at either process.
      now = start + 59_999;
      expect(await a.hit(key)).toBeGreaterThan(0);
      expect(await b.hit(key)).toBeGreaterThan(0);
      // Refused requests are not counted: once the first hit is a minute old, one more goes.
      now = start + 60_000;
      expect(await b.hit(key)).toBe(0);
      expect(await a.hit(key)).toBeGreaterThan(0);
    }
  });

  it('says how long to wait: until the oldest counted request leaves the minute', async () => {
    const store = new MemoryAuthLimits();
    let now = T0 + 400;
    const counter = new SlidingMinuteCounter(
      () => store,
      2,
      () => now,
    );
    expect(await counter.hit('k')).toBe(0);
    now = T0 + 10_000;
    expect(await counter.hit('k')).toBe(0);
    now = T0 + 20_000;
    // The first hit counts until T0 + 60.4 s: 40.4 s from now.
    expect(await counter.hit('k')).toBe(41);
    expect((await store.hitsSince('k', 0)).total).toBe(2);
  });

  it('keeps addresses and kinds apart, and stores no address in clear', async () => {
    const store = new MemoryAuthLimits();
    const counter = new SlidingMinuteCounter(
      () => store,
      1,
      () => T0,
    );
    expect(await counter.hit(limitKey('auth-attempt', 'signin', '203.0.113.1'))).toBe(0);
    expect(await counter.hit(limitKey('auth-attempt', 'signup', '203.0.113.1'))).toBe(0);
    expect(await counter.hit(limitKey('auth-attempt', 'signin', '203.0.113.2'))).toBe(0);
    expect(await counter.hit(limitKey('auth-attempt', 'signin', '203.0.113.1'))).toBeGreaterThan(0);
    expect([...store.hits.keys()].join(' ')).not.toContain('203.0.113');
    expect(limitKey('a', 'b')).toMatch(/^[0-9a-f]{64}$/);
    expect(limitKey('a', 'b')).not.toBe(limitKey('ab'));
  });
});

describe('failed authentications: fixed minutes shared by every process', () => {
  it('refuses past the limit within the minute, at either process, and starts again with the next', async () => {
    const store = new MemoryAuthLimits();
    let now = T0 + 5_000;
    const [a, b] = [
      new FixedMinuteCounter(
        () => store,
        3,
        () => now,
      ),
      new FixedMinuteCounter(
        () => store,
        3,
        () => now,
      ),
    ];
    for (const counter of [a, b, a]) expect(await counter.hit('ip')).toBe(0);
    expect(await b.hit('ip')).toBe(55);
    now = T0 + 60_000;
    expect(await a.hit('ip')).toBe(0);
  });
});

describe('the per-account backoff, shared by every process', () => {
  it('after 5 failures at either process, both make the account wait 1 s, then 2 s', async () => {
    const store = new MemoryAuthLimits();
    let now = T0;
    const [a, b] = [
      new SigninBackoff(
        () => store,
        () => now,
      ),
      new SigninBackoff(
        () => store,
        () => now,
      ),
    ];
    const email = 'who@example.com';
    expect(await a.assertAllowed(email)).toBe(false);
    for (let i = 0; i < 5; i++) await (i % 2 ? b : a).failed(email);
    for (const backoff of [a, b]) {
      const refused = await backoff.assertAllowed(email).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(RateLimitedError);
      expect((refused as RateLimitedError).details).toEqual({ retryAfterSeconds: 1 });
    }
    now += 1_000;
    expect(await b.assertAllowed(email)).toBe(true);
    await b.failed(email);
    await expect(a.assertAllowed(email)).rejects.toMatchObject({ details: { retryAfterSeconds: 2 } });
    // The email is not in the store in clear.
    expect([...store.backoffs.keys()].join(' ')).not.toContain('who@');
    await a.clear(email);
    expect(await b.assertAllowed(email)).toBe(false);
  });

  it('never waits longer than 5 minutes, and forgets a run untouched for a day', async () => {
    const store = new MemoryAuthLimits();
    let now = T0;
    const backoff = new SigninBackoff(
      () => store,
      () => now,
    );
    for (let i = 0; i < 60; i++) await backoff.failed('x');
    await expect(backoff.assertAllowed('x')).rejects.toMatchObject({ details: { retryAfterSeconds: 300 } });
    now += 24 * 3_600_000 + 1;
    await backoff.failed('y');
    expect(store.backoffs.size).toBe(1);
  });
});

describe('the store in the database', () => {
  const databases: Database[] = [];
  const scratches: Array<{ drop(): Promise<void> }> = [];
  afterAll(async () => {
    for (const database of databases) await database.close();
    for (const scratch of scratches) await scratch.drop();
  });

  for (const dialect of ['SQLite', 'PostgreSQL'] as const) {
    it(`${dialect}: counts concurrent hits exactly, sums a window, takes back and prunes; backoff runs count concurrent failures`, async () => {
      let database: Database;
      if (dialect === 'SQLite') database = await openDatabase({ dataDir: ':memory:' });
      else {
        const scratch = await createScratchDatabase();
        scratches.push(scratch);
        database = await openDatabase({ databaseUrl: scratch.url, dataDir: ':memory:' });
      }
      databases.push(database);
      const store = database.store.authLimits;
      const key = limitKey('auth-attempt', 'signin', '198.51.100.7');
      const second = Math.floor(T0 / 1000);
      const counts = await Promise.all(Array.from({ length: 20 }, () => store.addHit(key, second)));
      expect(counts.sort((x, y) => x - y)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
      await store.addHit(key, second - 30);
      await store.addHit(key, second - 90);
      expect(await store.hitsSince(key, second - 60)).toEqual({ total: 21, oldest: second - 30 });
      await store.removeHit(key, second);
      expect((await store.hitsSince(key, second - 60)).total).toBe(20);
      expect(await store.hitsSince('nobody', 0)).toEqual({ total: 0, oldest: null });
      await store.pruneHits(second - 60);
      expect(await store.hitsSince(key, 0)).toEqual({ total: 20, oldest: second - 30 });

      const account = limitKey('signin-backoff', 'who@example.com');
      expect(await store.backoffOf(account)).toBeNull();
      const runs = await Promise.all(Array.from({ length: 8 }, () => store.addFailure(account, T0)));
      expect(runs.sort((x, y) => x - y)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
      await store.raiseBackoff(account, T0 + 4_000);
      await store.raiseBackoff(account, T0 + 2_000);
      expect(await store.backoffOf(account)).toEqual({ failures: 8, untilMs: T0 + 4_000 });
      await store.pruneBackoffs(T0);
      expect(await store.backoffOf(account)).not.toBeNull();
      await store.pruneBackoffs(T0 + 1);
      expect(await store.backoffOf(account)).toBeNull();
      await store.addFailure(account, T0);
      await store.clearBackoff(account);
      expect(await store.backoffOf(account)).toBeNull();
    }, 60_000);
  }
});
