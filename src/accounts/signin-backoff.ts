import { RateLimitedError } from '../domain/errors.js';
import type { AuthLimitStore } from './auth-limits.port.js';
import { limitKey } from './auth-rate-counters.js';

/** Consecutive failures an account takes before each further attempt has to wait. */
const FREE_FAILURES = 5;
const BASE_DELAY_MS = 1_000;
/** The longest wait: a stranger can slow an account down, never lock its owner out for good. */
const MAX_DELAY_MS = 5 * 60_000;
/** A run of failures untouched this long is forgotten (pruned at most once per PRUNE_EVERY_MS). */
const FORGET_AFTER_MS = 24 * 60 * 60_000;
const PRUNE_EVERY_MS = 10 * 60_000;

/**
 * Per-account backoff on failed sign-ins (and second-factor codes): after 5 failures in a row the
 * next attempt must wait 1 s, then 2 s, 4 s, ... up to 5 minutes. Attempts made while waiting are
 * refused without counting, so hammering does not lengthen the lock. Keyed by the normalized email
 * whether or not the account exists, so the lock says nothing about existence. A success or a
 * password reset clears it. Kept in the database (see AuthLimitStore): every platform process
 * sees the same runs, so a second process gives no attempts more; failures counted by two at once
 * are both counted.
 */
export class SigninBackoff {
  private lastPrune = 0;

  constructor(
    private readonly store: () => AuthLimitStore,
    private readonly now: () => number,
  ) {}

  /** Throws while the account must wait; resolves whether it has a run of failures (for clear). */
  async assertAllowed(key: string): Promise<boolean> {
    const entry = await this.store().backoffOf(limitKey('signin-backoff', key));
    if (!entry) return false;
    const wait = entry.untilMs - this.now();
    if (wait > 0) {
      throw new RateLimitedError('Too many failed sign-ins for this account; wait before trying again', Math.ceil(wait / 1000));
    }
    return true;
  }

  async failed(key: string): Promise<void> {
    const now = this.now();
    const store = this.store();
    const hashed = limitKey('signin-backoff', key);
    const failures = await store.addFailure(hashed, now);
    if (failures >= FREE_FAILURES) {
      await store.raiseBackoff(hashed, now + Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** (failures - FREE_FAILURES)));
    }
    if (now - this.lastPrune >= PRUNE_EVERY_MS) {
      this.lastPrune = now;
      await store.pruneBackoffs(now - FORGET_AFTER_MS);
    }
  }

  async clear(key: string): Promise<void> {
    await this.store().clearBackoff(limitKey('signin-backoff', key));
  }
}
