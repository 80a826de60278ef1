import { PassLoop } from '../platform/pass-loop.js';
import { newId } from '../domain/ids.js';
import type { DeploymentRecord, ServiceRecord } from '../domain/types.js';
import { cloneUrlOf } from '../domain/types.js';
import type { ServiceDeps } from '../platform/deps.js';
import type { HooksConfig } from '../platform/platform-config.js';
import type { CommitStatusRecord } from './git-hook.records.js';
import type { CommitState, CommitStatusApi } from './git-provider.port.js';
import { isStatusProvider, type HookRepository, type StatusProvider } from './hook-event.js';

const MAX_ATTEMPTS = 8;
const BATCH = 20;

/** What a deployment's state says on the host's commit page. */
const STATE_OF: Record<DeploymentRecord['status'], { state: CommitState; description: string }> = {
  queued: { state: 'pending', description: 'Queued' },
  running: { state: 'pending', description: 'Deploying' },
  succeeded: { state: 'success', description: 'Deployed' },
  failed: { state: 'failure', description: 'The deployment failed' },
  aborted: { state: 'error', description: 'The deployment was aborted' },
  superseded: { state: 'error', description: 'Superseded by a newer push' },
};

/**
 * The API root of a host's status API: the configured one, else the host the service clones from
 * (a self-hosted GitLab, Gitea or Forgejo), else the SaaS's (api.github.com, api.bitbucket.org).
 */
export function statusApiUrl(provider: StatusProvider, cloneUrl: string, urls: HooksConfig['apiUrls']): string {
  const origin = originOf(cloneUrl);
  switch (provider) {
    case 'github':
      return urls.github ?? (!origin || new URL(origin).hostname === 'github.com' ? 'https://api.github.com' : `${origin}/api/v3`);
    case 'gitlab':
      return `${urls.gitlab ?? origin ?? 'https://gitlab.com'}/api/v4`;
    case 'gitea':
      return `${urls.gitea ?? origin ?? 'https://gitea.com'}/api/v1`;
    case 'forgejo':
      return `${urls.forgejo ?? origin ?? 'https://codeberg.org'}/api/v1`;
    case 'bitbucket':
      return urls.bitbucket ?? 'https://api.bitbucket.org/2.0';
  }
}

/** `https://host[:port]` of an HTTP or SSH clone URL. */
function originOf(url: string): string | null {
  const scp = /^(?:[^@/\s]+@)?([^:/\s]+):(?!\/\/)/.exec(url);
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(url) && scp) return `https://${scp[1]}`;
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'http:' || parsed.protocol === 'https:' ? parsed.origin : `https://${parsed.hostname}`;
  } catch {
    return null;
  }
}

/** The repository's path for the status API: the delivery's `owner/name`, else the service's, else its URL's path. */
export function statusRepository(service: ServiceRecord, repository: HookRepository | null, gitBaseUrl: string): string | null {
  if (repository?.fullName) return repository.fullName;
  if (service.source.kind !== 'repository') return null;
  if (service.source.repoFullName) return service.source.repoFullName;
  const path = /^(?:[a-z][a-z0-9+.-]*:\/\/[^/]+\/|[^@\s]+@[^:\s]+:)(.+?)(?:\.git)?\/?$/i.exec(cloneUrlOf(service.source, gitBaseUrl));
  return path?.[1] ?? null;
}

/**
 * Posts commit statuses back to the git host: a deployment's (pending while queued and running, then
 * success, failure or error, with its page's URL) and one-offs (a preview refused). Durable: what is
 * to post is a row, posted by a loop that retries with backoff; the service's git token is read at
 * each post, never stored with the status. The outcome of each post goes to the deployment's log.
 */
export class CommitStatusReporter {
  private readonly loop = new PassLoop(
    () => this.pass(),
    () => this.deps.config.hooks.tickMs,
    (error) => this.log('commit status pass failed', { error: error.message }),
  );
  private readonly apis: Map<string, CommitStatusApi>;

  constructor(
    private readonly deps: ServiceDeps,
    apis: CommitStatusApi[],
    private readonly links: { deploymentUrl(deployment: DeploymentRecord): string },
    private readonly appendLog: (deploymentId: string, line: string) => Promise<unknown>,
    private readonly log: (message: string, extra?: Record<string, unknown>) => void = () => {},
  ) {
    this.apis = new Map(apis.map((api) => [api.provider, api]));
  }

  /**
   * Registers the statuses of a deployment made from a delivery: only where the service has a token and
   * the host has a status API the platform speaks.
   */
  async follow(
    deployment: DeploymentRecord,
    service: ServiceRecord,
    delivery: {
      provider: string | null;
      repository: HookRepository | null;
      ref: string | null;
      context?: string | undefined;
      /** Linked once it went live (a preview's URL); until then, and for other states, the deployment's page. */
      targetUrl?: string | null | undefined;
    },
  ): Promise<void> {
    const target = this.targetOf(service, delivery.provider, delivery.repository, deployment.commitSha);
    if (!target) return;
    await this.insert({
      ...target,
      deploymentId: deployment.id,
      ref: delivery.ref,
      context: delivery.context ?? contextOf(service),
      fixedState: null,
      description: null,
      targetUrl: delivery.targetUrl ?? null,
    });
    this.wake();
  }

