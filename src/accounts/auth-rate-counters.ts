import { createHash } from 'node:crypto';
import type { AuthLimitStore } from './auth-limits.port.js';

const MINUTE_MS = 60_000;
/** Old windows are deleted at most this often per counter and process. */
const PRUNE_EVERY_MS = 60_000;
/** Windows older than this are of no counter's concern any more. */
const KEEP_MS = 2 * MINUTE_MS;

/** The key a count is stored under: what is counted and for whom, hashed (addresses and emails are never stored in clear). */
export function limitKey(...parts: string[]): string {
  return createHash('sha256').update(parts.join('\0')).digest('hex');
}

abstract class SharedCounter {
  private lastPrune = 0;

  constructor(
    protected readonly store: () => AuthLimitStore,
    /** A number, or read at each hit where the setting is live (the webhook door's). */
    private readonly limitOf: number | (() => number),
    protected readonly now: () => number,
  ) {}

  protected get limit(): number {
    return typeof this.limitOf === 'number' ? this.limitOf : this.limitOf();
  }

  /** Adds one for `key`; resolves with the seconds to wait when over the limit, else 0. */
  abstract hit(key: string): Promise<number>;

  protected prune(now: number): void {
    if (now - this.lastPrune < PRUNE_EVERY_MS) return;
    this.lastPrune = now;
    // Off the request's path: a failed prune is retried a minute later.
    void this.store()
      .pruneHits(now - KEEP_MS)
      .catch(() => {
        this.lastPrune = 0;
      });
  }
}

/**
 * The last minute per key, exactly: each hit is counted at its millisecond (one row per key and
 * millisecond with hits: at most the limit's worth a minute), and counts while it is less than a
 * minute old, so "the (limit+1)th within a minute is refused" holds wherever the minute starts.
 * Refused requests are not counted: the hit is added, then taken back when it took the total over
 * the limit; two processes reaching the limit together may then both be refused, never both let
 * through over it.
 */
export class SlidingMinuteCounter extends SharedCounter {
  async hit(key: string): Promise<number> {
    const now = this.now();
    const store = this.store();
    this.prune(now);
    const limit = this.limit;
    await store.addHit(key, now);
    const { total, oldest } = await store.hitsSince(key, now - MINUTE_MS + 1);
    if (total <= limit) return 0;
    await store.removeHit(key, now);
    // When the oldest counted hit leaves the minute.
    return Math.max(1, Math.ceil(((oldest ?? now) + MINUTE_MS - now) / 1000));
  }
}

/** Fixed one-minute windows: one upsert a hit, for counts that only need to stop a runaway (failed authentications). */
export class FixedMinuteCounter extends SharedCounter {
  async hit(key: string): Promise<number> {
    const now = this.now();
    const windowStart = now - (now % MINUTE_MS);
    this.prune(now);
    const hits = await this.store().addHit(key, windowStart);
    return hits > this.limit ? Math.max(1, Math.ceil((windowStart + MINUTE_MS - now) / 1000)) : 0;
  }
}
