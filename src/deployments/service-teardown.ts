import { spoolVolume } from '../domain/wal-spool.js';
import { keepsData } from '../domain/storage-server.js';
import type { ServiceRecord } from '../domain/types.js';
import type { ServiceDeps } from '../platform/deps.js';
import type { RoutingService } from '../routing/routing.service.js';
import type { TrafficSlots } from './traffic-slots.js';
import { LABELS } from './container-engine.port.js';
import { dockerVolumeName } from '../domain/volume-names.js';
import { resourceNames, type RuntimeDeps } from './runtime-deps.js';

/**
 * What deleting a service or a project removes at runtime: containers, images, host port, traffic
 * slots, a database's or storage instance's data volume (only here: no deployment ever removes it), the environment's network.
 * It is the runtime side of a removal (ServiceRemoval's ServiceRuntime).
 */
export class ServiceTeardown {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly runtime: RuntimeDeps,
    private readonly routing: RoutingService,
    private readonly slots: TrafficSlots | null,
    /** Ends the services' deployments under way and waits until they no longer write (the deploy runner). */
    private readonly endDeployments: (serviceIds: string[]) => Promise<void>,
  ) {}

  /** Their deployments under way end first, so nothing writes for rows about to go. */
  stopDeploymentsOf(serviceIds: string[]): Promise<void> {
    return this.endDeployments(serviceIds);
  }

  async removeService(service: ServiceRecord): Promise<void> {
    await this.stopDeploymentsOf([service.id]);
    this.routing.setUpstream(service.id, null);
    // On the cluster its Swarm service goes (Swarm stops the tasks on every node).
    const swarm = this.runtime.swarm?.() ?? null;
    if (swarm && !keepsData(service) && (await swarm.active().catch(() => false))) await swarm.remove(service.id);
    await this.runtime.forwarder.set(service.hostPort, null);
    const containers = await this.runtime.engine.listContainers({ key: LABELS.service, value: service.id });
    await this.slots?.close(containers.map((c) => c.labels[LABELS.slot]).filter((ip): ip is string => !!ip)).catch(() => {});
    for (const container of containers) {
      await this.runtime.engine.stopAndRemove(container.id, 0);
    }
    const names = resourceNames(this.deps.config.resourcePrefix, service.id, 'x', service.environmentId);
    for (const tag of await this.runtime.engine.listImageTags(names.imagePrefix)) await this.runtime.engine.removeImage(tag);
    if (keepsData(service)) await this.runtime.engine.removeVolume(names.volume);
    // The volumes in-place point-in-time restores filled (the one it runs on since, or one a failure left) start with its name.
    if (keepsData(service))
      for (const volume of (await this.runtime.engine.listVolumes?.(`${names.volume}-pitr-`)) ?? [])
        await this.runtime.engine.removeVolume(volume);
    // Its WAL spool (point-in-time recovery) goes too, when the engine lists one (most databases never had one).
    const spool = spoolVolume(this.deps.config.resourcePrefix, service.id);
    if (keepsData(service))
      for (const volume of (await this.runtime.engine.listVolumes?.(spool)) ?? [])
        if (volume === spool) await this.runtime.engine.removeVolume(volume);
    // Its named volumes go with it (docs/decisions.md); their rows went with the service's.
    for (const volume of (await this.runtime.engine.listVolumes?.(dockerVolumeName(this.deps.config.resourcePrefix, service.id, ''))) ?? [])
      await this.runtime.engine.removeVolume(volume);
  }

  /** An environment's network; Docker keeps one that a container still uses. */
  async removeNetwork(environmentId: string): Promise<void> {
    await this.runtime.engine.removeNetwork(resourceNames(this.deps.config.resourcePrefix, 'x', 'x', environmentId).network);
  }
}
