import { assertScope, assertWrite, type Actor } from '../domain/access.js';
import {
  assertEnvironmentName,
  defaultEnvironment,
  hostnameScope,
  MAX_ENVIRONMENTS_PER_PROJECT,
  type EnvironmentRecord,
} from '../domain/environments.js';
import { ConflictError } from '../domain/errors.js';
import { keepsData } from '../domain/storage-server.js';
import { newId } from '../domain/ids.js';
import type { ProjectRecord, ServiceRecord } from '../domain/types.js';
import type { Store } from '../persistence/store.js';
import type { ServiceDeps } from '../platform/deps.js';
import { groupBy } from '../platform/group-by.js';
import { environmentFor, projectFor } from '../platform/lookup.js';
import { generatedHostname } from '../domain/environments.js';
import type { ProxyResultView } from '../routing/routing-views.js';
import type { ServiceView } from '../projects/project-views.js';
import { generatedLabels } from '../projects/service-placement.js';
import type { ServiceReader } from '../projects/service-reader.js';
import type { HostPortAllocator } from '../projects/host-port-allocator.js';
import type { ServiceRemoval } from '../projects/service-removal.js';
import type { RoutingService } from '../routing/routing.service.js';
import { assertLabelFree, copyServices } from './environment-clone.js';
import type { EnvironmentInput, EnvironmentPatchInput } from './environment.inputs.js';
import type { EnvironmentCloneView, EnvironmentView } from './environment-views.js';

/**
 * A project's environments: listed, created empty or as a copy of another (clone), renamed, and
 * deleted with their services. Access is the project's: its scope and the key's access level.
 */
