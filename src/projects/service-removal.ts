import type { ProjectRecord, ServiceRecord } from '../domain/types.js';
import type { ServiceDeps } from '../platform/deps.js';
import type { ProxyResultView } from '../platform/views.js';
import type { RoutingService } from '../routing/routing.service.js';
import { sharedEnvKey } from '../env/shared-env.js';

/** What runs the services' containers: the deploy runner, when there is a runtime. */
export interface ServiceRuntime {
  /** Stops their deployments, so nothing writes for rows about to go. */
  stopDeploymentsOf(serviceIds: string[]): Promise<void>;
  /** Removes a service's containers, images, ports and volumes. */
  removeService(service: ServiceRecord): Promise<void>;
  removeProjectNetwork(projectId: string): Promise<void>;
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
 * Deleting a project or a service: its deployments are stopped, its rows and everything they own
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

  async removeProject(project: ProjectRecord): Promise<ProxyResultView> {
    const services = await this.deps.store.projects.listServices([project.id]);
    await this.options.assertRemovable?.(services);
    await this.before(services);
    await this.deps.store.transaction(async (tx) => {
      await deleteServiceRows(
        tx,
        (await tx.projects.listServices([project.id])).map((s) => s.id),
      );
      await tx.projects.delete(project.id);
      await tx.settings.delete(sharedEnvKey(project.id));
    });
    await this.after(services);
    return this.routing.reload();
  }

  async removeService(service: ServiceRecord): Promise<ProxyResultView> {
    await this.options.assertRemovable?.([service]);
    await this.before([service]);
    await this.deps.store.transaction((tx) => deleteServiceRows(tx, [service.id]));
    await this.after([service]);
    return this.routing.reload();
  }

  private async before(removed: ServiceRecord[]): Promise<void> {
    if (this.runtime) await this.runtime.stopDeploymentsOf(removed.map((s) => s.id));
    await this.options.beforeServicesRemoved?.(removed);
  }

  /** The records are gone by now: a runtime leftover is logged (and collected later), never a failed delete. */
  private async after(removed: ServiceRecord[]): Promise<void> {
    const { runtime, options } = this;
    if (runtime) {
      for (const service of removed)
        await runtime
          .removeService(service)
          .catch((error: Error) => options.log?.('service cleanup incomplete', { serviceId: service.id, error: error.message }));
      for (const projectId of new Set(removed.map((s) => s.projectId))) {
        await runtime
          .removeProjectNetwork(projectId)
          .catch((error: Error) => options.log?.('project network not removed', { projectId, error: error.message }));
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
  await tx.projects.deleteServices(serviceIds);
}
