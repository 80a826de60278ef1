import type { ServiceDeps } from '../platform/deps.js';
import type { ClusterSettings } from './cluster-settings.js';
import type { ServerRecord } from './server.records.js';
import { holderOf, isStateful } from './service-holders.js';
import type { PlacedServer, StatefulPlacements } from './stateful-placements.port.js';
import { overlayNetworkName } from './swarm-path.js';
import type { SwarmServices } from './swarm-services.port.js';

/**
 * The placements the engine adapters follow (docs/cluster.md, "Databases and storage instances on the cluster"):
 * the service's placement row names its server; none, or the host's own, is the platform's engine. Before the
 * cluster formed, ClusterSettings' kept answer and nothing else.
 */
export class StoredStatefulPlacements implements StatefulPlacements {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly settings: ClusterSettings,
    private readonly swarm: SwarmServices,
  ) {}

  async remoteHolderOf(serviceId: string): Promise<PlacedServer | null> {
    if (!(await this.settings.formed())) return null;
    const service = await this.deps.store.projects.getService(serviceId);
    if (!service) return null;
    const holder = await holderOf(this.deps.store, service);
    return holder ? placedServer(holder) : null;
  }

  async serversOf(serviceId: string): Promise<PlacedServer[]> {
    if (!(await this.settings.formed())) return [];
    const service = await this.deps.store.projects.getService(serviceId);
    return service && isStateful(service) ? this.remoteServers() : [];
  }

  async remoteServers(): Promise<PlacedServer[]> {
    if (!(await this.settings.formed())) return [];
    return (await this.deps.store.servers.list()).filter((s) => s.state !== 'down').flatMap((s) => placedServer(s) ?? []);
  }

  async holderServers(): Promise<PlacedServer[]> {
    if (!(await this.settings.formed())) return [];
    const held = new Set((await this.deps.store.servers.placementsOf(null)).map((p) => p.serverId));
    return (await this.remoteServers()).filter((s) => held.has(s.id));
  }

  async isStateful(serviceId: string): Promise<boolean> {
    const service = await this.deps.store.projects.getService(serviceId);
    return !!service && isStateful(service);
  }

  async overlayOf(environmentId: string, signal?: AbortSignal): Promise<string | null> {
    if (!(await this.settings.formed())) return null;
    const name = overlayNetworkName(this.deps.config.resourcePrefix, environmentId);
    await this.swarm.ensureNetwork(name, signal);
    return name;
  }
}

/** A joined server other than the host, as the engine adapters reach it; null for the host or one not joined yet. */
export function placedServer(server: ServerRecord): PlacedServer | null {
  if (server.local || !server.swarmNodeId || !server.address) return null;
  return { id: server.id, name: server.name, nodeId: server.swarmNodeId, address: server.address };
}
