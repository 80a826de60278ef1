import { keepsData, STORAGE_SERVER, storageOf } from '../domain/storage-server.js';
import type { EnvService } from '../env/env.service.js';
import type { ServiceDeps } from '../platform/deps.js';
import { LABELS, type ContainerState } from './container-engine.port.js';
import { ContainerLaunch } from './container-launch.js';
import { DeploymentFailure, throwIfAborted, type DeploymentRecorder, type PipelineContext } from './pipeline-context.js';
import { resourceNames, type RuntimeDeps } from './runtime-deps.js';
import { SourceBuild, type BuiltImage } from './source-build.js';

export { DeploymentFailure } from './pipeline-context.js';

export interface PipelineResult extends BuiltImage {
  container: ContainerState;
  /** What the container was started with: the service's other replicas get the same. */
  env: Record<string, string>;
}

/**
 * One deployment, from source to a healthy container: the service's env, then its image (the
 * registry's, or built from the repository by SourceBuild), then the container started beside the
 * live one and checked (ContainerLaunch). Switching traffic and retiring the old container are the
 * rollout's, so a failure here never touches what is live.
 */
export class DeploymentPipeline {
  private readonly launch: ContainerLaunch;
  private readonly source: SourceBuild;

  constructor(
    private readonly deps: ServiceDeps,
    private readonly runtime: RuntimeDeps,
    private readonly env: EnvService,
    private readonly recorder: DeploymentRecorder,
  ) {
    this.launch = new ContainerLaunch(deps, runtime, recorder);
    this.source = new SourceBuild(deps, runtime, recorder, (ctx, ref) => this.launch.ensureImage(ctx, ref));
  }

  async run(ctx: PipelineContext): Promise<PipelineResult> {
    const { service } = ctx;
    // Beside the clone and the build rather than after them; start() awaits it (and reports its failure).
    const network = this.launch
      .ensureNetwork(ctx, resourceNames(this.deps.config.resourcePrefix, service.id, ctx.deployment.id, service.environmentId))
      .catch(() => {});
    // A deployment that ends early still ends after the network call: the service's removal (which aborts it, then
    // removes the network) must not see the network made behind it.
    const { built, env, names } = await this.prepare(ctx).catch(async (error: unknown) => {
      await network;
      throw error;
    });
    const { source } = service;
    // Before the previous server stops: the certificate is not part of the gap.
    const tls = source.kind === 'database' ? await this.launch.tlsMount(ctx) : null;
    if (keepsData(service)) await this.stopPreviousServer(ctx);

    const container = await this.launch.start(ctx, built.imageTag, env, names, tls);
    return { ...built, container, env };
  }

  /** The deployment's env and image (pulled, built or an earlier one's), nothing started: the cluster's rollout starts the tasks. */
  async prepare(
    ctx: PipelineContext,
  ): Promise<{ built: BuiltImage; env: Record<string, string>; names: ReturnType<typeof resourceNames> }> {
    const { service } = ctx;
    // Asked beside the variables' resolution (database reads); a problem with the variables is still the one reported first.
    const unreachable = this.runtime.engine.ping(ctx.signal).then(
      () => null,
      (error: Error) => error,
    );
    const { resolved, env } = await this.envOf(ctx);
    const names = resourceNames(this.deps.config.resourcePrefix, service.id, ctx.deployment.id, service.environmentId);
    const pingError = await unreachable;
    if (pingError) throw new DeploymentFailure(`The Docker engine is unreachable: ${pingError.message}`);

    let built: BuiltImage;
    const { source } = service;
    if (ctx.deployment.rollbackOf) built = await this.rollbackImage(ctx, ctx.deployment.rollbackOf, names.image);
    else if (source.kind === 'database')
      built = fromRegistry(await this.launch.fromRegistry(ctx, this.deps.config.databases.images[source.engine], names.image));
    else if (source.kind === 'storage')
      built = fromRegistry(await this.launch.fromRegistry(ctx, this.deps.config.storage.image, names.image));
    else if (source.kind === 'image')
      built = fromRegistry(await this.launch.fromRegistry(ctx, pinnedImage(source.image, ctx), names.image));
    else built = await this.source.build(ctx, source, resolved.env, names.image);
    throwIfAborted(ctx.signal);
    return { built, env, names };
  }

  /** What runs the deployment, when it is no container of this engine (a Swarm service's name on the cluster). */
  recordRunner(ctx: PipelineContext, containerName: string, imageTag: string): Promise<void> {
    return this.recorder.recordContainer(ctx.deployment.id, { containerName, imageTag });
  }

