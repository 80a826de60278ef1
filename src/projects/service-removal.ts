import { assertScope, assertWrite, type Actor } from '../domain/access.js';
import type { ProjectRecord, ServiceRecord } from '../domain/types.js';
import { keepsData } from '../domain/storage-server.js';
import { serviceFor } from '../platform/lookup.js';
import type { EnvironmentRecord } from '../domain/environments.js';
import type { ServiceDeps } from '../platform/deps.js';
import type { ProxyResultView } from '../routing/routing-views.js';
import type { RoutingService } from '../routing/routing.service.js';
import { sharedEnvKey } from '../env/shared-env.js';

/** What runs the services' containers: the deploy runner, when there is a runtime. */
export interface ServiceRuntime {
  /** Stops their deployments, so nothing writes for rows about to go. */
  stopDeploymentsOf(serviceIds: string[]): Promise<void>;
  /** Removes a service's containers, images, ports and volumes. */
  removeService(service: ServiceRecord): Promise<void>;
  /** An environment's network (Docker keeps one a container still uses). */
  removeNetwork(environmentId: string): Promise<void>;
}

export interface ServiceRemovalOptions {
  /** Called first: throws (a ConflictError) when something that stays needs one of the services. */
  assertRemovable?: ((services: ServiceRecord[]) => Promise<void>) | undefined;
  /** Called before the services' rows go: work that writes rows of theirs (imports) stops here. */
  beforeServicesRemoved?: ((services: ServiceRecord[]) => Promise<void>) | undefined;
  /** Called after services (of a deleted project, or one deleted service) are gone from the database. */
  onServicesRemoved?: ((services: ServiceRecord[]) => Promise<void>) | undefined;
  log?: ((message: string, extra?: Record<string, unknown>) => void) | undefined;
}

/**
 * Deleting a project, an environment or a service: its deployments are stopped, its rows and everything they own
 * (variables, domains, deployments and their logs) go in one transaction, then the runtime removes
 * what it ran and the routes are reloaded.
 */
export class ServiceRemoval {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly routing: RoutingService,
    private readonly runtime: ServiceRuntime | null,
    private readonly options: ServiceRemovalOptions = {},
  ) {}

  /** `DELETE /api/services/{serviceId}` and its doors: a database or storage instance needs db:manage too. */
  async deleteService(actor: Actor, serviceId: string): Promise<ProxyResultView> {
    assertWrite(actor);
    const service = await serviceFor(this.deps.store, actor, serviceId);
    if (keepsData(service)) assertScope(actor, 'db:manage');
    return this.removeService(service);
  }

  async removeProject(project: ProjectRecord): Promise<ProxyResultView> {
    const services = await this.deps.store.projects.listServices([project.id]);
    const environments = await this.deps.store.environments.list([project.id]);
    await this.before(services);
    await this.deps.store.transaction(async (tx) => {
      await deleteServiceRows(
        tx,
        (await tx.projects.listServices([project.id])).map((s) => s.id),
      );
      await tx.environments.deleteOfProject(project.id);
      await tx.projects.delete(project.id);
      await tx.settings.delete(sharedEnvKey(project.id));
      await tx.gitHooks.deleteWebhook(project.id);
      await tx.previews.deleteOfProject(project.id);
    });
    await this.after(
      services,
      environments.map((e) => e.id),
    );
    return this.routing.reload();
  }

  /**
   * An environment with its services. `stillHasAnother` runs in the transaction, after the project
   * row is written (so two deletes in one project take turns): it throws to keep the last one.
   */
  async removeEnvironment(
    environment: EnvironmentRecord,
    stillHasAnother: (tx: ServiceDeps['store']) => Promise<void>,
  ): Promise<ProxyResultView> {
    const services = await this.deps.store.projects.listServicesIn([environment.id]);
    await this.before(services);
    await this.deps.store.transaction(async (tx) => {
      await tx.projects.update(environment.projectId, { updatedAt: this.deps.clock.now() });
      await stillHasAnother(tx);
      await deleteServiceRows(
        tx,
        (await tx.projects.listServicesIn([environment.id])).map((s) => s.id),
      );
      await tx.environments.delete(environment.id);
    });
    await this.after(services, [environment.id]);
    return this.routing.reload();
  }

  async removeService(service: ServiceRecord): Promise<ProxyResultView> {
    await this.before([service]);
    await this.deps.store.transaction((tx) => deleteServiceRows(tx, [service.id]));
    await this.after([service], [service.environmentId]);
    return this.routing.reload();
  }

  /** Refusals first (a storage instance that other databases' backups still need), then nothing runs for them. */
  private async before(removed: ServiceRecord[]): Promise<void> {
    await this.options.assertRemovable?.(removed);
    if (this.runtime) await this.runtime.stopDeploymentsOf(removed.map((s) => s.id));
    await this.options.beforeServicesRemoved?.(removed);
  }

  /** The records are gone by now: a runtime leftover is logged (and collected later), never a failed delete. */
  private async after(removed: ServiceRecord[], environmentIds: string[]): Promise<void> {
    const { runtime, options } = this;
    if (runtime) {
      for (const service of removed)
        await runtime
          .removeService(service)
          .catch((error: Error) => options.log?.('service cleanup incomplete', { serviceId: service.id, error: error.message }));
      for (const environmentId of new Set(environmentIds)) {
        await runtime
          .removeNetwork(environmentId)
          .catch((error: Error) => options.log?.('environment network not removed', { environmentId, error: error.message }));
      }
    }
    await options.onServicesRemoved?.(removed);
  }
}

async function deleteServiceRows(tx: ServiceDeps['store'], serviceIds: string[]): Promise<void> {
  await tx.deployments.deleteOfServices(serviceIds);
  await tx.imports.deleteOfServices(serviceIds);
  await tx.env.deleteOfServices(serviceIds);
  await tx.domains.deleteOfServices(serviceIds);
  await tx.metrics.deleteOfServices(serviceIds);
  await tx.volumes.deleteOfServices(serviceIds);
  // Where a database's volume was: a removed server's check must not name a service that is gone.
  await tx.servers.unplace(serviceIds);
  await tx.gitHooks.deletePolls(serviceIds);
  await tx.gitHooks.deleteStatusesOfServices(serviceIds);
  await tx.projects.deleteServices(serviceIds);
}
