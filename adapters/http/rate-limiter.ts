import type { AuthLimitStore } from '../../src/accounts/auth-limits.port.js';
import { FixedMinuteCounter, limitKey, SlidingMinuteCounter } from '../../src/accounts/auth-rate-counters.js';
import { RateLimitedError } from '../../src/domain/errors.js';
import { DEFAULT_PLATFORM_CONFIG } from '../../src/platform/platform-config.js';
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

/** Requests per minute per client address on the authentication endpoints (spec, Limits item 1). */
export const AUTH_RATE_LIMITS: Record<AuthRateKind, number> = { signup: 5, signin: 10, 'password-reset': 3 };

export function createRateLimiter(opts: {
  requestsPerMinute: number;
  authFailuresPerMinute: number;
  authLimits?: Record<AuthRateKind, number>;
  /** Webhook deliveries per address a minute (the public door's), read at each delivery: the setting is live. */
  webhookDeliveriesPerMinute?: () => number;
  /** Where the authentication and webhook counters live: the database, shared by every platform process. */
  store: () => AuthLimitStore;
  now?: () => number;
}): RequestLimiter {
  const now = opts.now ?? Date.now;
  // A key's request budget guards this process's throughput: counted here, per process (see docs/decisions.md).
  const requests = new WindowCounter(opts.requestsPerMinute);
  const failures = new FixedMinuteCounter(opts.store, opts.authFailuresPerMinute, now);
  const authLimits = opts.authLimits ?? AUTH_RATE_LIMITS;
  const auth = Object.fromEntries(
    Object.entries(authLimits).map(([kind, limit]) => [kind, new SlidingMinuteCounter(opts.store, limit, now)]),
  ) as Record<AuthRateKind, SlidingMinuteCounter>;
  const webhookLimit = opts.webhookDeliveriesPerMinute ?? (() => DEFAULT_PLATFORM_CONFIG.hooks.perAddressPerMinute);
  // Shared like the authentication limits: behind a balancer, every process counts the same address's deliveries.
  const deliveries = new SlidingMinuteCounter(opts.store, webhookLimit, now);
  return {
    async assertWebhookDelivery(ip) {
      const wait = await deliveries.hit(limitKey('webhook-delivery', ip));
      if (wait > 0) throw new RateLimitedError(`Too many deliveries from this address: at most ${webhookLimit()} a minute`, wait);
    },
    async assertAuthAttempt(kind, ip) {
      const wait = await auth[kind].hit(limitKey('auth-attempt', kind, ip));
      if (wait > 0)
        throw new RateLimitedError(`More than ${authLimits[kind]} ${kind} requests in a minute from this address; try again later`, wait);
    },
    async recordAuthFailure(ip) {
      const wait = await failures.hit(limitKey('auth-failure', ip));
      if (wait > 0) throw new RateLimitedError('Too many failed authentication attempts from this address; try again later', wait);
    },
    assertRequestAllowed(keyId) {
      if (opts.requestsPerMinute === 0) return;
      const wait = requests.hit(keyId);
      if (wait > 0) throw new RateLimitedError(`This API key sent more than ${opts.requestsPerMinute} requests in a minute`, wait);
    },
  };
}
