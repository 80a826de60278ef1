import type { Actor } from '../domain/access.js';
import { ConflictError, NotRunningError } from '../domain/errors.js';
import type { ServiceRecord } from '../domain/types.js';
import type { ServiceDeps } from '../platform/deps.js';
import { LABELS, type ContainerEngine } from './container-engine.port.js';
import type { CurrentContainers } from './current-containers.js';
import type { DeploymentService } from './deployment.service.js';

/**
 * Stopping and starting a service that keeps its data in a volume (a database, a storage instance):
 * stop stops the current container and keeps it and its volume (status `stopped`); start starts that
 * container again. The callers say what the service is called and what must let go before it stops.
 */
export class ServicePower {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly deployments: DeploymentService,
    private readonly runtime: { engine: ContainerEngine; current: CurrentContainers } | null,
  ) {}

  /** `noun`: "database", "storage instance"; `beforeStop`: after the status is `stopped`, before the container stops. */
  async stop(service: ServiceRecord, noun: string, beforeStop?: () => Promise<void>): Promise<void> {
    if (service.status === 'stopped') return;
    if (service.status === 'deploying') throw new ConflictError(`The ${noun} is being deployed: stop it once the deployment ends`);
    const current = this.runtime ? await this.runtime.current.currentOf(service) : null;
    if (!this.runtime || !current) throw new NotRunningError(`The ${noun} "${service.name}" is not running`, { serviceId: service.id });
    // Stopped first in the table: calls that need it refuse at once instead of meeting a server shutting down.
    await this.deps.store.projects.updateService(service.id, { status: 'stopped', reachable: false, updatedAt: this.deps.clock.now() });
    await beforeStop?.();
    try {
      await this.runtime.engine.stopContainer(current.id, this.deps.config.deploy.stopGraceSeconds);
    } catch (error) {
      await this.deps.store.projects.updateService(service.id, { status: service.status, reachable: service.reachable });
      throw error;
    }
  }

  /**
   * Starts the container it stopped, with its data. When that container is gone (the platform
   * removed it as a stray after a restart), a deployment runs the service again on the same volume.
   */
  async start(actor: Actor, service: ServiceRecord): Promise<void> {
    if (service.status !== 'stopped') return;
    if (!this.runtime) throw new NotRunningError('No container engine is connected', { serviceId: service.id });
    const latest = (await this.deps.store.deployments.list(service.id, 20)).find((d) => d.status === 'succeeded');
    const container = latest
      ? (await this.runtime.current.ofService(service.id)).find((c) => c.labels[LABELS.deployment] === latest.id)
      : undefined;
    // A container that will not start (or went since it was listed) is replaced by a deployment on the same volume.
    const started = container
      ? await this.runtime.engine.startContainer(container.id).then(
          () => true,
          () => false,
        )
      : false;
    if (started) {
      await this.deps.store.projects.updateService(service.id, { status: 'active', updatedAt: this.deps.clock.now() });
    } else {
      await this.deps.store.projects.updateService(service.id, { status: 'idle', updatedAt: this.deps.clock.now() });
      await this.deployments.create(actor, service.id);
    }
  }
}
