import { z } from 'zod';
import { EVENT_TYPES, type DomainEvent } from '../domain/events.js';

/** An event on the wire: the stream's `event` data, a webhook's `data`, and what docs/events.md shows. */
export const eventView = z
  .object({
    id: z.string(),
    seq: z.number().int(),
    type: z.enum(EVENT_TYPES),
    projectId: z.string().nullable(),
    occurredAt: z.string(),
    data: z.record(z.string(), z.unknown()),
  })
  .meta({ id: 'Event' });
export type EventView = z.infer<typeof eventView>;

export function presentEvent(event: DomainEvent): EventView {
  return {
    id: event.id,
    seq: event.seq,
    type: event.type,
    projectId: event.projectId,
    occurredAt: event.occurredAt.toISOString(),
    data: event.data as unknown as Record<string, unknown>,
  };
}
