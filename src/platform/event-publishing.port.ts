import type { EventPayloads, EventType } from '../domain/events.js';
import type { Store } from '../persistence/store.js';

export interface PublishOptions {
  /**
   * The transaction of the change the event reports: the event commits or rolls back with it (the
   * outbox). Without one, the event is written on its own.
   */
  store?: Store;
  /** Overrides the project read from the payload (`data.projectId` of service events). */
  projectId?: string | null;
}

/**
 * What a capability publishes its domain events through (src/events implements it): declared here so
 * that the shared dependencies and the monitors need not import the events capability.
 */
export interface EventPublishing {
  publish<T extends EventType>(type: T, data: EventPayloads[T], options?: PublishOptions): Promise<void>;
  /** `publish` for background work whose own outcome must not depend on the event: a failure is logged, not thrown. */
  publishQuietly<T extends EventType>(
    type: T,
    data: EventPayloads[T],
    log?: (message: string, extra?: Record<string, unknown>) => void,
    options?: PublishOptions,
  ): Promise<void>;
}
