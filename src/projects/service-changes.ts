import { ConflictError, ValidationError } from '../domain/errors.js';
import { uniqueSlug } from '../domain/slug.js';
import type { ServiceRecord } from '../domain/types.js';
import { assertWrite, type Actor } from '../domain/access.js';
import { hostnameScope } from '../domain/environments.js';
import type { ServiceDeps } from '../platform/deps.js';
import { projectFor, serviceFor } from '../platform/lookup.js';
import type { RoutingService } from '../routing/routing.service.js';
import type { ProxyResultView } from '../routing/routing-views.js';
import type { ProjectService } from './project.service.js';
import type { UpdateServiceInput } from './project.inputs.js';
import type { ProjectView, ServiceView } from './project-views.js';
import { blankToNull, cleanBranch, relativePath } from './service-fields.js';
import { deployTriggersPatch } from '../git-hooks/trigger-settings.js';
import { defaultEnvironmentOf, slugsTakenIn } from './service-placement.js';
import type { ServiceReader } from './service-reader.js';
import { scaleAfter, type CapacityOf } from './service-scale-rules.js';
import { placementAfter } from './service-placement-rules.js';
import { assertVolumesFit } from '../volumes/volume.inputs.js';
import { ENGINE_SPECS, databaseEngineOf } from '../domain/database-engines.js';
import { STORAGE_SERVER } from '../domain/storage-server.js';

/** Changing a service: how it is built and run, and the project it belongs to. */
export class ServiceChanges {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly reader: ServiceReader,
    private readonly projects: ProjectService,
    private readonly routing: RoutingService,
    /** The servers' free room: a reservation no server can hold is refused at once. */
    private readonly capacity?: CapacityOf,
    /** A new number of replicas: the runtime starts or stops replicas now rather than at its next pass. */
    private readonly onScaled?: () => Promise<void>,
  ) {}

  async update(actor: Actor, serviceId: string, input: UpdateServiceInput): Promise<ServiceView> {
    assertWrite(actor);
    const service = await serviceFor(this.deps.store, actor, serviceId);
    const patch: Partial<ServiceRecord> = { updatedAt: this.deps.clock.now() };
    if (input.branch !== undefined) patch.branch = cleanBranch(input.branch);
    if (input.rootDir !== undefined) patch.rootDir = relativePath(input.rootDir, 'rootDir');
    if (input.installCommand !== undefined) patch.installCommand = blankToNull(input.installCommand);
    if (input.buildCommand !== undefined) patch.buildCommand = blankToNull(input.buildCommand);
    if (input.startCommand !== undefined) patch.startCommand = blankToNull(input.startCommand);
    if (input.staticOutput !== undefined) patch.staticOutput = relativePath(input.staticOutput, 'staticOutput');
    if (input.buildMethod !== undefined) patch.buildMethod = input.buildMethod;
    if (input.dockerfilePath !== undefined) patch.dockerfilePath = relativePath(input.dockerfilePath, 'dockerfilePath');
    if (input.internalPort !== undefined) patch.internalPort = input.internalPort;
    if (input.gitToken !== undefined) patch.gitTokenEncrypted = input.gitToken ? this.deps.secrets.encrypt(input.gitToken) : null;
    Object.assign(patch, deployTriggersPatch(service, input, this.deps.secrets));
    if (input.runtimeMode !== undefined && input.runtimeMode !== service.runtimeMode) {
      if (service.source.kind === 'storage')
        throw new ValidationError('runtimeMode', 'A storage instance serves S3 over HTTP: it stays web');
      if (input.runtimeMode === 'worker' && (await this.deps.store.domains.list([service.id])).length > 0) {
        throw new ConflictError('Workers do not accept domains: remove the domains of this service before making it a worker');
      }
      patch.runtimeMode = input.runtimeMode;
    }
    if (input.replicas !== undefined || input.resources !== undefined) {
      // Taken by the next deployment's containers (a redeploy applies them).
      const scale = await scaleAfter(
        service,
        { replicas: input.replicas, resources: input.resources },
        {
          config: this.deps.config,
          stateful: service.source.kind === 'database' || service.source.kind === 'storage',
          capacity: this.capacity,
        },
      );
      Object.assign(patch, scale);
      const stateful = service.source.kind === 'database' || service.source.kind === 'storage';
      // 0 stops the service and keeps it (its live deployment starts again when scaled up); no redeploy either way.
      if (!stateful && scale.replicas === 0 && service.status !== 'stopped') Object.assign(patch, { status: 'stopped', reachable: false });
      if (!stateful && scale.replicas > 0 && service.status === 'stopped')
        patch.status = (await this.deps.store.deployments.listLive(service.id, 1)).length > 0 ? 'active' : 'idle';
    }
    if (input.placement !== undefined)
      // Taken by the next deployment on the cluster.
      patch.placement = await placementAfter(
        this.deps,
        input.placement,
        service.source.kind === 'database' || service.source.kind === 'storage',
      );
    const volumes = input.volumes;
    if (volumes !== undefined) {
      const engine = databaseEngineOf(service);
      assertVolumesFit(volumes, engine ? ENGINE_SPECS[engine].dataDir : service.source.kind === 'storage' ? STORAGE_SERVER.dataDir : null);
    }
    await this.deps.store.transaction(async (tx) => {
      await tx.projects.updateService(service.id, patch);
      // Mounted by the next deployment; a volume left out of the list keeps its data until the service goes (docs/decisions.md).
      if (volumes !== undefined) await tx.volumes.replace(service.id, volumes, patch.updatedAt!);
    });
    if (patch.replicas !== undefined && patch.replicas !== service.replicas) void this.onScaled?.().catch(() => {});
    return this.reader.view(service.id);
  }

  async transfer(
    actor: Actor,
    serviceId: string,
    targetProjectId: string,
  ): Promise<{ service: ServiceView; project: ProjectView; proxy: ProxyResultView }> {
    assertWrite(actor);
    const service = await serviceFor(this.deps.store, actor, serviceId);
    const target = await projectFor(this.deps.store, actor, targetProjectId);
    if (target.id !== service.projectId) {
      const now = this.deps.clock.now();
      const environment = await defaultEnvironmentOf(this.deps.store, target.id);
      await this.deps.store.transaction(async (tx) => {
        const slug = uniqueSlug(service.slug, await slugsTakenIn(tx, environment, hostnameScope(target.slug, environment)));
        await tx.projects.updateService(service.id, { projectId: target.id, environmentId: environment.id, slug, updatedAt: now });
        await tx.projects.update(target.id, { updatedAt: now });
        await tx.projects.update(service.projectId, { updatedAt: now });
      });
    }
    const proxy = await this.routing.reload();
    return { service: await this.reader.view(service.id), project: await this.projects.get(actor, target.id), proxy };
  }
}