  /** A one-off status on a commit (a preview refused, a preview's URL once it serves). */
  async postOnce(
    service: ServiceRecord,
    delivery: { provider: string; repository: HookRepository | null; sha: string; ref: string | null },
    status: { state: CommitState; description: string; targetUrl: string | null; context: string },
  ): Promise<void> {
    const target = this.targetOf(service, delivery.provider, delivery.repository, delivery.sha);
    if (!target) return;
    await this.insert({
      ...target,
      deploymentId: null,
      ref: delivery.ref,
      context: status.context,
      fixedState: status.state,
      description: status.description,
      targetUrl: status.targetUrl,
    });
    this.wake();
  }

  start(): void {
    this.loop.start();
  }

  async stop(): Promise<void> {
    await this.loop.stop();
  }

  /** Looks at the statuses to post now rather than at the next tick. */
  wake(): void {
    this.loop.wake();
  }

  /** One pass: each due status whose state changed is posted. */
  async pass(): Promise<void> {
    const due = await this.deps.store.gitHooks.dueStatuses(this.deps.clock.now(), BATCH);
    if (due.length === 0) return;
    const deployments = new Map(
      (await this.deps.store.deployments.listByIds(due.flatMap((s) => (s.deploymentId ? [s.deploymentId] : [])))).map((d) => [d.id, d]),
    );
    for (const status of due) await this.report(status, status.deploymentId ? (deployments.get(status.deploymentId) ?? null) : null);
  }

  private async report(status: CommitStatusRecord, deployment: DeploymentRecord | null): Promise<void> {
    const gitHooks = this.deps.store.gitHooks;
    if (status.deploymentId && !deployment) return gitHooks.updateStatus(status.id, { done: true, lastError: 'The deployment is gone' });
    const wanted = deployment ? STATE_OF[deployment.status] : { state: status.fixedState!, description: status.description ?? '' };
    const final = !deployment || !['queued', 'running'].includes(deployment.status);
    if (status.reportedState === wanted.state && (wanted.state !== 'pending' || status.description === wanted.description)) {
      if (final) await gitHooks.updateStatus(status.id, { done: true });
      return;
    }
    const service = await this.deps.store.projects.getService(status.serviceId);
    const api = this.apis.get(status.provider);
    const token = service?.gitTokenEncrypted ? this.deps.secrets.decrypt(service.gitTokenEncrypted) : null;
    if (!service || !api || !token || service.source.kind !== 'repository')
      return gitHooks.updateStatus(status.id, { done: true, lastError: 'No token to post with' });
    const targetUrl = deployment
      ? deployment.status === 'succeeded' && status.targetUrl
        ? status.targetUrl
        : this.links.deploymentUrl(deployment)
      : status.targetUrl;
    try {
      await api.post(
        {
          provider: status.provider as StatusProvider,
          apiUrl: statusApiUrl(
            status.provider as StatusProvider,
            cloneUrlOf(service.source, this.deps.config.deploy.gitBaseUrl),
            this.deps.config.hooks.apiUrls,
          ),
          repository: status.repository,
          repositoryId: status.repositoryId,
          sha: status.sha,
          ref: status.ref,
          token,
        },
        { state: wanted.state, context: status.context, description: wanted.description, targetUrl },
        AbortSignal.timeout(30_000),
      );
      await gitHooks.updateStatus(status.id, {
        reportedState: wanted.state,
        description: wanted.description,
        done: final,
        lastError: null,
        attempts: 0,
      });
      if (deployment)
        await this.appendLog(
          deployment.id,
          `Commit status ${wanted.state} posted to ${status.provider} (${status.context} on ${status.sha.slice(0, 12)})`,
        );
    } catch (error) {
      const message = (error as Error).message;
      const attempts = status.attempts + 1;
      // The host refused for good (credentials, a repository it does not have): retrying would not help.
      const permanent = /HTTP (400|401|403|404|410|422)\b/.test(message);
      const done = permanent || attempts >= MAX_ATTEMPTS;
      await gitHooks.updateStatus(status.id, {
        attempts,
        lastError: message,
        done,
        nextAttemptAt: new Date(this.deps.clock.now().getTime() + Math.min(2 ** attempts * 1000, 10 * 60_000)),
      });
      if (deployment && (done || attempts === 1))
        await this.appendLog(
          deployment.id,
          `Commit status ${wanted.state} not posted to ${status.provider}: ${message}${done ? '' : ' (retrying)'}`,
        );
    }
  }

  private targetOf(
    service: ServiceRecord,
    provider: string | null,
    repository: HookRepository | null,
    sha: string | null,
  ): Pick<CommitStatusRecord, 'serviceId' | 'provider' | 'repository' | 'repositoryId' | 'sha'> | null {
    if (!sha || !isStatusProvider(provider) || !this.apis.has(provider) || !service.gitTokenEncrypted) return null;
    const path = statusRepository(service, repository, this.deps.config.deploy.gitBaseUrl);
    if (!path) return null;
    return {
      serviceId: service.id,
      provider,
      repository: path,
      repositoryId: provider === 'gitlab' ? (repository?.id ?? null) : null,
      sha,
    };
  }

  private async insert(
    fields: Omit<CommitStatusRecord, 'id' | 'reportedState' | 'attempts' | 'lastError' | 'nextAttemptAt' | 'done' | 'createdAt'>,
  ): Promise<void> {
    const now = this.deps.clock.now();
    await this.deps.store.gitHooks.insertStatus({
      ...fields,
      id: newId(),
      reportedState: null,
      attempts: 0,
      lastError: null,
      nextAttemptAt: now,
      done: false,
      createdAt: now,
    });
  }
}

/** `slipway/<service>` (with its environment when it is not the project's first). */
export function contextOf(service: ServiceRecord): string {
  return `slipway/${service.slug}${service.environmentId === service.projectId ? '' : `@${service.environmentId.slice(0, 8)}`}`;
}
