import { keepsData } from '../domain/storage-server.js';
import type { ServiceRecord } from '../domain/types.js';
import type { Store } from '../persistence/store.js';
import type { ServerRecord } from './server.records.js';

/**
 * Databases and storage instances run exactly one replica, pinned to the server that holds their
 * volume (issue 31). A service without a placement row is on the local server: every one made before
 * the cluster existed ran there, and a new one starts there.
 */
export const isStateful = keepsData;

/** The server holding each stateful service's volume, by service id (two queries whatever their number). */
export async function holdersOf(store: Store, services: ServiceRecord[], everything = false): Promise<Map<string, ServerRecord>> {
  const stateful = services.filter(isStateful);
  if (stateful.length === 0) return new Map();
  const [servers, placements] = await Promise.all([
    store.servers.list(),
    store.servers.placementsOf(everything ? null : stateful.map((s) => s.id)),
  ]);
  const byId = new Map(servers.map((s) => [s.id, s]));
  const local = servers.find((s) => s.local);
  const placed = new Map(placements.map((p) => [p.serviceId, p.serverId]));
  const holders = new Map<string, ServerRecord>();
  for (const service of stateful) {
    const id = placed.get(service.id);
    const server = (id && byId.get(id)) || local;
    if (server) holders.set(service.id, server);
  }
  return holders;
}

/** The server holding one stateful service's volume; null for a stateless service or before the local server is recorded. */
export async function holderOf(store: Store, service: ServiceRecord): Promise<ServerRecord | null> {
  return (await holdersOf(store, [service])).get(service.id) ?? null;
}
