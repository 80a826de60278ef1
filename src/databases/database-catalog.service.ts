import { assertWrite, type Actor } from '../domain/access.js';
import { databaseEngineOf, type DatabaseEngine } from '../domain/database-engines.js';
import { ConflictError, NotFoundError, NotRunningError } from '../domain/errors.js';
import type { ServiceRecord } from '../domain/types.js';
import { LABELS, type ContainerEngine } from '../deployments/container-engine.port.js';
import type { CurrentContainers } from '../deployments/current-containers.js';
import type { DeploymentService } from '../deployments/deployment.service.js';
import type { ServiceDeps } from '../platform/deps.js';
import { serviceFor } from '../platform/lookup.js';
import type { ServiceView } from '../platform/views.js';
import type { CreateServiceInput } from '../projects/project.inputs.js';
import type { ServiceCatalog } from '../projects/service-catalog.service.js';
import type { DatabaseAdminService } from './database-admin.service.js';

export interface DatabaseCreateInput extends Omit<CreateServiceInput, 'repoFullName' | 'repoUrl' | 'containerImage'> {
  engine: DatabaseEngine;
}

/**
 * The general API's databases: database services seen across the projects a key may see, made and
 * removed through the service catalog, and stopped (the container stops, the volume stays) and
 * started again.
 */
export class DatabaseCatalog {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly services: ServiceCatalog,
    private readonly deployments: DeploymentService,
    private readonly admin: DatabaseAdminService,
    private readonly runtime: { engine: ContainerEngine; current: CurrentContainers } | null,
  ) {}

  async list(actor: Actor): Promise<ServiceView[]> {
    const all = await this.deps.store.projects.listServices(
      actor.projectIds ? [...actor.projectIds] : (await this.deps.store.projects.list(null)).map((p) => p.id),
    );
    const databases = all.filter((s) => databaseEngineOf(s) !== null);
    return Promise.all(databases.map((s) => this.services.view(s.id)));
  }

  async create(actor: Actor, projectId: string, input: DatabaseCreateInput): Promise<ServiceView> {
    const { engine, ...rest } = input;
    return this.services.create(actor, projectId, { ...rest, repoUrl: 'database', repoFullName: `database:${engine}` });
  }

  async get(actor: Actor, databaseId: string): Promise<ServiceView> {
    const service = await this.databaseFor(actor, databaseId);
    return this.services.view(service.id);
  }

  async delete(actor: Actor, databaseId: string) {
    assertWrite(actor);
    const service = await this.databaseFor(actor, databaseId);
    return this.services.delete(actor, service.id);
  }

  /** Stops the current container and keeps it and its volume; admin calls answer 409 not_running until started. */
  async stop(actor: Actor, databaseId: string): Promise<ServiceView> {
    assertWrite(actor);
    const service = await this.databaseFor(actor, databaseId);
    if (service.status === 'stopped') return this.services.view(service.id);
    if (service.status === 'deploying') throw new ConflictError('The database is being deployed: stop it once the deployment ends');
    const current = this.runtime ? await this.runtime.current.currentOf(service) : null;
    if (!this.runtime || !current) throw new NotRunningError(`The database "${service.name}" is not running`, { serviceId: service.id });
    // Stopped first in the table: admin calls refuse at once instead of meeting a server shutting down.
    await this.deps.store.projects.updateService(service.id, { status: 'stopped', reachable: false, updatedAt: this.deps.clock.now() });
    // Open pools point at the container's address: they go now, not when they fall idle.
    await this.admin.release([service.id]);
    try {
      await this.runtime.engine.stopContainer(current.id, this.deps.config.deploy.stopGraceSeconds);
    } catch (error) {
      await this.deps.store.projects.updateService(service.id, { status: service.status, reachable: service.reachable });
      throw error;
    }
    return this.services.view(service.id);
  }

  /**
   * Starts the container it stopped, with its data. When that container is gone (the platform
   * removed it as a stray after a restart), a deployment runs the database again on the same volume.
   */
  async start(actor: Actor, databaseId: string): Promise<ServiceView> {
    assertWrite(actor);
    const service = await this.databaseFor(actor, databaseId);
    if (service.status !== 'stopped') return this.services.view(service.id);
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
    return this.services.view(service.id);
  }

  /** The same 404 for a service that is not a database as for an unknown id. */
  private async databaseFor(actor: Actor, databaseId: string): Promise<ServiceRecord> {
    const service = await serviceFor(this.deps.store, actor, databaseId).catch((error: unknown) => {
      if (error instanceof NotFoundError) throw new NotFoundError('Database', databaseId);
      throw error;
    });
    if (!databaseEngineOf(service)) throw new NotFoundError('Database', databaseId);
    return service;
  }
}
