import { ENGINE_SPECS, engineOf } from '../domain/database-engines.js';
import type { ServiceDeps } from '../platform/deps.js';
import type { ContainerState } from './container-engine.port.js';
import { DeploymentFailure, sleep, throwIfAborted, type DeploymentRecorder, type PipelineContext } from './pipeline-context.js';
import { LABELS, type resourceNames, type RuntimeDeps } from './runtime-deps.js';

type Names = ReturnType<typeof resourceNames>;

/**
 * The run half of a deployment: images from a registry, the new container started beside the live
 * one, and the wait until it serves. Nothing here touches the live container or the traffic.
 */
export class ContainerLaunch {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly runtime: RuntimeDeps,
    private readonly recorder: DeploymentRecorder,
  ) {}

  /** An image service or a database: the registry's image, tagged as this deployment's. */
  async fromRegistry(ctx: PipelineContext, ref: string, tag: string): Promise<string> {
    await this.ensureImage(ctx, ref);
    await this.runtime.engine.tagImage(ref, tag);
    ctx.created.image = tag;
    return tag;
  }

  /** Pulls `ref` unless the engine has it. */
  async ensureImage(ctx: PipelineContext, ref: string): Promise<void> {
    if (await this.runtime.engine.imageExists(ref)) {
      ctx.log.write(`Image ${ref} is present`);
      return;
    }
    ctx.log.write(`Pulling ${ref}`);
    try {
      await this.runtime.engine.pullImage(ref, ctx.log.write, ctx.signal);
    } catch (error) {
      throwIfAborted(ctx.signal);
      throw new DeploymentFailure(`Could not pull ${ref}: ${(error as Error).message}`);
    }
  }

  /** Starts the container on the project network (and its slot) and resolves once it serves. */
  async start(ctx: PipelineContext, image: string, env: Record<string, string>, names: Names): Promise<ContainerState> {
    const { service, log } = ctx;
    const engine = engineOf(service.repoFullName);
    const spec = engine ? ENGINE_SPECS[engine] : null;
    await this.runtime.engine.ensureNetwork(names.network, { [LABELS.managed]: 'true', [LABELS.instance]: this.deps.config.instanceId, [LABELS.project]: service.projectId });
    const cmd = spec?.command
      ? spec.command({ logicalReplication: service.postgresLogicalReplicationEnabled })
      : service.repoUrl === 'container-image' && service.startCommand
        ? ['sh', '-c', service.startCommand]
        : null;
    log.write(`Starting container ${names.container}`);
    ctx.created.container = names.container;
    let container: ContainerState;
    try {
      container = await this.runtime.engine.runContainer({
        name: names.container,
        image,
        env: { PORT: String(service.internalPort), ...env },
        cmd,
        labels: {
          [LABELS.managed]: 'true',
          [LABELS.instance]: this.deps.config.instanceId,
          [LABELS.service]: service.id,
          [LABELS.deployment]: ctx.deployment.id,
          [LABELS.project]: service.projectId,
          ...(ctx.slot ? { [LABELS.slot]: ctx.slot.ip } : {}),
        },
        network: names.network,
        aliases: [service.slug],
        ...(ctx.slot ? { slot: ctx.slot } : {}),
        // The volume outlives every deployment: only deleting the service removes it.
        volumes: spec ? [{ name: names.volume, target: spec.dataDir }] : [],
        signal: ctx.signal,
      });
    } catch (error) {
      throwIfAborted(ctx.signal);
      throw new DeploymentFailure(`The container did not start: ${(error as Error).message}`);
    }
    await this.recorder.recordContainer(ctx.deployment.id, { containerName: names.container, imageTag: image });
    return this.waitUntilServing(ctx, container, spec !== null);
  }

  /** Web: any HTTP answer on the internal port; database: a TCP connection; worker: still running after a moment. */
  private async waitUntilServing(ctx: PipelineContext, container: ContainerState, isDatabase: boolean): Promise<ContainerState> {
    const { service, log } = ctx;
    const deploy = this.deps.config.deploy;
    const worker = service.runtimeMode === 'worker' && !isDatabase;
    const deadline = Date.now() + (worker ? deploy.workerSettleMs : deploy.healthTimeoutMs);
    log.write(worker ? 'Waiting to see that the worker keeps running' : `Waiting for the container to answer on port ${service.internalPort}${isDatabase ? '' : ` (GET ${deploy.healthPath})`}`);
    let current = container;
    for (;;) {
      throwIfAborted(ctx.signal);
      const state = await this.runtime.engine.inspect(container.id);
      if (!state || !state.running) {
        for (const line of await this.runtime.engine.tail(container.id, 30)) log.write(line, 'stderr');
        throw new DeploymentFailure(`The container exited${state?.exitCode !== null && state?.exitCode !== undefined ? ` with code ${state.exitCode}` : ''} before it served`);
      }
      current = state;
      if (worker) {
        if (Date.now() >= deadline) break;
      } else if (state.ip) {
        const ok = isDatabase
          ? await this.runtime.health.tcp(state.ip, service.internalPort, ctx.signal)
          : (await this.runtime.health.http(state.ip, service.internalPort, deploy.healthPath, ctx.signal)) !== null;
        if (ok) break;
      }
      if (Date.now() >= deadline) {
        for (const line of await this.runtime.engine.tail(container.id, 30)) log.write(line, 'stderr');
        throw new DeploymentFailure(`The container did not answer on port ${service.internalPort} within ${Math.round(deploy.healthTimeoutMs / 1000)} s; is internalPort right?`);
      }
      await sleep(250, ctx.signal);
    }
    log.write(worker ? 'The worker is running' : 'The container is serving');
    return current;
  }
}
