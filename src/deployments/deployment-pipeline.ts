import { appendFile, mkdir, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ENGINE_SPECS, databaseEngineOf } from '../domain/database-engines.js';
import { cloneUrlOf, type DeploymentRecord, type ProjectRecord, type RepositorySource, type ServiceRecord } from '../domain/types.js';
import type { ContainerState } from './container-engine.port.js';
import { analyze } from './analyzer/analyzer.js';
import { directoryTree } from './analyzer/source-tree.js';
import type { ServiceDeps } from '../platform/deps.js';
import type { DeploymentLogWriter } from './deployment-log-writer.js';
import type { EnvService } from '../env/env.service.js';
import { LABELS, resourceNames, type RuntimeDeps } from './runtime-deps.js';

/** A step failed for a reason the user can act on; the message goes to the log as is. */
export class DeploymentFailure extends Error {}

export interface PipelineResult {
  container: ContainerState;
  imageTag: string;
  detectedBuildMethod: 'dockerfile' | 'analyzer' | null;
  framework: string | null;
}

interface Context {
  deployment: DeploymentRecord;
  service: ServiceRecord;
  project: ProjectRecord;
  log: DeploymentLogWriter;
  signal: AbortSignal;
  /** Set once a candidate exists, so a failure can remove exactly what this deployment made. */
  created: { image?: string; container?: string };
  /** The traffic slot the container takes, for a web service behind the proxy (see TrafficSlots). */
  slot?: { network: string; ip: string };
}

/**
 * One deployment, from source to a healthy container: clone, choose the builder, build (or pull),
 * run beside the current container, and wait until the new one serves. Switching traffic and
 * retiring the old container are the runner's, so a failure here never touches what is live.
 */
