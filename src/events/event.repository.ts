import type { DomainEvent, EventType, NewEvent } from '../domain/events.js';
import { EventRow, type EventRowRow } from '../persistence/event-entities.js';
import { Repository } from '../persistence/repository.js';

function toEvent(row: EventRowRow): DomainEvent {
  return {
    id: row.id,
    seq: Number(row.seq),
    type: row.type as EventType,
    projectId: row.projectId,
    occurredAt: row.occurredAt,
    data: JSON.parse(row.payload) as DomainEvent['data'],
  };
}

/**
 * The outbox. Appending events does not change the store's version (no cached read depends on them),
 * and nothing here loads more than one batch: 10,000 undelivered events cost rows, not memory.
 */
export class EventRepository extends Repository {
  /** Written on the session's connection: inside a transaction, it commits or rolls back with the change. */
  async insert(event: NewEvent): Promise<number> {
    const seq = await this.fork().insert(EventRow, {
      id: event.id,
      type: event.type,
      projectId: event.projectId,
      payload: JSON.stringify(event.data),
      dispatched: false,
      occurredAt: event.occurredAt,
    } as EventRowRow);
    return Number(seq);
  }

  /** The oldest events not yet handed to their subscribers. */
  async undispatched(limit: number): Promise<DomainEvent[]> {
    return (await this.rows(EventRow, { dispatched: false }, { seq: 'asc' }, limit)).map(toEvent);
  }

  /** Marks a batch at once: how many of them this call marked (fewer when another dispatcher took some). */
  async markAllDispatched(seqs: number[]): Promise<number> {
    if (seqs.length === 0) return 0;
    return this.fork().nativeUpdate(EventRow, { seq: { $in: seqs }, dispatched: false }, { dispatched: true });
  }

  /** The compare-and-set of a fan-out: true for the one dispatcher that marked it. */
  async markDispatched(seq: number): Promise<boolean> {
    return (await this.fork().nativeUpdate(EventRow, { seq, dispatched: false }, { dispatched: true })) > 0;
  }

  /** Events after `seq`, oldest first (the stream's snapshot and its catching up). */
  async after(seq: number, limit: number, projectIds?: readonly string[] | null): Promise<DomainEvent[]> {
    const where = projectIds
      ? { seq: { $gt: seq }, $or: [{ projectId: { $in: [...projectIds] } }, { projectId: null }] }
      : { seq: { $gt: seq } };
    return (await this.rows(EventRow, where, { seq: 'asc' }, limit)).map(toEvent);
  }

  async get(id: string): Promise<DomainEvent | null> {
    const row = await this.row(EventRow, { id });
    return row ? toEvent(row) : null;
  }

  async lastSeq(): Promise<number> {
    return Number((await this.rows(EventRow, {}, { seq: 'desc' }, 1))[0]?.seq ?? 0);
  }

  async countUndispatched(): Promise<number> {
    return this.fork().count(EventRow, { dispatched: false });
  }

  /** Retention: dispatched events older than the cutoff. */
  async deleteBefore(cutoff: Date): Promise<number> {
    return this.fork().nativeDelete(EventRow, { occurredAt: { $lt: cutoff }, dispatched: true });
  }
}
