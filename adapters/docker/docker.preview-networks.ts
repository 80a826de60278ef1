import { statfs } from 'node:fs/promises';
import type Docker from 'dockerode';
import type { DiskUsage } from '../../src/backups/database-copy.js';
import { LABELS } from '../../src/deployments/container-engine.port.js';
import type { ServiceRecord } from '../../src/domain/types.js';
import type { PreviewNetworks } from '../../src/previews/preview-networks.port.js';

/**
 * Previews sharing their parent's database (previews.databases `shared`): the database's current
 * container joins the preview environment's network under its slug, and leaves it with the preview.
 */
export class DockerPreviewNetworks implements PreviewNetworks {
  constructor(
    private readonly docker: Docker,
    private readonly opts: { instanceId: string; prefix: string },
  ) {}

  async link(database: ServiceRecord, environmentId: string): Promise<void> {
    const network = `${this.opts.prefix}-${environmentId}`;
    const container = await this.currentContainerOf(database.id);
    if (!container) return;
    const inspected = await this.docker.getContainer(container).inspect();
    if (inspected.NetworkSettings.Networks[network]) return;
    await this.ensureNetwork(network, {
      [LABELS.managed]: 'true',
      [LABELS.instance]: this.opts.instanceId,
      [LABELS.environment]: environmentId,
      [LABELS.project]: database.projectId,
    });
    await this.docker.getNetwork(network).connect({ Container: container, EndpointConfig: { Aliases: [database.slug] } });
  }

  async unlink(database: ServiceRecord, environmentId: string): Promise<void> {
    const container = await this.currentContainerOf(database.id);
    if (container) await this.docker.getNetwork(`${this.opts.prefix}-${environmentId}`).disconnect({ Container: container, Force: true });
  }

  private async currentContainerOf(serviceId: string): Promise<string | null> {
    const containers = await this.docker.listContainers({
      filters: { label: [`${LABELS.instance}=${this.opts.instanceId}`, `${LABELS.service}=${serviceId}`], status: ['running'] },
    });
    return containers.sort((a, b) => b.Created - a.Created)[0]?.Id ?? null;
  }

  private async ensureNetwork(name: string, labels: Record<string, string>): Promise<void> {
    try {
      await this.docker.getNetwork(name).inspect();
    } catch {
      await this.docker
        .createNetwork({ Name: name, Driver: 'bridge', Labels: labels, CheckDuplicate: true })
        .catch((error: { statusCode?: number }) => {
          if (error.statusCode !== 409) throw error;
        });
    }
  }
}

/** Docker's data root when this process can see it, else the platform's data directory: where database volumes grow. */
export function dockerDiskUsage(docker: Docker, dataDir: string): DiskUsage {
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
