import { statfs } from 'node:fs/promises';
import type Docker from 'dockerode';
import type { RuntimeDeps } from '../../src/deployments/runtime-deps.js';
import { LABELS } from '../../src/deployments/container-engine.port.js';
import type { GitRemote } from '../../src/git-hooks/git-provider.port.js';
import type { HookPorts } from '../../src/index.js';
import { BitbucketProvider, BitbucketStatusApi } from '../git/bitbucket.git-provider.js';
import { DockerHubProvider } from '../git/dockerhub.git-provider.js';
import { GiteaProvider, GiteaStatusApi } from '../git/gitea.git-provider.js';
import { GitHubProvider, GitHubStatusApi } from '../git/github.git-provider.js';
import { GitLabProvider, GitLabStatusApi } from '../git/gitlab.git-provider.js';
import { StandardWebhooksProvider } from '../git/standard-webhooks.git-provider.js';
import { RegistryHttpImageRegistry } from '../registry/registry-http.image-registry.js';
import type { AppConfig } from './config.js';

/**
 * The adapters of push to deploy: the senders in the order their headers are told apart (Forgejo and
 * Gitea send GitHub's event header too, so they come before GitHub; Docker Hub, known by its body, last),
 * each host's commit status API, `git ls-remote` for branch polling, the Registry HTTP API for digests,
 * the disk the database volumes live on, and Docker networks for previews sharing a parent's database.
 */
export function hookPorts(config: AppConfig, docker: Docker, runtime: RuntimeDeps, ownUrl: () => string): HookPorts {
  const prefix = config.platform.resourcePrefix;
  return {
    providers: [
      new GiteaProvider('forgejo'),
      new GiteaProvider('gitea'),
      new GitLabProvider(),
      new BitbucketProvider(),
      new GitHubProvider(),
      new StandardWebhooksProvider(),
      new DockerHubProvider(),
    ],
    statusApis: [
      new GitHubStatusApi(),
      new GitLabStatusApi(),
      new GiteaStatusApi('gitea'),
      new GiteaStatusApi('forgejo'),
      new BitbucketStatusApi(),
    ],
    remote: isGitRemote(runtime.git) ? runtime.git : null,
    registry: new RegistryHttpImageRegistry(),
    disk: diskOf(docker, config.dataDir),
    networks: {
      async link(database, environmentId) {
        const network = `${prefix}-${environmentId}`;
        const container = await currentContainerOf(docker, config.platform.instanceId, database.id);
        if (!container) return;
        const inspected = await docker.getContainer(container).inspect();
        if (inspected.NetworkSettings.Networks[network]) return;
        await ensureNetwork(docker, network, {
          [LABELS.managed]: 'true',
          [LABELS.instance]: config.platform.instanceId,
          [LABELS.environment]: environmentId,
          [LABELS.project]: database.projectId,
        });
        await docker.getNetwork(network).connect({ Container: container, EndpointConfig: { Aliases: [database.slug] } });
      },
      async unlink(database, environmentId) {
        const container = await currentContainerOf(docker, config.platform.instanceId, database.id);
        if (container) await docker.getNetwork(`${prefix}-${environmentId}`).disconnect({ Container: container, Force: true });
      },
    },
    baseUrl: () => config.publicUrl ?? ownUrl(),
  };
}

function isGitRemote(git: unknown): git is GitRemote {
  return typeof (git as Partial<GitRemote>).headOf === 'function';
}

async function currentContainerOf(docker: Docker, instanceId: string, serviceId: string): Promise<string | null> {
  const containers = await docker.listContainers({
    filters: { label: [`${LABELS.instance}=${instanceId}`, `${LABELS.service}=${serviceId}`], status: ['running'] },
  });
  return containers.sort((a, b) => b.Created - a.Created)[0]?.Id ?? null;
}

async function ensureNetwork(docker: Docker, name: string, labels: Record<string, string>): Promise<void> {
  try {
    await docker.getNetwork(name).inspect();
  } catch {
    await docker
      .createNetwork({ Name: name, Driver: 'bridge', Labels: labels, CheckDuplicate: true })
      .catch((error: { statusCode?: number }) => {
        if (error.statusCode !== 409) throw error;
      });
  }
}

/** Docker's data root when this process can see it, else the platform's data directory: where database volumes grow. */
function diskOf(docker: Docker, dataDir: string) {
  let root: Promise<string> | null = null;
  return async () => {
    root ??= docker.info().then(
      (info: { DockerRootDir?: string }) => info.DockerRootDir ?? dataDir,
      () => dataDir,
    );
    const stats = await statfs(await root).catch(() => statfs(dataDir).catch(() => null));
    return stats ? { totalBytes: stats.blocks * stats.bsize, freeBytes: stats.bavail * stats.bsize } : null;
  };
}
