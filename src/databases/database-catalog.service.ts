import { assertWrite, type Actor } from '../domain/access.js';
import { databaseEngineOf, type DatabaseEngine } from '../domain/database-engines.js';
import type { ServiceRecord } from '../domain/types.js';
import type { ServicePower } from '../deployments/service-power.js';
import type { ServiceDeps } from '../platform/deps.js';
import { serviceOfKind, visibleServices } from '../platform/lookup.js';
import type { ServiceView } from '../projects/project-views.js';
import type { CreateServiceInput } from '../projects/project.inputs.js';
import type { ServiceCreation } from '../projects/service-creation.js';
import type { ServiceReader } from '../projects/service-reader.js';
import type { ServiceRemoval } from '../projects/service-removal.js';
import type { DatabaseAdminService } from './database-admin.service.js';

export interface DatabaseCreateInput extends Omit<CreateServiceInput, 'repoFullName' | 'repoUrl' | 'containerImage'> {
  engine: DatabaseEngine;
}

/**
 * The general API's databases: database services seen across the projects a key may see, made and
 * removed as services are (ServiceCreation, ServiceRemoval), and stopped (the container stops, the volume stays) and
 * started again (ServicePower).
 */
export class DatabaseCatalog {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly creation: ServiceCreation,
    private readonly reader: ServiceReader,
    private readonly removal: ServiceRemoval,
    private readonly power: ServicePower,
    private readonly admin: DatabaseAdminService,
  ) {}

  async list(actor: Actor): Promise<ServiceView[]> {
    const databases = (await visibleServices(this.deps.store, actor)).filter((s) => databaseEngineOf(s) !== null);
    return this.reader.views(databases);
  }

  async create(actor: Actor, projectId: string, input: DatabaseCreateInput): Promise<ServiceView> {
    const { engine, ...rest } = input;
    return this.creation.create(actor, projectId, { ...rest, repoUrl: 'database', repoFullName: `database:${engine}` });
  }

  async get(actor: Actor, databaseId: string): Promise<ServiceView> {
    const service = await this.databaseFor(actor, databaseId);
    return this.reader.view(service.id);
  }

  async delete(actor: Actor, databaseId: string) {
    assertWrite(actor);
    const service = await this.databaseFor(actor, databaseId);
    return this.removal.deleteService(actor, service.id);
  }

  /** Stops the current container and keeps it and its volume; admin calls answer 409 not_running until started. */
  async stop(actor: Actor, databaseId: string): Promise<ServiceView> {
    assertWrite(actor);
    const service = await this.databaseFor(actor, databaseId);
    // Open pools point at the container's address: they go now, not when they fall idle.
    await this.power.stop(service, 'database', () => this.admin.release([service.id]));
    return this.reader.view(service.id);
  }

  /** Starts the container it stopped, with its data (or deploys it again on the same volume, see ServicePower). */
  async start(actor: Actor, databaseId: string): Promise<ServiceView> {
    assertWrite(actor);
    const service = await this.databaseFor(actor, databaseId);
    await this.power.start(actor, service);
    return this.reader.view(service.id);
  }

  /** The same 404 for a service that is not a database as for an unknown id. */
  private databaseFor(actor: Actor, databaseId: string): Promise<ServiceRecord> {
    return serviceOfKind(this.deps.store, actor, databaseId, 'Database', (s) => databaseEngineOf(s) !== null);
  }
}
