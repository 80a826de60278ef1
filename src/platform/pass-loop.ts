/**
 * A background pass on a timer, never two at once: `wake` runs one now, or leaves the one running to
 * finish; `stop` clears the timer and waits for the pass in flight. A failed pass is reported, and the
 * next tick tries again.
 */
export class PassLoop {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;

  constructor(
    private readonly pass: () => Promise<void>,
    private readonly intervalMs: () => number,
    private readonly onError: (error: Error) => void,
  ) {}

  start(): void {
    this.timer ??= setInterval(() => this.wake(), this.intervalMs());
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  wake(): void {
    this.running ??= this.pass()
      .catch((error: Error) => this.onError(error))
      .finally(() => {
        this.running = null;
      });
  }
}
