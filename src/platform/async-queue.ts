/**
 * A single-consumer queue that an async generator can await with a deadline, so one loop
 * can wait for "the next event, or a keep-alive is due, or the client left".
 */
export class AsyncQueue<T> {
  private readonly items: T[] = [];
  private wake: (() => void) | null = null;

  push(item: T): void {
    this.items.push(item);
    this.wake?.();
  }

  /** The next item; `undefined` when `timeoutMs` passed or the signal aborted first. */
  async next(timeoutMs: number, signal: AbortSignal): Promise<T | undefined> {
    if (this.items.length > 0) return this.items.shift();
    if (signal.aborted) return undefined;
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.wake = null;
        resolve();
      };
      const timer = setTimeout(done, timeoutMs);
      signal.addEventListener('abort', done, { once: true });
      this.wake = done;
    });
    return this.items.shift();
  }
}
