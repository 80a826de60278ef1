import { ConflictError } from '../domain/errors.js';
import type { Store } from '../persistence/store.js';
import type { ServiceDeps } from '../platform/deps.js';
import type { PortProbe } from './port-probe.port.js';

/** The host ports services get, in HOST_PORT_RANGE: a new service's, and each copy's in an environment's clone. */
export class HostPortAllocator {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly probe: PortProbe,
  ) {}

  /**
   * The lowest port of the range that no service holds and nothing else on the host is listening on.
   * The unique index on services.host_port is the final word: a caller that loses a race gets a
   * conflict from the insert and asks again.
   */
  async allocate(store: Store, skip: ReadonlySet<number> = new Set()): Promise<number> {
    const range = this.deps.config.hostPortRange;
    const taken = await store.projects.hostPortsTaken(range.from, range.to);
    for (let port = range.from; port <= range.to; port++) {
      if (taken.has(port) || skip.has(port)) continue;
      if (await this.probe.isFree(port)) return port;
    }
    throw new ConflictError(`No free host port left in ${range.from}-${range.to}; widen HOST_PORT_RANGE`);
  }
}
