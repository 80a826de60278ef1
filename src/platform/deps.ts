import type { Store } from '../persistence/store.js';
import type { Clock } from './clock.port.js';
import type { LogBus } from './log-bus.js';
import type { PlatformConfig } from './platform-config.js';
import type { SecretBox } from './secret-box.js';
import type { EventPublishing } from './event-publishing.port.js';

/**
 * What every use case is built from: the store, the secret box, the clock, the log bus and the
 * running configuration. A port only some use cases call is handed to those alone.
 */
export interface ServiceDeps {
  store: Store;
  secrets: SecretBox;
  clock: Clock;
  logBus: LogBus;
  config: PlatformConfig;
  /** The one place events are published (src/events): in the change's transaction where there is one. */
  events: EventPublishing;
}
