/**
 * Where the authentication counters and the sign-in backoff live: shared by every platform process
 * (the database). Keys are opaque (hashes); windows are named by their start, in epoch milliseconds.
 */
export interface AuthLimitStore {
  /** Adds one hit to a key's window; resolves with that window's hits after it. */
  addHit(key: string, windowStart: number): Promise<number>;
  /** Takes back one hit (a refused request is not counted). */
  removeHit(key: string, windowStart: number): Promise<void>;
  /** Hits of a key in the windows from `fromWindow` on, and the oldest such window. */
  hitsSince(key: string, fromWindow: number): Promise<{ total: number; oldest: number | null }>;
  pruneHits(before: number): Promise<void>;

  backoffOf(key: string): Promise<{ failures: number; untilMs: number } | null>;
  /** Counts one more failure in a row; resolves with the run's length. */
  addFailure(key: string, nowMs: number): Promise<number>;
  /** Moves the end of the wait to `untilMs`, never earlier. */
  raiseBackoff(key: string, untilMs: number): Promise<void>;
  clearBackoff(key: string): Promise<void>;
  pruneBackoffs(lastFailureBefore: number): Promise<void>;
}
