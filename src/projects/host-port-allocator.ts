import { ConflictError } from '../domain/errors.js';
import type { Store } from '../persistence/store.js';
import type { PortProbe } from './port-probe.port.js';

/**
 * Picks the lowest port of the range that no service holds and nothing else on the host is
 * listening on. The unique index on services.host_port is the final word: a caller that loses
 * a race gets a conflict from the insert and asks again.
 */
export async function allocateHostPort(
  store: Store,
  probe: PortProbe,
  range: { from: number; to: number },
  skip: ReadonlySet<number> = new Set(),
): Promise<number> {
  const taken = await store.projects.hostPortsTaken(range.from, range.to);
  for (let port = range.from; port <= range.to; port++) {
    if (taken.has(port) || skip.has(port)) continue;
    if (await probe.isFree(port)) return port;
  }
  throw new ConflictError(`No free host port left in ${range.from}-${range.to}; widen HOST_PORT_RANGE`);
}
