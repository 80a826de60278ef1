import type { Clock } from './clock.port.js';
import { PassLoop } from './pass-loop.js';

/** Where leases live (src/platform/lease.repository.ts: the `leases` table). */
export interface LeaseStore {
  /** Takes the lease, or renews it for its holder; true when `holder` holds it until `nowMs + ttlMs`. */
  acquire(name: string, holder: string, nowMs: number, ttlMs: number): Promise<boolean>;
  /** Gives it up (only its holder can). */
  release(name: string, holder: string): Promise<void>;
}

export interface LeaderRole {
  /** This process became the leader: start the work that must run once. */
  lead(): void;
  /** It is no longer (the lease lapsed or the database did not answer): stop that work. */
  follow(): Promise<void>;
}

/**
 * One leader among the platform processes on one database, for the work that must run in one of
 * them only (the event loops: two exit watchers would alert twice). Each process asks for the lease
 * every `ttlMs / 3`; its holder renews it, the others take it over once it lapsed (a killed leader's
 * after `ttlMs` at most). A holder that cannot renew in time stops leading before its lease ends, so
 * two never lead at once by the clock of the database's rows.
 */
export class LeaderLease {
  private leading = false;
  private heldUntil = 0;
  private readonly loop: PassLoop;
  private changing: Promise<void> = Promise.resolve();
  private started = false;

  constructor(
    private readonly store: () => LeaseStore,
    private readonly clock: Clock,
    private readonly name: string,
    private readonly holder: string,
    private readonly ttlMs: number,
    private readonly role: LeaderRole,
    private readonly log?: (message: string, extra?: Record<string, unknown>) => void,
  ) {
    this.loop = new PassLoop(
      () => this.pass(),
      () => Math.max(50, Math.floor(ttlMs / 3)),
      (error) => this.log?.('the leader lease could not be renewed', { lease: name, error: error.message }),
    );
  }

  get isLeader(): boolean {
    return this.leading;
  }

  start(): void {
    this.started = true;
    this.loop.start();
    this.loop.wake();
  }

  /** Stops asking, stops leading, and gives the lease up so another process takes over at once. */
  async stop(): Promise<void> {
    if (!this.started) return;
    this.started = false;
    await this.loop.stop();
    await this.changing;
    if (this.leading) {
      this.leading = false;
      await this.role.follow();
    }
    await this.store()
      .release(this.name, this.holder)
      .catch(() => {});
  }

  private async pass(): Promise<void> {
    const now = this.clock.now().getTime();
    let held = false;
    try {
      held = await this.store().acquire(this.name, this.holder, now, this.ttlMs);
    } catch (error) {
      // Not renewed: still the leader until the lease it holds ends, then not.
      if (this.leading && this.clock.now().getTime() >= this.heldUntil - Math.floor(this.ttlMs / 3)) await this.setLeading(false);
      throw error;
    }
    if (held) this.heldUntil = now + this.ttlMs;
    await this.setLeading(held);
  }

  private async setLeading(leading: boolean): Promise<void> {
    if (leading === this.leading) return;
    this.leading = leading;
    this.log?.(leading ? 'this process leads' : 'this process no longer leads', { lease: this.name });
    this.changing = leading ? Promise.resolve(this.role.lead()) : this.role.follow();
    await this.changing;
  }
}
