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
    return holder ? placed(holder) : null;
  }

  async serversOf(serviceId: string): Promise<PlacedServer[]> {
    if (!(await this.settings.formed())) return [];
    const service = await this.deps.store.projects.getService(serviceId);
    return service && isStateful(service) ? this.remoteServers() : [];
  }

  async remoteServers(): Promise<PlacedServer[]> {
    if (!(await this.settings.formed())) return [];
    return (await this.deps.store.servers.list()).filter((s) => s.state !== 'down').flatMap((s) => placed(s) ?? []);
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

function placed(server: ServerRecord): PlacedServer | null {
  if (server.local || !server.swarmNodeId || !server.address) return null;
  return { id: server.id, name: server.name, nodeId: server.swarmNodeId, address: server.address };
}
