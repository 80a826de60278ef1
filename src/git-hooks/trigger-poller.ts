import { PassLoop } from '../platform/pass-loop.js';
import { clipCommitMessage } from '../domain/deploy-triggers.js';
import { cloneUrlOf, type ServiceRecord } from '../domain/types.js';
import type { DeploymentService } from '../deployments/deployment.service.js';
import type { ServiceDeps } from '../platform/deps.js';
import type { ServicePollRecord } from './git-hook.records.js';
import type { GitRemote, ImageRegistry } from './git-provider.port.js';
import type { HookProvider, ImagePushEvent } from './hook-event.js';
import type { TriggerResult } from './push-deployer.js';

/** A poll row of a service that does not poll (it keeps the digest last seen for registry hooks): never due. */
const NEVER = new Date('9999-01-01T00:00:00.000Z');
const SYNC_EVERY_MS = 10_000;
const CHECKS_AT_ONCE = 4;
const MAX_BACKOFF_MS = 3_600_000;
/** Deployments looked at to tell whether a commit or digest was already deployed. */
const RECENT = 20;

/**
 * Branch polling and image digests: for a server no webhook reaches, each polling service's branch
 * head (`git ls-remote`, with its token) or image digest (the registry's) is read every
 * pollIntervalSeconds, and a change deploys exactly that commit or digest. A failed check backs off
 * (doubling, up to an hour) and shows on the service. Registry hooks come through here too: a hint
 * to read the digest now.
 */
export class TriggerPoller {
  private readonly loop = new PassLoop(
    () => this.pass(),
    () => this.deps.config.hooks.tickMs,
    (error) => this.log('polling pass failed', { error: error.message }),
  );
  private lastSync = 0;
  private readonly checking = new Set<string>();

  constructor(
    private readonly deps: ServiceDeps,
    private readonly deployments: DeploymentService,
    private readonly remote: GitRemote | null,
    private readonly registry: ImageRegistry | null,
    private readonly log: (message: string, extra?: Record<string, unknown>) => void = () => {},
  ) {}

  start(): void {
    this.loop.start();
    this.wake();
  }

  async stop(): Promise<void> {
    await this.loop.stop();
  }

  wake(): void {
    this.loop.wake();
  }

  /** One pass: new polling services get a row (checked now), then the due checks run, a few at once. */
  async pass(): Promise<void> {
    const now = this.deps.clock.now();
    if (now.getTime() - this.lastSync >= SYNC_EVERY_MS) {
      await this.sync(now);
      this.lastSync = now.getTime();
    }
    const due = (await this.deps.store.gitHooks.duePolls(now, CHECKS_AT_ONCE * 4)).filter((p) => !this.checking.has(p.serviceId));
    for (let i = 0; i < due.length; i += CHECKS_AT_ONCE)
      await Promise.all(due.slice(i, i + CHECKS_AT_ONCE).map((poll) => this.check(poll)));
  }

  /** Every polling service has a row; a row whose service stopped polling is parked (its last digest kept). */
  async sync(now: Date = this.deps.clock.now()): Promise<void> {
    const [polling, polls] = await Promise.all([this.deps.store.projects.listPolling(), this.deps.store.gitHooks.allPolls()]);
    const pollOf = new Map(polls.map((p) => [p.serviceId, p]));
    const pollingIds = new Set(polling.map((s) => s.id));
    for (const service of polling) {
      const poll = pollOf.get(service.id);
      if (!poll) await this.deps.store.gitHooks.putPoll(emptyPoll(service.id, now));
      else if (poll.nextCheckAt.getTime() === NEVER.getTime()) await this.deps.store.gitHooks.putPoll({ ...poll, nextCheckAt: now });
    }
    for (const poll of polls)
      if (!pollingIds.has(poll.serviceId) && poll.nextCheckAt.getTime() !== NEVER.getTime())
        await this.deps.store.gitHooks.putPoll({ ...poll, nextCheckAt: NEVER, failures: 0, lastError: null });
  }

