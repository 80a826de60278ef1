import { DatabaseCopy, type DiskUsage } from '../backups/database-copy.js';
import type { BackupService } from '../backups/backup.service.js';
import type { DeploymentService } from '../deployments/deployment.service.js';
import type { EnvService } from '../env/env.service.js';
import type { EnvironmentService } from '../environments/environment.service.js';
import type { ServiceDeps } from '../platform/deps.js';
import { type PreviewNetworks, PreviewService } from '../previews/preview.service.js';
import { CommitStatusReporter } from './commit-status.reporter.js';
import { DeliveryReceiver } from './delivery-receiver.js';
import type { CommitStatusApi, GitProvider, GitRemote, ImageRegistry } from './git-provider.port.js';
import { PushDeployer } from './push-deployer.js';
import { TriggerPoller } from './trigger-poller.js';
import { WebhookService } from './webhook.service.js';

/** The adapters push to deploy, polling and previews talk through (the composition root gives them). */
export interface HookPorts {
  /** Asked in order (Forgejo before Gitea before GitHub: each sends the next one's headers too). */
  providers?: GitProvider[];
  statusApis?: CommitStatusApi[];
  remote?: GitRemote | null;
  registry?: ImageRegistry | null;
  /** The disk database volumes live on, for the previews' copy limit; null: not checked. */
  disk?: DiskUsage;
  /** Joins a parent's database to a preview's network (previews.databases `shared`). */
  networks?: PreviewNetworks | null;
  /** Where senders reach the API (PUBLIC_URL, else the API's own address once it listens). */
  baseUrl?: () => string;
}

/**
 * Push to deploy, polling, commit statuses and pull-request previews, wired to the other use cases.
 * The loops (poller, reporter, previews) are started and stopped by the caller.
 */
export function createHookServices(
  deps: ServiceDeps,
  uses: { deployments: DeploymentService; environments: EnvironmentService; env: EnvService; backups: BackupService },
  ports: HookPorts,
  log: (message: string, extra?: Record<string, unknown>) => void = () => {},
) {
  const baseUrl = () => deps.config.hooks.publicUrl ?? ports.baseUrl?.() ?? `${deps.config.publicScheme}://${deps.config.publicIp}`;
  const webhooks = new WebhookService(deps, baseUrl);
  const statuses = new CommitStatusReporter(
    deps,
    ports.statusApis ?? [],
    { deploymentUrl: (d) => `${baseUrl().replace(/\/+$/, '')}/api/deployments/${d.id}` },
    (deploymentId, line) => uses.deployments.appendLog(deploymentId, 'stdout', line),
    log,
  );
  const pushes = new PushDeployer(deps, uses.deployments, statuses);
  const poller = new TriggerPoller(deps, uses.deployments, ports.remote ?? null, ports.registry ?? null, log);
  const receiver = new DeliveryReceiver(deps, ports.providers ?? [], webhooks, pushes, poller, log);
  const previews = new PreviewService(
    deps,
    uses.environments,
    uses.deployments,
    statuses,
    {
      copy: new DatabaseCopy(deps, uses.env, uses.backups),
      limits: {
        maxBytes: deps.config.hooks.previewCopyMaxBytes,
        maxUsedRatio: deps.config.hooks.previewDiskMaxUsedRatio,
        disk: ports.disk ?? (async () => null),
      },
    },
    ports.networks ?? null,
    log,
  );
  receiver.handlePullRequests(previews);
  return {
    webhooks,
    receiver,
    statuses,
    poller,
    previews,
    /** The public endpoint's limits, read at each delivery (the configuration is live). */
    limits: () => ({ maxBodyBytes: deps.config.hooks.maxBodyBytes, perAddressPerMinute: deps.config.hooks.perAddressPerMinute }),
    start(): void {
      statuses.start();
      poller.start();
      previews.start();
    },
    async stop(): Promise<void> {
      await Promise.all([statuses.stop(), poller.stop(), previews.stop()]);
    },
  };
}

export type HookServices = ReturnType<typeof createHookServices>;
