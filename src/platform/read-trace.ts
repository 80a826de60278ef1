import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * What an answer was read from, so that the HTTP edge may send the same bytes again while nothing it
 * was made of changed (adapters/http/answer-cache.ts). Every read is one of two kinds:
 * - a checked read, which leaves a check saying whether a read made now would still find the same: a hit
 *   of a versioned cache (is the entry still the current one), a statement that read named tables (have
 *   they been written since, src/persistence/bound-drivers.ts);
 * - any other statement that reaches the database, which makes the answer untracked: it is never sent again.
 * A read that is neither (a container engine, a clock, a memo of its own) is not seen here, so only the
 * procedures that read nothing of the kind opt in (their meta's `answerCache`).
 */
export interface ReadTrace {
  /** Who the answer is for (a fingerprint of the caller's credential and rights), set once authenticated. */
  owner: string | null;
  checks: Array<() => boolean>;
  untracked: boolean;
  /**
   * The traced call ended. Work it started (a timer, a loop started on first use) still runs in its context:
   * from now on nothing of it is recorded, or a long-lived loop would fill a finished trace for ever.
   */
  closed: boolean;
}

const traces = new AsyncLocalStorage<ReadTrace>();

/** Runs `fn` with a trace of its reads. */
export function traceReads<T>(fn: () => Promise<T>): { trace: ReadTrace; result: Promise<T> } {
  const trace: ReadTrace = { owner: null, checks: [], untracked: false, closed: false };
  const result = traces.run(trace, fn);
  const close = () => {
    trace.closed = true;
  };
  result.then(close, close);
  return { trace, result };
}

/** Whether the reads being made are traced (a check is worth building). */
export function tracingReads(): boolean {
  const trace = traces.getStore();
  return trace !== undefined && !trace.closed;
}

/** A checked read was made; `current` says whether it still is what the same read would find now. */
export function noteCheckedRead(current: () => boolean): void {
  const trace = traces.getStore();
  if (trace && !trace.closed) trace.checks.push(current);
}

/** A read reached the database: the answer cannot be checked later. */
export function noteUntrackedRead(): void {
  const trace = traces.getStore();
  if (trace && !trace.closed) trace.untracked = true;
}

/**
 * The caller is authenticated: what follows is the answer's own reads, and `owner` is whom it may be sent to
 * again. Reads before (the credential's) are checked on every request anyway.
 */
export function startAnswerReads(owner: string): void {
  const trace = traces.getStore();
  if (!trace || trace.closed) return;
  trace.owner = owner;
  trace.checks = [];
  trace.untracked = false;
}
