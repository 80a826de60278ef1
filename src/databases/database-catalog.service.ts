import { assertWrite, type Actor } from '../domain/access.js';
import { databaseEngineOf, type DatabaseEngine } from '../domain/database-engines.js';
import type { ServiceRecord } from '../domain/types.js';
import type { ServicePower } from '../deployments/service-power.js';
import type { ServiceDeps } from '../platform/deps.js';
import { serviceOfKind, visibleServices } from '../platform/lookup.js';
import type { ServiceView } from '../projects/project-views.js';
import type { CreateServiceInput } from '../projects/project.inputs.js';
import type { ServiceCatalog } from '../projects/service-catalog.service.js';
import type { DatabaseAdminService } from './database-admin.service.js';

export interface DatabaseCreateInput extends Omit<CreateServiceInput, 'repoFullName' | 'repoUrl' | 'containerImage'> {
  engine: DatabaseEngine;
}

/**
 * The general API's databases: database services seen across the projects a key may see, made and
 * removed through the service catalog, and stopped (the container stops, the volume stays) and
 * started again (ServicePower).
 */
export class DatabaseCatalog {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly services: ServiceCatalog,
    private readonly power: ServicePower,
    private readonly admin: DatabaseAdminService,
  ) {}

  async list(actor: Actor): Promise<ServiceView[]> {
    const databases = (await visibleServices(this.deps.store, actor)).filter((s) => databaseEngineOf(s) !== null);
    return this.services.views(databases);
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
    // Open pools point at the container's address: they go now, not when they fall idle.
    await this.power.stop(service, 'database', () => this.admin.release([service.id]));
    return this.services.view(service.id);
  }

  /** Starts the container it stopped, with its data (or deploys it again on the same volume, see ServicePower). */
  async start(actor: Actor, databaseId: string): Promise<ServiceView> {
    assertWrite(actor);
    const service = await this.databaseFor(actor, databaseId);
    await this.power.start(actor, service);
    return this.services.view(service.id);
  }

  /** The same 404 for a service that is not a database as for an unknown id. */
  private databaseFor(actor: Actor, databaseId: string): Promise<ServiceRecord> {
    return serviceOfKind(this.deps.store, actor, databaseId, 'Database', (s) => databaseEngineOf(s) !== null);
  }
}
