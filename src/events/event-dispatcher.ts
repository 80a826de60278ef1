import type { DomainEvent } from '../domain/events.js';
import type { Store } from '../persistence/store.js';
import type { Clock } from '../platform/clock.port.js';
import type { EventPublisher } from './event-publisher.js';

/**
 * A durable subscriber of the outbox (notification deliveries). `accept` runs inside the transaction
 * that marks the event dispatched: what it writes and the mark commit together, so an event is handed
 * over exactly once even across a crash.
 */
export interface EventSubscriber {
  accept(store: Store, events: DomainEvent[]): Promise<void>;
  /** After a batch committed: the subscriber's own worker may look at what it was given. */
  afterBatch?(): void;
}

export interface DispatcherOptions {
  /** Events fanned out per transaction. */
  batchSize?: number;
  /** How often the outbox is looked at without a wake (another process's events). */
  pollMs?: number;
  /** Whether this process is alone on the database: then only its own commits add events, each a wake, and the outbox is looked at every ALONE_POLL_MS. */
  alone?: () => boolean;
  /** How long dispatched events are kept for streams to resume from. */
  retentionMs: () => number;
  log?: (message: string, extra?: Record<string, unknown>) => void;
}

const HOUR = 3_600_000;
const ALONE_POLL_MS = 10_000;
const CONTENDED = Symbol('another dispatcher took part of the batch');

/**
 * Claims committed events from the outbox in batches, like the job runner claims jobs: each event
 * is marked dispatched by compare-and-set, in one transaction with what its subscribers write, so two
 * processes never hand the same event over twice and a crash hands it over again. It holds one batch in
 * memory at most, whatever the outbox's length.
 */
export class EventDispatcher {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = true;
  /** Set by stop(): a drain under way ends after its batch. */
  private closing = false;
  private unsubscribe: (() => void) | null = null;
  private lastPurge = 0;

  constructor(
    private readonly deps: { store: Store; clock: Clock },
    private readonly publisher: EventPublisher,
    private readonly subscribers: EventSubscriber[],
    private readonly options: DispatcherOptions,
  ) {}

  start(): void {
    this.stopped = false;
    this.closing = false;
    this.unsubscribe = this.publisher.onCommitted(() => this.wake());
    let lastPoll = 0;
    this.timer = setInterval(() => {
      if (this.options.alone?.() && Date.now() - lastPoll < ALONE_POLL_MS) return;
      lastPoll = Date.now();
      this.wake();
    }, this.options.pollMs ?? 1_000);
    this.timer.unref?.();
    this.wake();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.closing = true;
    this.unsubscribe?.();
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  /** Looks at the outbox now; a wake during a pass runs one more pass after it. */
  wake(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.drain()
      .catch((error: Error) => this.options.log?.('event dispatch failed; retried at the next poll', { error: error.message }))
      .finally(() => {
        this.running = null;
        if (this.again && !this.stopped) {
          this.again = false;
          this.wake();
        }
      });
  }

  /** Dispatches until the outbox has nothing undispatched (tests and shutdown call it directly). */
  async drain(): Promise<void> {
    const batchSize = this.options.batchSize ?? 100;
    for (;;) {
      this.again = false;
      const handed = await this.dispatchBatch(batchSize);
      if (handed < batchSize || this.closing) break;
    }
    await this.purge();
  }

  private async dispatchBatch(batchSize: number): Promise<number> {
    const batch = await this.deps.store.events.undispatched(batchSize);
    if (batch.length === 0) return 0;
    // The whole batch is marked in one statement; when another process took part of it, the
    // transaction is rolled back and each event is claimed on its own instead.
    const contended = await this.deps.store
      .transaction(async (tx) => {
        if ((await tx.events.markAllDispatched(batch.map((e) => e.seq))) !== batch.length) throw CONTENDED;
        for (const subscriber of this.subscribers) await subscriber.accept(tx, batch);
        return false;
      })
      .catch((error: unknown) => {
        if (error === CONTENDED) return true;
        throw error;
      });
    if (contended)
      await this.deps.store.transaction(async (tx) => {
        const mine: DomainEvent[] = [];
        for (const event of batch) if (await tx.events.markDispatched(event.seq)) mine.push(event);
        if (mine.length === 0) return;
        for (const subscriber of this.subscribers) await subscriber.accept(tx, mine);
      });
    for (const subscriber of this.subscribers) subscriber.afterBatch?.();
    return batch.length;
  }

  /** Dispatched events past their retention, at most once an hour. */
  private async purge(): Promise<void> {
    const now = this.deps.clock.now().getTime();
    if (now - this.lastPurge < HOUR) return;
    this.lastPurge = now;
    const removed = await this.deps.store.events.deleteBefore(new Date(now - this.options.retentionMs()));
    if (removed > 0) this.options.log?.('events past their retention removed', { removed });
  }
}
