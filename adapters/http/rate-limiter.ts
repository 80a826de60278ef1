import { RateLimitedError } from '../../src/domain/errors.js';
import type { AuthRateKind, RequestLimiter } from '../../routers/trpc.js';

/** Fixed one-minute windows per key: cheap, and enough to stop a runaway script or a token guesser. */
class WindowCounter {
  private readonly counts = new Map<string, { windowStart: number; count: number }>();

  constructor(private readonly perMinute: number) {}

  /** Adds one; returns the seconds to wait when over the limit, else 0. */
  hit(key: string, now = Date.now()): number {
    const windowStart = now - (now % 60_000);
    let entry = this.counts.get(key);
    if (!entry || entry.windowStart !== windowStart) {
      if (this.counts.size > 10_000) this.prune(windowStart);
      entry = { windowStart, count: 0 };
      this.counts.set(key, entry);
    }
    entry.count++;
    return entry.count > this.perMinute ? Math.ceil((windowStart + 60_000 - now) / 1000) : 0;
  }

  private prune(windowStart: number): void {
    for (const [key, entry] of this.counts) if (entry.windowStart !== windowStart) this.counts.delete(key);
  }
}

/**
 * The last minute exactly, per address: "the 6th request within a minute gets 429" holds whenever
 * the minute starts, which fixed windows would not promise. Refused requests are not counted, so
 * Retry-After is when the oldest counted one leaves the window.
 */
class SlidingCounter {
  private readonly hits = new Map<string, number[]>();

  constructor(private readonly perMinute: number) {}

  hit(key: string, now = Date.now()): number {
    if (this.hits.size > 10_000) this.prune(now);
    const recent = (this.hits.get(key) ?? []).filter((t) => t > now - 60_000);
    if (recent.length >= this.perMinute) {
      this.hits.set(key, recent);
      return Math.max(1, Math.ceil((recent[0]! + 60_000 - now) / 1000));
    }
    recent.push(now);
    this.hits.set(key, recent);
    return 0;
  }

  private prune(now: number): void {
    for (const [key, times] of this.hits) if ((times.at(-1) ?? 0) <= now - 60_000) this.hits.delete(key);
  }
}

/** Requests per minute per client address on the authentication endpoints (spec, Limits item 1). */
export const AUTH_RATE_LIMITS: Record<AuthRateKind, number> = { signup: 5, signin: 10, 'password-reset': 3 };

export function createRateLimiter(opts: {
  requestsPerMinute: number;
  authFailuresPerMinute: number;
  authLimits?: Record<AuthRateKind, number>;
}): RequestLimiter {
  const requests = new WindowCounter(opts.requestsPerMinute);
  const failures = new WindowCounter(opts.authFailuresPerMinute);
  const authLimits = opts.authLimits ?? AUTH_RATE_LIMITS;
  const auth = Object.fromEntries(Object.entries(authLimits).map(([kind, limit]) => [kind, new SlidingCounter(limit)])) as Record<
    AuthRateKind,
    SlidingCounter
  >;
  return {
    assertAuthAttempt(kind, ip) {
      const wait = auth[kind].hit(ip);
      if (wait > 0)
        throw new RateLimitedError(`More than ${authLimits[kind]} ${kind} requests in a minute from this address; try again later`, wait);
    },
    recordAuthFailure(ip) {
      const wait = failures.hit(ip);
      if (wait > 0) throw new RateLimitedError('Too many failed authentication attempts from this address; try again later', wait);
    },
    assertRequestAllowed(keyId) {
      if (opts.requestsPerMinute === 0) return;
      const wait = requests.hit(keyId);
      if (wait > 0) throw new RateLimitedError(`This API key sent more than ${opts.requestsPerMinute} requests in a minute`, wait);
    },
  };
}