  /** The service's variables as a container gets them; unresolved references fail, secrets are masked in the log. */
  async envOf(ctx: PipelineContext): Promise<{ resolved: { env: Record<string, string> }; env: Record<string, string> }> {
    const { service, log } = ctx;
    const resolved = await this.env.resolvedFor(service);
    if (resolved.problems.length > 0) {
      for (const problem of resolved.problems) log.write(`Unresolved variable reference: ${problem}`, 'stderr');
      throw new DeploymentFailure('Fix the variable references above, then deploy again');
    }
    log.mask(...(await this.env.secretValues(service)));
    return { resolved, env: this.serverEnv(ctx, resolved.env) };
  }

  /** One more replica (index from 1) of a stateless service, from the deployment's image; resolves once it is checked. */
  startReplica(ctx: PipelineContext, imageTag: string, env: Record<string, string>, index: number): Promise<ContainerState> {
    const names = resourceNames(this.deps.config.resourcePrefix, ctx.service.id, ctx.deployment.id, ctx.service.environmentId);
    return this.launch.start(ctx, imageTag, env, names, null, index);
  }

  /** A storage instance's server gets its key pair and port from the platform, not from variables: the secret is no variable. */
  private serverEnv(ctx: PipelineContext, env: Record<string, string>): Record<string, string> {
    const storage = storageOf(ctx.service);
    if (!storage) return env;
    const secretAccessKey = this.deps.secrets.decrypt(storage.secretAccessKeyEncrypted);
    ctx.log.mask(secretAccessKey);
    return { ...env, ...STORAGE_SERVER.env({ accessKeyId: storage.accessKeyId, secretAccessKey }, ctx.service.internalPort) };
  }

  /**
   * A rollback runs the image an earlier deployment went live with, tagged as this deployment's so
   * retention and cleanup treat it like any other; nothing is cloned or built.
   */
  private async rollbackImage(ctx: PipelineContext, sourceId: string, tag: string): Promise<BuiltImage> {
    const source = await this.deps.store.deployments.get(sourceId);
    if (!source?.imageTag || source.serviceId !== ctx.service.id || !(await this.runtime.engine.imageExists(source.imageTag)))
      throw new DeploymentFailure(`The image of deployment ${sourceId} is no longer kept; deploy again instead`);
    ctx.log.write(
      `Rolling back to deployment ${sourceId}: its image ${source.imageTag}${source.commitSha ? ` (commit ${source.commitSha})` : ''} runs again, no build; the environment variables are today's`,
    );
    await this.runtime.engine.tagImage(source.imageTag, tag);
    ctx.created.image = tag;
    return fromRegistry(tag);
  }

  /**
   * PostgreSQL, MySQL and ClickHouse lock their data directory, and two servers on one volume would
   * corrupt it (a storage server is treated alike: its image is a setting): the previous one stops (kept, to start again if the new one fails) before the new one
   * starts, once the image is ready, so the gap is the new server's start only.
   */
  private async stopPreviousServer(ctx: PipelineContext): Promise<void> {
    const running = (await this.runtime.engine.listContainers({ key: LABELS.service, value: ctx.service.id })).filter((c) => c.running);
    if (running.length === 0) return;
    ctx.created.stopped = [];
    ctx.created.downSince = Date.now();
    for (const previous of running) {
      ctx.log.write(`The previous container ${previous.name} stops first: a data volume takes one server at a time`);
      await this.runtime.engine.stopContainer(previous.id, this.deps.config.deploy.stopGraceSeconds);
      ctx.created.stopped.push(previous.id);
    }
  }
}

/** A deployment made for a new digest runs exactly that digest (`name@sha256:...`), pulled whatever the tag points at now. */
function pinnedImage(image: string, ctx: PipelineContext): string {
  const digest = ctx.deployment.origin?.imageDigest;
  if (!digest) return image;
  const slash = image.lastIndexOf('/');
  const at = image.indexOf('@');
  const colon = image.lastIndexOf(':');
  const name = at >= 0 ? image.slice(0, at) : colon > slash ? image.slice(0, colon) : image;
  ctx.log.write(`Pulling ${name}@${digest}: the digest ${image} pointed at when the deployment was made`);
  return `${name}@${digest}`;
}

function fromRegistry(imageTag: string): BuiltImage {
  return { imageTag, detectedBuildMethod: null, framework: null };
}
