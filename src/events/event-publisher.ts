import { EventEmitter } from 'node:events';
import { projectOfEvent, type EventPayloads, type EventType, type NewEvent } from '../domain/events.js';
import { newId } from '../domain/ids.js';
import type { Store } from '../persistence/store.js';
import type { Clock } from '../platform/clock.port.js';
import type { EventPublishing, PublishOptions } from '../platform/event-publishing.port.js';

export type { PublishOptions } from '../platform/event-publishing.port.js';

/**
 * The one place the platform publishes domain events. A capability calls
 * `publish('server.down', {serverId, name, address})`, inside its transaction when it has one
 * (`{store: tx}`); the event lands in the outbox table, and once it is committed the dispatcher and
 * the open event streams are told. Subscribers read it from the table, so a crash between the change
 * and its delivery loses nothing.
 */
export class EventPublisher implements EventPublishing {
  private readonly emitter = new EventEmitter();

  constructor(private readonly deps: { store: Store; clock: Clock }) {
    // One listener per open event stream, plus the dispatcher.
    this.emitter.setMaxListeners(0);
  }

  async publish<T extends EventType>(type: T, data: EventPayloads[T], options: PublishOptions = {}): Promise<void> {
    const store = options.store ?? this.deps.store;
    const event: NewEvent<T> = {
      id: newId(),
      type,
      projectId: options.projectId !== undefined ? options.projectId : projectOfEvent(type, data),
      occurredAt: this.deps.clock.now(),
      data,
    };
    await store.events.insert(event);
    store.afterCommit(() => this.emitter.emit('committed'));
  }

  /**
   * `publish` for background work (monitors, job endings) whose own outcome must not depend on the
   * event: a failure to write it is logged, not thrown.
   */
  publishQuietly<T extends EventType>(
    type: T,
    data: EventPayloads[T],
    log?: (message: string, extra?: Record<string, unknown>) => void,
    options: PublishOptions = {},
  ): Promise<void> {
    return this.publish(type, data, options).catch((error: unknown) =>
      log?.('an event could not be written', { type, error: error instanceof Error ? error.message : String(error) }),
    );
  }

  /** Told after each commit that wrote events (the dispatcher wakes; streams read the table). */
  onCommitted(listener: () => void): () => void {
    this.emitter.on('committed', listener);
    return () => this.emitter.off('committed', listener);
  }
}
