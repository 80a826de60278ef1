import { canSeeProject, hasScope, type Actor } from '../domain/access.js';
import { eventAudience, type DomainEvent } from '../domain/events.js';
import { AsyncQueue } from '../platform/async-queue.js';
import type { Store } from '../persistence/store.js';
import type { Clock } from '../platform/clock.port.js';
import type { EventPublisher } from './event-publisher.js';
import { presentEvent, type EventView } from './event-views.js';

export type EventStreamItem = { type: 'event'; seq: number; event: EventView } | { type: 'ping'; t: number };

/** Events read from the outbox per query. */
const PAGE = 500;
/**
 * A seq missing between two committed ones may belong to a transaction still open (PostgreSQL hands
 * out seqs before commit): the stream waits this long for it before going past (it was rolled back).
 */
const GAP_WAIT_MS = 2_000;
const GAP_POLL_MS = 100;

/** Whether an actor may see an event (docs/events.md, Event stream). */
export function canSeeEvent(actor: Actor, event: Pick<DomainEvent, 'type' | 'projectId'>): boolean {
  const audience = eventAudience(event.type);
  if (audience === 'project') return event.projectId ? canSeeProject(actor, event.projectId) : actor.projectIds === null;
  if (audience === 'install') return actor.projectIds === null;
  // Keys, tokens and sign-ins: the install's administrators only.
  return actor.projectIds === null && actor.access === 'write' && actor.role !== 'member' && hasScope(actor, 'admin');
}

/**
 * The live event stream (`GET /api/events/stream`, the typed `events.stream` subscription): events
 * after Last-Event-ID that are still retained, then each new one as it commits, limited to what the
 * caller may see, with a keep-alive ping. Without Last-Event-ID it starts at the newest event.
 */
export class EventStreamService {
  constructor(
    private readonly deps: { store: Store; clock: Clock; pingMs: () => number },
    private readonly publisher: EventPublisher,
  ) {}

  async stream(actor: Actor, opts: { lastEventId?: number | undefined; signal: AbortSignal }): Promise<AsyncGenerator<EventStreamItem>> {
    const start = opts.lastEventId ?? (await this.deps.store.events.lastSeq());
    return this.follow(actor, start, opts.signal);
  }

  private async *follow(actor: Actor, start: number, signal: AbortSignal): AsyncGenerator<EventStreamItem> {
    const queue = new AsyncQueue<true>();
    // Subscribed before the first read: nothing committed in between is missed.
    const unsubscribe = this.publisher.onCommitted(() => queue.push(true));
    let cursor = start;
    let gapSince: number | null = null;
    try {
      while (!signal.aborted) {
        const page = await this.deps.store.events.after(cursor, PAGE);
        let stoppedAtGap = false;
        for (const event of page) {
          if (signal.aborted) return;
          if (event.seq !== cursor + 1) {
            const now = Date.now();
            gapSince ??= now;
            if (now - gapSince < GAP_WAIT_MS) {
              stoppedAtGap = true;
              break;
            }
          }
          gapSince = null;
          cursor = event.seq;
          if (canSeeEvent(actor, event)) yield { type: 'event', seq: event.seq, event: presentEvent(event) };
        }
        if (page.length === PAGE && !stoppedAtGap) continue;
        const woke = await queue.next(stoppedAtGap ? GAP_POLL_MS : this.deps.pingMs(), signal);
        if (signal.aborted) return;
        if (!woke && !stoppedAtGap) yield { type: 'ping', t: Date.now() };
      }
    } finally {
      unsubscribe();
    }
  }
}
