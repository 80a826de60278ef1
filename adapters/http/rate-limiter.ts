import { RateLimitedError } from '../../src/domain/errors.js';
import type { RequestLimiter } from '../../routers/trpc.js';

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

export function createRateLimiter(opts: { requestsPerMinute: number; authFailuresPerMinute: number }): RequestLimiter {
  const requests = new WindowCounter(opts.requestsPerMinute);
  const failures = new WindowCounter(opts.authFailuresPerMinute);
  return {
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