  /** Checks one service now (a poll, or a hint): deploys when its branch or digest moved. Never throws. */
  async check(poll: ServicePollRecord): Promise<string | null> {
    this.checking.add(poll.serviceId);
    try {
      const service = await this.deps.store.projects.getService(poll.serviceId);
      if (!service || service.pollIntervalSeconds === null) {
        await this.deps.store.gitHooks.putPoll({ ...poll, nextCheckAt: NEVER });
        return null;
      }
      const now = this.deps.clock.now();
      try {
        const seen = await this.read(service);
        const deploymentId = await this.deployIfMoved(service, poll.lastSeen, seen, 'poll', poll.lastSeen === null ? 'record' : 'deploy');
        await this.deps.store.gitHooks.putPoll({
          serviceId: service.id,
          lastSeen: seen,
          lastCheckedAt: now,
          nextCheckAt: new Date(now.getTime() + service.pollIntervalSeconds * 1000),
          failures: 0,
          lastError: null,
        });
        return deploymentId;
      } catch (error) {
        const failures = poll.failures + 1;
        const wait = Math.min(service.pollIntervalSeconds * 1000 * 2 ** failures, MAX_BACKOFF_MS);
        await this.deps.store.gitHooks.putPoll({
          ...poll,
          lastCheckedAt: now,
          failures,
          lastError: (error as Error).message.slice(0, 1000),
          nextCheckAt: new Date(now.getTime() + wait),
        });
        return null;
      }
    } finally {
      this.checking.delete(poll.serviceId);
    }
  }

  /**
   * A registry said a tag was pushed (Docker Hub, unsigned, or the generic signed hook): each image
   * service of the project running that repository and tag reads its digest now, and deploys exactly
   * that digest when it is not the one last seen. The delivery's word alone deploys nothing.
   */
  async onImagePush(
    projectId: string,
    delivery: { provider: HookProvider; deliveryId: string | null },
    event: ImagePushEvent,
  ): Promise<TriggerResult> {
    const services = (await this.deps.store.projects.listServices([projectId])).filter(
      (s) => s.source.kind === 'image' && sameImage(s.source.image, event.repository, event.tag),
    );
    if (services.length === 0)
      return { deploymentIds: [], previewIds: [], reason: `No image service of this project runs ${event.repository}:${event.tag}` };
    if (!this.registry) return { deploymentIds: [], previewIds: [], reason: 'This platform cannot read registries' };
    const polls = new Map((await this.deps.store.gitHooks.pollsOf(services.map((s) => s.id))).map((p) => [p.serviceId, p]));
    const deploymentIds: string[] = [];
    const reasons: string[] = [];
    for (const service of services) {
      if (!service.autoDeploy) {
        reasons.push(`autoDeploy is off for ${service.name}`);
        continue;
      }
      const poll = polls.get(service.id) ?? emptyPoll(service.id, NEVER);
      let digest: string;
      try {
        digest = await this.read(service);
      } catch (error) {
        reasons.push(`${service.name}: ${(error as Error).message}`);
        continue;
      }
      const id = await this.deployIfMoved(service, poll.lastSeen, digest, 'registry', 'deploy', delivery);
      await this.deps.store.gitHooks.putPoll({ ...poll, lastSeen: digest, lastCheckedAt: this.deps.clock.now() });
      if (id) deploymentIds.push(id);
      else reasons.push(`${service.name} already runs ${digest}`);
    }
    return {
      deploymentIds,
      previewIds: [],
      reason: [deploymentIds.length > 0 ? `Deploying the new digest of ${event.repository}:${event.tag}` : null, ...reasons]
        .filter(Boolean)
        .join('; '),
    };
  }

