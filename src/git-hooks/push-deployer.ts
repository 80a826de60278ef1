import { clipCommitMessage } from '../domain/deploy-triggers.js';
import { cloneUrlOf, type ServiceRecord } from '../domain/types.js';
import type { DeploymentService } from '../deployments/deployment.service.js';
import type { ServiceDeps } from '../platform/deps.js';
import type { CommitStatusReporter } from './commit-status.reporter.js';
import type { HookProvider, HookRepository, PushEvent } from './hook-event.js';
import { repositoryKey, repositoryKeys, sameRepository, watchedChanges } from './matching.js';

/** What a delivery (or a poll) made, and why not when it made nothing. */
export interface TriggerResult {
  deploymentIds: string[];
  previewIds: string[];
  /** For the delivery list: what was deployed, or why nothing was. */
  reason: string;
}

/** The repository services a delivery may be for: previews' copies are deployed by their pull request's events, not by pushes. */
export async function pushableServices(deps: ServiceDeps, projectId: string): Promise<ServiceRecord[]> {
  const [services, previews] = await Promise.all([deps.store.projects.listServices([projectId]), deps.store.previews.list(projectId)]);
  const previewEnvironments = new Set(previews.flatMap((p) => (p.environmentId ? [p.environmentId] : [])));
  return services.filter((s) => s.source.kind === 'repository' && !previewEnvironments.has(s.environmentId));
}

/**
 * The services of `services` built from `repository`: matched by URL first (`host/path`), and by
 * `owner/name` only when no URL matched (a service named by owner/name on another base URL, a local mirror).
 */
export function servicesOfRepository(services: ServiceRecord[], repository: HookRepository, gitBaseUrl: string): ServiceRecord[] {
  const keys = repositoryKeys(repository);
  const cloneUrl = (s: ServiceRecord) => (s.source.kind === 'repository' ? cloneUrlOf(s.source, gitBaseUrl) : '');
  const byUrl = services.filter((s) => {
    const key = repositoryKey(cloneUrl(s));
    return key !== null && keys.urls.has(key);
  });
  if (byUrl.length > 0) return byUrl;
  return services.filter(
    (s) =>
      s.source.kind === 'repository' &&
      sameRepository({ urls: new Set(), fullName: keys.fullName }, { cloneUrl: cloneUrl(s), repoFullName: s.source.repoFullName }),
  );
}

/**
 * A push deploys every service of the project built from that repository and branch whose watchPaths
 * match the changed files (one webhook for a monorepo), each at exactly the pushed commit. A newer push
 * supersedes the queued deployments an older one made; with cancelInProgress it stops the running one.
 */
export class PushDeployer {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly deployments: DeploymentService,
    private readonly statuses: CommitStatusReporter,
  ) {}

  async onPush(
    projectId: string,
    delivery: { provider: HookProvider; deliveryId: string | null },
    event: PushEvent,
  ): Promise<TriggerResult> {
    const none = (reason: string): TriggerResult => ({ deploymentIds: [], previewIds: [], reason });
    const what = event.repository.fullName ?? event.repository.urls[0] ?? 'the repository';
    if (event.branch === null) return none(`A tag or other ref of ${what} was pushed, not a branch`);
    if (event.sha === null) return none(`Branch ${event.branch} of ${what} was deleted: nothing to deploy`);
    const ofRepository = servicesOfRepository(
      await pushableServices(this.deps, projectId),
      event.repository,
      this.deps.config.deploy.gitBaseUrl,
    );
    if (ofRepository.length === 0) return none(`No service of this project builds ${what}`);
    const ofBranch = ofRepository.filter((s) => s.branch === event.branch);
    if (ofBranch.length === 0)
      return none(`No service builds branch ${event.branch} of ${what} (${describe(ofRepository, (s) => `${s.name} builds ${s.branch}`)})`);
    const automatic = ofBranch.filter((s) => s.autoDeploy);
    if (automatic.length === 0) return none(`autoDeploy is off for ${describe(ofBranch, (s) => s.name)}`);
    const watched = automatic.map((s) => ({ service: s, ...watchedChanges(s.watchPaths, event.changedFiles) }));
    const matching = watched.filter((w) => w.matches);
    if (matching.length === 0)
      return none(`The push changed no path the services watch (${describe(automatic, (s) => `${s.name}: ${s.watchPaths.join(', ')}`)})`);

    const deploymentIds: string[] = [];
    for (const { service } of matching) {
      const deployment = await this.deployments.enqueueTriggered(
        service.id,
        {
          trigger: 'push',
          commitSha: event.sha,
          origin: {
            provider: delivery.provider,
            deliveryId: delivery.deliveryId,
            commitMessage: clipCommitMessage(event.commit?.message ?? null),
            commitAuthor: event.commit?.author ?? null,
            fetchRef: null,
            imageDigest: null,
            previewId: null,
          },
        },
        `Deployment queued for ${service.name}: ${delivery.provider} push of ${event.sha.slice(0, 12)} to ${event.branch}${delivery.deliveryId ? ` (delivery ${delivery.deliveryId})` : ''}`,
        { cancelInProgress: service.cancelInProgress },
      );
      deploymentIds.push(deployment.id);
      await this.statuses.follow(deployment, service, { provider: delivery.provider, repository: event.repository, ref: event.branch });
    }
    const skipped = watched.filter((w) => !w.matches).map((w) => w.service.name);
    const unknownFiles = event.changedFiles === null && matching.some((w) => w.service.watchPaths.length > 0);
    return {
      deploymentIds,
      previewIds: [],
      reason:
        `Deploying ${event.sha.slice(0, 12)} of ${event.branch} to ${describe(
          matching.map((m) => m.service),
          (s) => s.name,
        )}` +
        (skipped.length > 0 ? `; ${skipped.join(', ')} watch none of the changed paths` : '') +
        (unknownFiles ? '; the sender does not list changed files, so watchPaths could not narrow it' : ''),
    };
  }
}

function describe<T>(items: T[], label: (item: T) => string): string {
  const shown = items.slice(0, 5).map(label).join(', ');
  return items.length > 5 ? `${shown} and ${items.length - 5} more` : shown;
}