export class DeploymentPipeline {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly runtime: RuntimeDeps,
    private readonly env: EnvService,
  ) {}

  async run(ctx: Context): Promise<PipelineResult> {
    const { service, log } = ctx;
    const resolved = await this.env.resolvedFor(service);
    if (resolved.problems.length > 0) {
      for (const problem of resolved.problems) log.write(`Unresolved variable reference: ${problem}`, 'stderr');
      throw new DeploymentFailure('Fix the variable references above, then deploy again');
    }
    log.mask(...(await this.env.secretValues(service)));
    const names = resourceNames(this.deps.config.resourcePrefix, service.id, ctx.deployment.id, service.projectId);
    await this.runtime.engine.ping(ctx.signal).catch((error: Error) => {
      throw new DeploymentFailure(`The Docker engine is unreachable: ${error.message}`);
    });

    let built: Omit<PipelineResult, 'container'>;
    const { source } = service;
    if (source.kind === 'database') built = await this.fromImage(ctx, ENGINE_SPECS[source.engine].image, names.image);
    else if (source.kind === 'image') built = await this.fromImage(ctx, source.image, names.image);
    else built = await this.fromRepository(ctx, source, resolved.env, names.image);
    this.check(ctx);

    const container = await this.start(ctx, built.imageTag, resolved.env, names);
    return { ...built, container };
  }

  private async fromImage(ctx: Context, ref: string, tag: string): Promise<Omit<PipelineResult, 'container'>> {
    await this.ensureImage(ctx, ref);
    await this.runtime.engine.tagImage(ref, tag);
    ctx.created.image = tag;
    return { imageTag: tag, detectedBuildMethod: null, framework: null };
  }

  private async ensureImage(ctx: Context, ref: string): Promise<void> {
    if (await this.runtime.engine.imageExists(ref)) {
      ctx.log.write(`Image ${ref} is present`);
      return;
    }
    ctx.log.write(`Pulling ${ref}`);
    try {
      await this.runtime.engine.pullImage(ref, ctx.log.write, ctx.signal);
    } catch (error) {
      this.check(ctx);
      throw new DeploymentFailure(`Could not pull ${ref}: ${(error as Error).message}`);
    }
  }

  private async fromRepository(ctx: Context, source: RepositorySource, env: Record<string, string>, tag: string): Promise<Omit<PipelineResult, 'container'>> {
    const { service, log } = ctx;
    const workdir = path.resolve(this.deps.config.deploy.buildsDir, ctx.deployment.id);
    await rm(workdir, { recursive: true, force: true });
    await mkdir(path.dirname(workdir), { recursive: true });
    try {
      const url = cloneUrlOf(source, this.deps.config.deploy.gitBaseUrl);
      const token = service.gitTokenEncrypted ? this.deps.secrets.decrypt(service.gitTokenEncrypted) : null;
      log.mask(token);
      log.write(`Cloning ${url} (branch ${service.branch})${token ? ' with the service token' : ''}`);
      let commitSha: string;
      try {
        ({ commitSha } = await this.runtime.git.clone({ url, branch: service.branch, token, dest: workdir, signal: ctx.signal, onLine: log.write }));
      } catch (error) {
        this.check(ctx);
        throw new DeploymentFailure(`Could not clone ${url} at branch ${service.branch}: ${(error as Error).message}`);
      }
      await this.deps.store.deployments.update(ctx.deployment.id, { commitSha });
      log.write(`Checked out ${commitSha}`);
      this.check(ctx);

      const root = service.rootDir ? path.join(workdir, service.rootDir) : workdir;
      if (!(await isDirectory(root)) || !root.startsWith(workdir)) throw new DeploymentFailure(`rootDir ${service.rootDir} is not a folder of the repository`);
      const dockerfilePath = env.SERVICE_DOCKERFILE_PATH?.trim() || service.dockerfilePath || 'Dockerfile';
      const dockerfileFull = path.resolve(root, dockerfilePath);
      if (!dockerfileFull.startsWith(root + path.sep)) throw new DeploymentFailure(`The build file path ${dockerfilePath} leaves the service root`);
      const hasDockerfile = await isFile(dockerfileFull);

      let method: 'dockerfile' | 'analyzer';
      let dockerfile: string;
      let framework: string | null = null;
      if (service.buildMethod === 'dockerfile' || (service.buildMethod === 'auto' && hasDockerfile)) {
        if (!hasDockerfile) throw new DeploymentFailure(`buildMethod is dockerfile but there is no build file at ${dockerfilePath} (relative to ${service.rootDir ?? 'the repository root'})`);
        method = 'dockerfile';
        dockerfile = path.relative(root, dockerfileFull);
        log.write(`Building with ${dockerfile}${service.buildMethod === 'auto' ? ' (found a build file, buildMethod auto)' : ''}`);
      } else {
        method = 'analyzer';
        log.write(service.buildMethod === 'analyzer' ? 'Building with the analyzer (buildMethod analyzer)' : `No build file at ${dockerfilePath}: building with the analyzer`);
        let analysis;
        try {
          analysis = await analyze({
            tree: directoryTree(root),
            installCommand: service.installCommand,
            buildCommand: service.buildCommand,
            startCommand: service.startCommand,
            staticOutput: service.staticOutput,
            internalPort: service.internalPort,
            buildEnvKeys: Object.keys(env),
            images: this.deps.config.deploy.analyzerImages,
          });
        } catch (error) {
          throw new DeploymentFailure((error as Error).message);
        }
        framework = analysis.framework;
        for (const line of analysis.summary) log.write(line);
        dockerfile = '.slipway.Dockerfile';
        await writeFile(path.join(root, dockerfile), analysis.dockerfile);
        // The builder still reads an ignored Dockerfile, but COPY . no longer ships it (a static site would serve it).
        await appendFile(path.join(root, '.dockerignore'), `\n${dockerfile}\n.dockerignore\n`);
        log.write('Generated Dockerfile:');
        for (const line of analysis.dockerfile.split('\n')) log.write(`  ${line}`);
        for (const base of baseImages(analysis.dockerfile)) await this.ensureImage(ctx, base);
      }
      await this.deps.store.projects.updateService(service.id, { detectedBuildMethod: method, ...(framework ? { framework } : {}) });
      this.check(ctx);

      log.write(`Building image ${tag}`);
      ctx.created.image = tag;
      try {
        await this.runtime.engine.buildImage({
          contextDir: root,
          dockerfile,
          tag,
          buildArgs: env,
          signal: ctx.signal,
          onLine: log.write,
        });
      } catch (error) {
        this.check(ctx);
        throw new DeploymentFailure(`The build failed: ${(error as Error).message}`);
      }
      log.write(`Built ${tag}`);
      return { imageTag: tag, detectedBuildMethod: method, framework };
    } finally {
      await rm(workdir, { recursive: true, force: true });
    }
  }

  private async start(ctx: Context, image: string, env: Record<string, string>, names: ReturnType<typeof resourceNames>): Promise<ContainerState> {
    const { service, log } = ctx;
    const engine = databaseEngineOf(service);
    const spec = engine ? ENGINE_SPECS[engine] : null;
    await this.runtime.engine.ensureNetwork(names.network, { [LABELS.managed]: 'true', [LABELS.instance]: this.deps.config.instanceId, [LABELS.project]: service.projectId });
    const cmd = spec?.command
      ? spec.command({ logicalReplication: service.source.kind === 'database' && service.source.logicalReplicationEnabled })
      : service.source.kind === 'image' && service.startCommand
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
        volumes: spec ? [{ name: names.volume, target: spec.dataDir }] : [],
        signal: ctx.signal,
      });
    } catch (error) {
      this.check(ctx);
      throw new DeploymentFailure(`The container did not start: ${(error as Error).message}`);
    }
    await this.deps.store.deployments.update(ctx.deployment.id, { containerName: names.container, imageTag: image });
    return this.waitUntilServing(ctx, container, spec !== null);
  }

  /** Web: any HTTP answer on the internal port; database: a TCP connection; worker: still running after a moment. */
  private async waitUntilServing(ctx: Context, container: ContainerState, isDatabase: boolean): Promise<ContainerState> {
    const { service, log } = ctx;
    const deploy = this.deps.config.deploy;
    const worker = service.runtimeMode === 'worker' && !isDatabase;
    const deadline = Date.now() + (worker ? deploy.workerSettleMs : deploy.healthTimeoutMs);
    log.write(worker ? 'Waiting to see that the worker keeps running' : `Waiting for the container to answer on port ${service.internalPort}${isDatabase ? '' : ` (GET ${deploy.healthPath})`}`);
    let current = container;
    for (;;) {
      this.check(ctx);
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

  private check(ctx: Context): void {
    if (ctx.signal.aborted) throw ctx.signal.reason instanceof Error ? ctx.signal.reason : new Error('aborted');
  }
}

function baseImages(dockerfile: string): string[] {
  const stages = new Set<string>();
  const images: string[] = [];
  for (const match of dockerfile.matchAll(/^FROM\s+(?:--\S+\s+)*(\S+)(?:\s+AS\s+(\S+))?/gim)) {
    const image = match[1]!;
    if (!stages.has(image.toLowerCase()) && !images.includes(image)) images.push(image);
    if (match[2]) stages.add(match[2].toLowerCase());
  }
  return images;
}

async function isFile(file: string): Promise<boolean> {
  return (await stat(file).catch(() => null))?.isFile() ?? false;
}

async function isDirectory(dir: string): Promise<boolean> {
  return (await stat(dir).catch(() => null))?.isDirectory() ?? false;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
