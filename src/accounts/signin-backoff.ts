import { RateLimitedError } from '../domain/errors.js';

/** Consecutive failures an account takes before each further attempt has to wait. */
const FREE_FAILURES = 5;
const BASE_DELAY_MS = 1_000;
/** The longest wait: a stranger can slow an account down, never lock its owner out for good. */
const MAX_DELAY_MS = 5 * 60_000;
const MAX_TRACKED = 50_000;

/**
 * Per-account backoff on failed sign-ins (and second-factor codes): after 5 failures in a row the
 * next attempt must wait 1 s, then 2 s, 4 s, ... up to 5 minutes. Attempts made while waiting are
 * refused without counting, so hammering does not lengthen the lock. Keyed by the normalized email
 * whether or not the account exists, so the lock says nothing about existence. A success or a
 * password reset clears it.
 */
export class SigninBackoff {
  private readonly entries = new Map<string, { failures: number; until: number }>();

  constructor(private readonly now: () => number) {}

  assertAllowed(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    const wait = entry.until - this.now();
    if (wait > 0) {
      throw new RateLimitedError('Too many failed sign-ins for this account; wait before trying again', Math.ceil(wait / 1000));
    }
  }

  failed(key: string): void {
    if (this.entries.size > MAX_TRACKED) this.prune();
    const entry = this.entries.get(key) ?? { failures: 0, until: 0 };
    entry.failures++;
    if (entry.failures >= FREE_FAILURES) {
      entry.until = this.now() + Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** (entry.failures - FREE_FAILURES));
    }
    this.entries.set(key, entry);
  }

  clear(key: string): void {
    this.entries.delete(key);
  }

  private prune(): void {
    const now = this.now();
    for (const [key, entry] of this.entries) if (entry.until + MAX_DELAY_MS < now) this.entries.delete(key);
  }
}
