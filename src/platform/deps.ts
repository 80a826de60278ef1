import type { Store } from '../persistence/store.js';
import type { Clock } from './clock.port.js';
import type { PortProbe } from '../projects/port-probe.port.js';
import type { ReverseProxy } from '../routing/reverse-proxy.port.js';
import type { RuntimeLogSource } from '../deployments/runtime-logs.port.js';
import type { LogBus } from './log-bus.js';
import type { PlatformConfig } from '../settings/platform-config.js';
import type { SecretBox } from './secret-box.js';
import type { EventPublisher } from '../events/event-publisher.js';

/** What the use cases are built from: the store, the ports, and the resolved settings. */
export interface ServiceDeps {
  store: Store;
  secrets: SecretBox;
  proxy: ReverseProxy;
  runtimeLogs: RuntimeLogSource;
  portProbe: PortProbe;
  clock: Clock;
  logBus: LogBus;
  config: PlatformConfig;
  /** The one place events are published (src/events): in the change's transaction where there is one. */
  events: EventPublisher;
}
