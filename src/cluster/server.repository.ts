import { RegistryImage, Server, ServicePlacement, type ServicePlacementRow } from '../persistence/cluster-entities.js';
import { Repository, type Patch } from '../persistence/repository.js';
import type { RegistryImageRecord, ServerRecord, ServerState, ServicePlacementRecord } from './server.records.js';

/** Servers, where stateful services are pinned, and the images pushed to the cluster's registry. */
export class ServerRepository extends Repository {
  insert(server: ServerRecord): Promise<ServerRecord> {
    return this.insertRow(Server, server, 'server');
  }
  async get(id: string): Promise<ServerRecord | null> {
    return parsed(await this.row(Server, { id }));
  }
  /** Oldest first: the local server, then the nodes in the order they were added. */
  async list(): Promise<ServerRecord[]> {
    return (await this.rows(Server, {}, { local: 'desc', createdAt: 'asc', id: 'asc' })).map((row) => parsed(row)!);
  }
  async local(): Promise<ServerRecord | null> {
    return parsed(await this.row(Server, { local: true }));
  }
  async byTokenHash(hash: string): Promise<ServerRecord | null> {
    return parsed(await this.row(Server, { joinTokenHash: hash }));
  }
  update(id: string, patch: Patch<ServerRecord>): Promise<void> {
    return this.updateRow(Server, id, patch, 'server');
  }
  /** The compare-and-set of a join: only one exchange of a token wins. */
  async useToken(id: string, hash: string, now: Date): Promise<boolean> {
    this.written(Server);
    return (await this.fork().nativeUpdate(Server, { id, joinTokenHash: hash, joinUsedAt: null }, { joinUsedAt: now })) > 0;
  }
  /**
   * A state change, made only if the row still holds `from`: of several processes watching the
   * swarm, one records the change (and its event).
   */
  async moveState(id: string, from: ServerState, to: ServerState, now: Date): Promise<boolean> {
    this.written(Server);
    return (await this.fork().nativeUpdate(Server, { id, state: from }, { state: to, stateChangedAt: now, updatedAt: now })) > 0;
  }
  /**
   * Forgets the address of earlier attempts to join from it that never became a node (their token
   * spent, the machine never joined): the address is the newest attempt's, which the monitor links.
   */
  async releaseAddress(address: string, keepId: string): Promise<void> {
    this.written(Server);
    await this.fork().nativeUpdate(Server, { address, swarmNodeId: null, local: false, id: { $ne: keepId } }, { address: null });
  }
  async remove(id: string): Promise<void> {
    await this.deleteRows(ServicePlacement, { serverId: id });
    await this.deleteRows(Server, { id });
  }

  // Placements: written by the runtime that pins a stateful service to a node.
  placementsOn(serverId: string): Promise<ServicePlacementRecord[]> {
    return this.rows(ServicePlacement, { serverId });
  }
  placementOf(serviceId: string): Promise<ServicePlacementRecord | null> {
    return this.row(ServicePlacement, { serviceId });
  }
  /** The placements of these services (every one with null: a list of all services would be a long IN list). */
  placementsOf(serviceIds: string[] | null): Promise<ServicePlacementRecord[]> {
    if (serviceIds?.length === 0) return Promise.resolve([]);
    return this.rows(ServicePlacement, serviceIds ? { serviceId: { $in: serviceIds } } : {});
  }
  async place(serviceId: string, serverId: string, now: Date): Promise<void> {
    this.written(ServicePlacement);
    await this.fork().upsert(ServicePlacement, { serviceId, serverId, updatedAt: now } as ServicePlacementRow);
  }
  unplace(serviceIds: string[]): Promise<void> {
    if (serviceIds.length === 0) return Promise.resolve();
    return this.deleteRows(ServicePlacement, { serviceId: { $in: serviceIds } });
  }

  // The registry's images.
  recordImage(image: RegistryImageRecord): Promise<RegistryImageRecord> {
    return this.insertRow(RegistryImage, image, 'registry image');
  }
  image(deploymentId: string): Promise<RegistryImageRecord | null> {
    return this.row(RegistryImage, { deploymentId });
  }
  images(serviceId?: string): Promise<RegistryImageRecord[]> {
    return this.rows(RegistryImage, serviceId ? { serviceId } : {}, { pushedAt: 'asc' });
  }
  forgetImages(deploymentIds: string[]): Promise<void> {
    if (deploymentIds.length === 0) return Promise.resolve();
    return this.deleteRows(RegistryImage, { deploymentId: { $in: deploymentIds } });
  }
}

/** Rows come back raw from the query builder: SQLite hands the JSON column back as text, and booleans as 0/1. */
function parsed(row: ServerRecord | null): ServerRecord | null {
  if (!row) return null;
  return {
    ...row,
    labels: typeof row.labels === 'string' ? (JSON.parse(row.labels) as Record<string, string>) : row.labels,
    local: Boolean(row.local),
  };
}