export class EnvironmentService {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly reader: ServiceReader,
    private readonly removal: ServiceRemoval,
    private readonly routing: RoutingService,
    private readonly hostPorts: HostPortAllocator,
  ) {}

  async list(actor: Actor, projectId: string): Promise<EnvironmentView[]> {
    const project = await projectFor(this.deps.store, actor, projectId);
    return this.present(await this.deps.store.environments.list([project.id]));
  }

  async get(actor: Actor, environmentId: string): Promise<EnvironmentView> {
    const environment = await environmentFor(this.deps.store, actor, environmentId);
    return this.view(environment);
  }

  async create(actor: Actor, projectId: string, input: EnvironmentInput): Promise<EnvironmentView> {
    assertWrite(actor);
    const project = await projectFor(this.deps.store, actor, projectId);
    const name = assertEnvironmentName(input.name);
    const environment = await this.deps.store.transaction((tx) => this.insert(tx, project, name));
    return this.view(environment);
  }

  /**
   * A new environment holding a copy of every service of this one (see copyServices), in one
   * transaction: a staging or preview copy in one call, deployed when the caller deploys it.
   */
  async clone(actor: Actor, environmentId: string, input: EnvironmentInput): Promise<EnvironmentCloneView> {
    assertWrite(actor);
    const source = await environmentFor(this.deps.store, actor, environmentId);
    const name = assertEnvironmentName(input.name);
    const project = (await this.deps.store.projects.get(source.projectId))!;
    const services = await this.deps.store.projects.listServicesIn([source.id]);
    // The copies are new services: databases and storage instances among them need what creating one needs.
    if (services.some(keepsData)) assertScope(actor, 'db:manage');
    const { environment, copies, storageCredentials } = await this.deps.store.transaction(async (tx) => {
      const environment = await this.insert(tx, project, name);
      const copied = await copyServices(
        this.deps,
        this.hostPorts,
        tx,
        await tx.projects.listServicesIn([source.id]),
        { environment, scope: hostnameScope(project.slug, environment) },
        await generatedLabels(tx),
      );
      return { environment, ...copied };
    });
    return { environment: await this.view(environment), services: await this.reader.views(copies), storageCredentials };
  }

  /**
   * A clone the platform makes for itself (a pull request's preview): `services` of `source` copied into a
   * new environment `name` as `clone` copies them, then `adjust` runs in the same transaction (the
   * preview's own settings and variables). Nothing of it exists if any step throws.
   */
  async cloneServices<T>(
    project: ProjectRecord,
    name: string,
    services: ServiceRecord[],
    adjust: (tx: Store, environment: EnvironmentRecord, copies: Map<string, ServiceRecord>) => Promise<T>,
  ): Promise<{ environment: EnvironmentRecord; copies: Map<string, ServiceRecord>; adjusted: T }> {
    return this.deps.store.transaction(async (tx) => {
      const environment = await this.insert(tx, project, assertEnvironmentName(name));
      const { copies } = await copyServices(
        this.deps,
        this.hostPorts,
        tx,
        services,
        { environment, scope: hostnameScope(project.slug, environment) },
        await generatedLabels(tx),
      );
      const byParent = new Map(services.map((parent, i) => [parent.id, copies[i]!]));
      return { environment, copies: byParent, adjusted: await adjust(tx, environment, byParent) };
    });
  }

  /** Deletes an environment the platform made (a preview's), as delete does, without an actor. */
  removeSystemEnvironment(environment: EnvironmentRecord): Promise<ProxyResultView> {
    return this.removal.removeEnvironment(environment, async (store) => {
      if ((await store.environments.list([environment.projectId])).length <= 1)
        throw new ConflictError('This is the last environment of the project');
    });
  }

  /**
   * Renames; generated hostnames follow the name (the first environment's have none of it), and a
   * database's public hostname that was the generated one moves with them. Answers the proxy's reload.
   */
  async update(
    actor: Actor,
    environmentId: string,
    input: EnvironmentPatchInput,
  ): Promise<{ environment: EnvironmentView; proxy: ProxyResultView }> {
    assertWrite(actor);
    const environment = await environmentFor(this.deps.store, actor, environmentId);
    if (input.name === undefined || input.name === environment.name) {
      return { environment: await this.view(environment), proxy: { ok: true, detail: 'routes unchanged' } };
    }
    const name = assertEnvironmentName(input.name);
    const project = (await this.deps.store.projects.get(environment.projectId))!;
    await this.deps.store.transaction(async (tx) => {
      const now = this.deps.clock.now();
      await tx.projects.update(project.id, { updatedAt: now });
      await assertNameFree(tx, project.id, name);
      const renamed = { ...environment, name };
      const [oldScope, newScope] = [hostnameScope(project.slug, environment), hostnameScope(project.slug, renamed)];
      const labels = await generatedLabels(tx);
      for (const service of await tx.projects.listServicesIn([environment.id])) {
        assertLabelFree(service, newScope, labels, environment.id);
        const source = service.source;
        const rootDomain = this.deps.config.rootDomain;
        if (source.kind === 'database' && source.publicHostname === generatedHostname(service, oldScope, rootDomain)) {
          await tx.projects.updateDatabaseSource(service.id, { publicHostname: generatedHostname(service, newScope, rootDomain) });
        }
      }
      await tx.environments.update(environment.id, { name, updatedAt: now });
    });
    const proxy = await this.routing.reload();
    return { environment: await this.get(actor, environment.id), proxy };
  }

  /** With its services, as deleting each of them does; a project keeps at least one environment. */
  async delete(actor: Actor, environmentId: string): Promise<ProxyResultView> {
    assertWrite(actor);
    const environment = await environmentFor(this.deps.store, actor, environmentId);
    const stillHasAnother = async (store: Store) => {
      if ((await store.environments.list([environment.projectId])).length <= 1)
        throw new ConflictError('This is the last environment of the project: a project keeps at least one (delete the project instead)');
    };
    await stillHasAnother(this.deps.store);
    return this.removal.removeEnvironment(environment, stillHasAnother);
  }

  /** The services (apps) of the environment, in creation order. */
  async listApps(actor: Actor, environmentId: string): Promise<ServiceView[]> {
    const environment = await environmentFor(this.deps.store, actor, environmentId);
    return this.reader.views(await this.deps.store.projects.listServicesIn([environment.id]));
  }

  /** Within the caller's transaction, after the project row is written: creates of one project take turns for the limit. */
  private async insert(tx: Store, project: ProjectRecord, name: string): Promise<EnvironmentRecord> {
    const now = this.deps.clock.now();
    await tx.projects.update(project.id, { updatedAt: now });
    if ((await tx.environments.list([project.id])).length >= MAX_ENVIRONMENTS_PER_PROJECT)
      throw new ConflictError(`A project may have at most ${MAX_ENVIRONMENTS_PER_PROJECT} environments`);
    await assertNameFree(tx, project.id, name);
    const environment: EnvironmentRecord = { id: newId(), projectId: project.id, name, createdAt: now, updatedAt: now };
    await tx.environments.insert(environment);
    return environment;
  }

  private async view(environment: EnvironmentRecord): Promise<EnvironmentView> {
    const all = await this.present(await this.deps.store.environments.list([environment.projectId]));
    return all.find((e) => e.id === environment.id)!;
  }

  private async present(environments: EnvironmentRecord[]): Promise<EnvironmentView[]> {
    const services = groupBy(await this.deps.store.projects.listServicesIn(environments.map((e) => e.id)), (s) => s.environmentId);
    const byProject = groupBy(environments, (e) => e.projectId);
    const defaults = new Set([...byProject.values()].map((list) => defaultEnvironment(list)!.id));
    return environments.map((e) => ({
      id: e.id,
      projectId: e.projectId,
      name: e.name,
      isDefault: defaults.has(e.id),
      serviceCount: services.get(e.id)?.length ?? 0,
      createdAt: e.createdAt.toISOString(),
      updatedAt: e.updatedAt.toISOString(),
    }));
  }
}

async function assertNameFree(store: Store, projectId: string, name: string): Promise<void> {
  if (await store.environments.getByName(projectId, name))
    throw new ConflictError(`This project already has an environment named "${name}"`, { field: 'name' });
}
