/** A signal for one call, and the release that ends its hold on timers and on the caller's signal. */
export interface CallSignal {
  signal: AbortSignal;
  /** Drops the timer and the listener on the caller's signal: call it once the call has ended, however. */
  release(): void;
  /** Ends the call for another reason than the caller's or the time (its database deleted, say). */
  abort(reason: unknown): void;
}

/**
 * Aborts with `parent` or after `ms` (a TimeoutError, as AbortSignal.timeout gives). Unlike
 * `AbortSignal.any([parent, AbortSignal.timeout(ms)])`, nothing of it outlives the call once released: Node
 * keeps a timeout signal that has a listener, and its timer, until the time is up, so a 30-minute build limit
 * per deployment kept a Timeout, an AbortSignal, a WeakRef and a Set per deployment for 30 minutes (a
 * 30-minute soak of 788 deployments ended with 1,100 more of each than it began with).
 */
export function callSignal(parent: AbortSignal | undefined, ms: number): CallSignal {
  const controller = new AbortController();
  const timer = setTimeout(
    () => controller.abort(new DOMException(`The operation was aborted due to timeout after ${ms} ms`, 'TimeoutError')),
    ms,
  );
  timer.unref();
  const onAbort = () => controller.abort(parent!.reason);
  if (parent?.aborted) controller.abort(parent.reason);
  else parent?.addEventListener('abort', onAbort, { once: true });
  return {
    signal: controller.signal,
    release() {
      clearTimeout(timer);
      parent?.removeEventListener('abort', onAbort);
    },
    abort: (reason) => controller.abort(reason),
  };
}
