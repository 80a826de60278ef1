/**
 * Polls `fn` until it returns something truthy; fails with `what` after `timeoutMs`, naming the last value
 * or error. In-process tests poll every 10 ms; tests over HTTP or Docker pass a longer `intervalMs`.
 */
export async function until<T>(fn: () => T | Promise<T>, timeoutMs = 5_000, what = 'condition', intervalMs = 10): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await fn();
      if (value) return value as NonNullable<T>;
      last = value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline)
      throw new Error(`${what} not reached within ${timeoutMs} ms (last: ${last instanceof Error ? last.message : JSON.stringify(last)})`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
