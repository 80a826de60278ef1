import { eventPatternMatches, type DomainEvent } from '../domain/events.js';
import { newId } from '../domain/ids.js';
import type { EventSubscriber } from '../events/event-dispatcher.js';
import type { Store } from '../persistence/store.js';
import type { ServiceDeps } from '../platform/deps.js';
import type { ChannelSender, SendOutcome } from './channel-sender.js';
import { messageOf } from './event-message.js';
import type { DeliveryRecord } from './notification.records.js';

/** How long a claimed delivery stays its claimer's beyond the send's own timeout: then another process may take it. */
const LEASE_MARGIN_MS = 5_000;
const POLL_MS = 1_000;

/** The wait after the n-th failed attempt: the base, doubling each time (60 s, 2 min, 4 min... by default). */
export function retryDelayMs(baseMs: number, failedAttempt: number): number {
  return baseMs * 2 ** Math.max(0, failedAttempt - 1);
}

/**
 * The outbox's subscriber for notifications: each event becomes one delivery per channel that a
 * matching rule names (the install's rules, and its project's), written in the transaction that
 * marks the event dispatched.
 */
export class NotificationFanOut implements EventSubscriber {
  constructor(
    private readonly deps: Pick<ServiceDeps, 'clock'>,
    private readonly worker: { wake(): void },
  ) {}

  async accept(store: Store, events: DomainEvent[]): Promise<void> {
    const rules = await store.notifications.listRules();
    if (rules.length === 0) return;
    const now = this.deps.clock.now();
    const deliveries: DeliveryRecord[] = [];
    for (const event of events) {
      const channels = new Set<string>();
      for (const rule of rules) {
        if (rule.projectId !== null && rule.projectId !== event.projectId) continue;
        if (!rule.events.some((pattern) => eventPatternMatches(pattern, event.type))) continue;
        for (const channelId of rule.channelIds) channels.add(channelId);
      }
      for (const channelId of channels)
        deliveries.push({
          id: newId(),
          channelId,
          eventId: event.id,
          eventType: event.type,
          status: 'pending',
          attempts: 0,
          nextAttemptAt: now,
          leaseUntil: null,
          lastError: null,
          createdAt: now,
          finishedAt: null,
        });
    }
    await store.notifications.insertDeliveries(deliveries);
  }

  afterBatch(): void {
    this.worker.wake();
  }
}

/**
 * Sends due deliveries: claims them by compare-and-set with a lease (a crashed process's claims
 * come back when their lease ends), at most `deliveryConcurrency` at once, and records every
 * attempt. A failed one waits retryDelayMs and goes again, with the same id, until NOTIFY_RETRY_TRIES
 * attempts were made. Only the deliveries in flight are in memory.
 */
export class DeliveryWorker {
  private timer: NodeJS.Timeout | null = null;
  private passing: Promise<void> | null = null;
  private again = false;
  private stopped = true;
  private readonly inFlight = new Map<string, Promise<void>>();

  constructor(
    private readonly deps: ServiceDeps,
    private readonly sender: ChannelSender,
    private readonly log?: (message: string, extra?: Record<string, unknown>) => void,
  ) {}

  private get config() {
    return this.deps.config.events;
  }

  start(): void {
    this.stopped = false;
    this.timer = setInterval(() => this.wake(), POLL_MS);
    this.timer.unref?.();
    this.wake();
  }

  /** Stops claiming and waits for the sends under way (each ends within its timeout). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.passing;
    await Promise.allSettled(this.inFlight.values());
  }

  get busy(): number {
    return this.inFlight.size;
  }

  wake(): void {
    if (this.stopped) return;
    if (this.passing) {
      this.again = true;
      return;
    }
    this.passing = this.pass()
      .catch((error: Error) => this.log?.('notification deliveries could not be claimed', { error: error.message }))
      .finally(() => {
        this.passing = null;
        if (this.again && !this.stopped) {
          this.again = false;
          this.wake();
        }
      });
  }

  /** Waits until nothing is due or in flight (tests). */
  async settle(): Promise<void> {
    for (;;) {
      await this.passing;
      await Promise.allSettled(this.inFlight.values());
      const due = await this.deps.store.notifications.due(this.deps.clock.now(), 1);
      if (due.length === 0 && this.inFlight.size === 0 && !this.passing) return;
      if (this.stopped) await this.passOnce();
      else this.wake();
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  /** One claiming pass without the timer (tests that drive the worker by hand). */
  async passOnce(): Promise<void> {
    await this.pass();
    await Promise.allSettled(this.inFlight.values());
  }

  private async pass(): Promise<void> {
    const free = this.config.deliveryConcurrency - this.inFlight.size;
    if (free <= 0) return;
    const now = this.deps.clock.now();
    const due = await this.deps.store.notifications.due(now, free);
    const leaseUntil = new Date(now.getTime() + this.config.deliveryTimeoutMs + LEASE_MARGIN_MS);
    for (const delivery of due) {
      if (this.inFlight.has(delivery.id)) continue;
      if (!(await this.deps.store.notifications.claim(delivery, now, leaseUntil))) continue;
      const work = this.attempt(delivery)
        .catch((error: Error) =>
          this.log?.('a notification delivery could not be recorded', { deliveryId: delivery.id, error: error.message }),
        )
        .finally(() => {
          this.inFlight.delete(delivery.id);
          this.wake();
        });
      this.inFlight.set(delivery.id, work);
    }
    // What was due beyond this pass's share is claimed as sends end (each end wakes the worker).
    if (due.length === free) this.again = true;
  }

  private async attempt(delivery: DeliveryRecord): Promise<void> {
    const store = this.deps.store.notifications;
    const channel = await store.getChannel(delivery.channelId);
    const event = delivery.eventId ? await this.deps.store.events.get(delivery.eventId) : null;
    let outcome: SendOutcome;
    if (!channel) outcome = { ok: false, statusCode: null, latencyMs: 0, error: 'The channel was deleted' };
    else if (!event) outcome = { ok: false, statusCode: null, latencyMs: 0, error: 'The event is no longer retained' };
    else outcome = await this.sender.send(channel, messageOf(delivery.id, event));
    await this.record(delivery, outcome, !channel || !event);
  }

  /** Records an attempt and decides what comes next: done, failed for good, or again after a wait. */
  async record(delivery: DeliveryRecord, outcome: SendOutcome, final = false): Promise<void> {
    const now = this.deps.clock.now();
    const attempt = delivery.attempts + 1;
    const retry = !outcome.ok && !final && attempt < this.config.retryTries;
    await this.deps.store.notifications.finishAttempt(
      delivery.id,
      {
        status: outcome.ok ? 'succeeded' : retry ? 'pending' : 'failed',
        attempts: attempt,
        nextAttemptAt: retry ? new Date(now.getTime() + retryDelayMs(this.config.retryBaseMs, attempt)) : null,
        leaseUntil: null,
        lastError: outcome.error,
        finishedAt: retry ? null : now,
      },
      {
        deliveryId: delivery.id,
        channelId: delivery.channelId,
        attempt,
        at: now,
        ok: outcome.ok,
        statusCode: outcome.statusCode,
        latencyMs: outcome.latencyMs,
        error: outcome.error,
      },
    );
    await this.deps.store.notifications.recordChannelAttempt(delivery.channelId, outcome.ok, now, outcome.error);
  }
}