  /** The branch's head, or the image's digest. */
  private async read(service: ServiceRecord): Promise<string> {
    const signal = AbortSignal.timeout(60_000);
    if (service.source.kind === 'image') {
      if (!this.registry) throw new Error('This platform cannot read registries');
      return this.registry.digestOf(service.source.image, signal);
    }
    if (service.source.kind !== 'repository') throw new Error('Only repository and image services poll');
    if (!this.remote) throw new Error('This platform cannot read git remotes');
    const url = cloneUrlOf(service.source, this.deps.config.deploy.gitBaseUrl);
    const token = service.gitTokenEncrypted ? this.deps.secrets.decrypt(service.gitTokenEncrypted) : null;
    const head = await this.remote.headOf({ url, branch: service.branch, token, signal });
    if (!head) throw new Error(`The remote has no branch ${service.branch}`);
    return head;
  }

  /**
   * Deploys `seen` unless it is what was seen last or a recent deployment already has it. On a first check
   * (`record`), a service that was never deployed is only noted: polling deploys changes, not the first sight.
   */
  private async deployIfMoved(
    service: ServiceRecord,
    lastSeen: string | null,
    seen: string,
    trigger: 'poll' | 'registry',
    first: 'record' | 'deploy',
    delivery?: { provider: HookProvider; deliveryId: string | null },
  ): Promise<string | null> {
    if (lastSeen === seen) return null;
    const image = service.source.kind === 'image';
    const recent = await this.deps.store.deployments.list(service.id, RECENT);
    const has = (d: (typeof recent)[number]) =>
      d.status !== 'superseded' && d.status !== 'aborted' && (image ? d.origin?.imageDigest === seen : d.commitSha === seen);
    if (recent.some(has)) return null;
    if (lastSeen === null && first === 'record' && (image || !recent.some((d) => d.commitSha !== null))) return null;
    if (!service.autoDeploy) return null;
    const provider = delivery?.provider ?? (image ? 'registry' : 'git');
    const deployment = await this.deployments.enqueueTriggered(
      service.id,
      {
        trigger,
        commitSha: image ? null : seen,
        origin: {
          provider,
          deliveryId: delivery?.deliveryId ?? null,
          commitMessage: clipCommitMessage(null),
          commitAuthor: null,
          fetchRef: null,
          imageDigest: image ? seen : null,
          previewId: null,
        },
      },
      image
        ? `Deployment queued for ${service.name}: ${service.source.kind === 'image' ? service.source.image : ''} now points at ${seen}${delivery ? ` (${provider} delivery)` : ' (digest polling)'}`
        : `Deployment queued for ${service.name}: branch ${service.branch} moved to ${seen.slice(0, 12)} (polling)`,
      { cancelInProgress: service.cancelInProgress },
    );
    return deployment.id;
  }
}

function emptyPoll(serviceId: string, nextCheckAt: Date): ServicePollRecord {
  return { serviceId, lastSeen: null, lastCheckedAt: null, nextCheckAt, failures: 0, lastError: null };
}

/**
 * Whether a service's image reference is the pushed repository and tag: `team/app` is Docker Hub's
 * `docker.io/team/app`, `nginx` its `library/nginx`; another registry's names carry their host.
 */
export function sameImage(image: string, repository: string, tag: string): boolean {
  const [name, imageTag] = splitImage(image);
  return normalizeName(name) === normalizeName(repository) && imageTag === tag;
}

function splitImage(image: string): [string, string] {
  const at = image.indexOf('@');
  const ref = at >= 0 ? image.slice(0, at) : image;
  const slash = ref.lastIndexOf('/');
  const colon = ref.lastIndexOf(':');
  return colon > slash ? [ref.slice(0, colon), ref.slice(colon + 1)] : [ref, 'latest'];
}

function normalizeName(name: string): string {
  let n = name.toLowerCase().replace(/^(docker\.io|index\.docker\.io|registry-1\.docker\.io)\//, '');
  if (!n.includes('/')) n = `library/${n}`;
  return n;
}
