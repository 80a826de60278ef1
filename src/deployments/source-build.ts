import { appendFile, mkdir, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { cloneUrlOf, type RepositorySource } from '../domain/types.js';
import type { ServiceDeps } from '../platform/deps.js';
import { analyze } from './analyzer/analyzer.js';
import { directoryTree } from './analyzer/source-tree.js';
import { DeploymentFailure, throwIfAborted, type DeploymentRecorder, type PipelineContext } from './pipeline-context.js';
import type { RuntimeDeps } from './runtime-deps.js';

export interface BuiltImage {
  imageTag: string;
  detectedBuildMethod: 'dockerfile' | 'analyzer' | null;
  framework: string | null;
}

/** Pulls an image the build needs (the analyzer's base images); the run half owns pulling. */
export type EnsureImage = (ctx: PipelineContext, ref: string) => Promise<void>;

/**
 * The build half of a deployment from a repository: a work folder of its own, the clone, the
 * builder choice (`auto`: a build file means `dockerfile`, else the analyzer), the analyzer's
 * Dockerfile, and the image build. The work folder is gone when this returns, whatever happened.
 */
export class SourceBuild {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly runtime: RuntimeDeps,
    private readonly recorder: DeploymentRecorder,
    private readonly ensureImage: EnsureImage,
  ) {}

  async build(ctx: PipelineContext, source: RepositorySource, env: Record<string, string>, tag: string): Promise<BuiltImage> {
    const { service, log } = ctx;
    const workdir = path.resolve(this.deps.config.deploy.buildsDir, ctx.deployment.id);
    await rm(workdir, { recursive: true, force: true });
    await mkdir(path.dirname(workdir), { recursive: true });
    try {
      // A fork's pull request (on a host that publishes no pull-request ref) is fetched from the fork, without the service's token.
      const forkUrl = ctx.deployment.origin?.fetchUrl ?? null;
      const url = forkUrl ?? cloneUrlOf(source, this.deps.config.deploy.gitBaseUrl);
      const token = service.gitTokenEncrypted && !forkUrl ? this.deps.secrets.decrypt(service.gitTokenEncrypted) : null;
      log.mask(token);
      // A push, a poll or a pull request names its commit: exactly that one is built, whatever the branch's head is now.
      const pinned = ctx.deployment.commitSha && !ctx.deployment.rollbackOf ? ctx.deployment.commitSha : null;
      const fetchRef = ctx.deployment.origin?.fetchRef ?? null;
      log.write(
        pinned
          ? `Fetching commit ${pinned} of ${url}${fetchRef ? ` (through ${fetchRef})` : ` (branch ${service.branch})`}${token ? ' with the service token' : ''}`
          : `Cloning ${url} (branch ${service.branch})${token ? ' with the service token' : ''}`,
      );
      let commitSha: string;
      try {
        ({ commitSha } = await this.runtime.git.clone({
          url,
          branch: service.branch,
          token,
          dest: workdir,
          signal: ctx.signal,
          onLine: log.write,
          ...(pinned ? { commit: { sha: pinned, ref: fetchRef } } : {}),
        }));
      } catch (error) {
        throwIfAborted(ctx.signal);
        throw new DeploymentFailure(
          `Could not ${pinned ? `fetch commit ${pinned} of` : 'clone'} ${url}${pinned ? '' : ` at branch ${service.branch}`}: ${(error as Error).message}`,
        );
      }
      await this.recorder.recordCommit(ctx.deployment.id, commitSha);
      log.write(`Checked out ${commitSha}`);
      throwIfAborted(ctx.signal);

      const root = service.rootDir ? path.join(workdir, service.rootDir) : workdir;
      if (!(await isDirectory(root)) || !root.startsWith(workdir))
        throw new DeploymentFailure(`rootDir ${service.rootDir} is not a folder of the repository`);
      const { method, dockerfile, framework } = await this.chooseBuilder(ctx, root, env);
      // Written when it changed only: an unchanged row needs no write (which also makes the routes' table be read again).
      if (service.detectedBuildMethod !== method || (framework && service.framework !== framework))
        await this.deps.store.projects.updateService(service.id, { detectedBuildMethod: method, ...(framework ? { framework } : {}) });
      throwIfAborted(ctx.signal);

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
        throwIfAborted(ctx.signal);
        throw new DeploymentFailure(`The build failed: ${(error as Error).message}`);
      }
      log.write(`Built ${tag}`);
      return { imageTag: tag, detectedBuildMethod: method, framework };
    } finally {
      await rm(workdir, { recursive: true, force: true });
    }
  }

  /** The service's build file when it has one (or must), else a Dockerfile the analyzer writes into the root. */
  private async chooseBuilder(
    ctx: PipelineContext,
    root: string,
    env: Record<string, string>,
  ): Promise<{ method: 'dockerfile' | 'analyzer'; dockerfile: string; framework: string | null }> {
    const { service, log } = ctx;
    const dockerfilePath = env.SERVICE_DOCKERFILE_PATH?.trim() || service.dockerfilePath || 'Dockerfile';
    const dockerfileFull = path.resolve(root, dockerfilePath);
    if (!dockerfileFull.startsWith(root + path.sep))
      throw new DeploymentFailure(`The build file path ${dockerfilePath} leaves the service root`);
    const hasDockerfile = await isFile(dockerfileFull);

    if (service.buildMethod === 'dockerfile' || (service.buildMethod === 'auto' && hasDockerfile)) {
      if (!hasDockerfile)
        throw new DeploymentFailure(
          `buildMethod is dockerfile but there is no build file at ${dockerfilePath} (relative to ${service.rootDir ?? 'the repository root'})`,
        );
      const dockerfile = path.relative(root, dockerfileFull);
      log.write(`Building with ${dockerfile}${service.buildMethod === 'auto' ? ' (found a build file, buildMethod auto)' : ''}`);
      return { method: 'dockerfile', dockerfile, framework: null };
    }

    log.write(
      service.buildMethod === 'analyzer'
        ? 'Building with the analyzer (buildMethod analyzer)'
        : `No build file at ${dockerfilePath}: building with the analyzer`,
    );
    let analysis: Awaited<ReturnType<typeof analyze>>;
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
    for (const line of analysis.summary) log.write(line);
    const dockerfile = '.slipway.Dockerfile';
    await writeFile(path.join(root, dockerfile), analysis.dockerfile);
    // The builder still reads an ignored Dockerfile, but COPY . no longer ships it (a static site would serve it).
    await appendFile(path.join(root, '.dockerignore'), `\n${dockerfile}\n.dockerignore\n`);
    log.write('Generated Dockerfile:');
    for (const line of analysis.dockerfile.split('\n')) log.write(`  ${line}`);
    for (const base of baseImages(analysis.dockerfile)) await this.ensureImage(ctx, base);
    return { method: 'analyzer', dockerfile, framework: analysis.framework };
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
