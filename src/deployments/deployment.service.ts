import { isAbortable, isTerminal } from '../domain/deployment-state.js';
import { ConflictError, ImageGoneError, ValidationError } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import type { DeploymentLogRecord, DeploymentRecord, DeploymentTrigger, LogStream, ServiceRecord } from '../domain/types.js';
import type { DeploymentOrigin } from '../domain/deploy-triggers.js';
import { assertProjectVisible, assertWrite, type Actor } from '../domain/access.js';
import { VersionedCache } from '../platform/versioned-cache.js';
import type { Store, Table } from '../persistence/store.js';
import { serviceRefOf } from '../domain/events.js';
import { followJobLog, type JobStreamEvent } from '../jobs/job-log-stream.js';
import type { JobOutcome, JobQueue } from '../jobs/job-queue.port.js';
import type { ServiceDeps } from '../platform/deps.js';
import { deploymentFor, environmentFor, projectFor, serviceFor } from '../platform/lookup.js';
import { defaultEnvironment } from '../domain/environments.js';
import { presentDeployment, presentLogLine } from './deployment-views.js';
import type { DeploymentLogView, DeploymentView } from './deployment-views.js';
import type { DeploymentRecorder } from './pipeline-context.js';

export type DeploymentStreamEvent = JobStreamEvent<DeploymentLogView>;

/** Told when a running deployment is asked to stop, so the runner can cut its work short. */
export type AbortListener = (deploymentId: string) => void;

/**
 * The deployments table and its events have this one owner: the API's use cases, and the queue
 * and row writes the runner makes (it calls these; this class knows no runner, only the listeners
 * it was given).
 */
/** A service's deployment list reads the service (for its project) and the deployments. */
const LIST_TABLES: readonly Table[] = ['Service', 'Deployment'];

export class DeploymentService implements JobQueue<DeploymentRecord>, DeploymentRecorder {
  /** Deployment lists by service, read again after any write to a service or a deployment. */
  private readonly listCache = new VersionedCache<string, { projectId: string; deployments: DeploymentView[] }>(() =>
    this.deps.store.versionOf(LIST_TABLES),
  );
  private readonly abortListeners = new Set<AbortListener>();
  private readonly createdListeners = new Set<() => void>();
  /** Deployments this process runs: their lines come through the in-process bus. */
  private readonly runningHere = new Set<string>();
  /** Whether other platform processes share the database (one of them may run a deployment). */
  private peers: () => boolean = () => false;

  constructor(
    private readonly deps: ServiceDeps,
    /** Whether the engine still has an image; absent without a runtime (nothing runs then anyway). */
    private readonly images: { imageExists(ref: string): Promise<boolean> } | null = null,
  ) {}

  onAbort(listener: AbortListener): () => void {
    this.abortListeners.add(listener);
    return () => this.abortListeners.delete(listener);
  }

  /** With several processes on one database, a stream reads the lines another one writes from the table. */
  usePeers(peers: () => boolean): void {
    this.peers = peers;
  }

  /** Told when a deployment is queued, so the runner need not wait for its next poll. */
  onCreated(listener: () => void): () => void {
    this.createdListeners.add(listener);
    return () => this.createdListeners.delete(listener);
  }

  /** Queues a deployment; the runner picks it up from the table, so a restart loses nothing. */
  async create(actor: Actor, serviceId: string): Promise<DeploymentView> {
    assertWrite(actor);
    const service = await serviceFor(this.deps.store, actor, serviceId);
    return this.enqueue(service, { trigger: 'manual', rollbackOf: null, commitSha: null }, `Deployment queued for ${service.name}`);
  }

  /**
   * Queues a deployment that runs the image of one that went live, through the same checked and
   * drained cutover (no clone, no build); the env is today's. 409 for a deployment that never went
   * live, 409 `image_gone` when its image was collected (see ROLLBACK_KEEP).
   */
  async rollback(actor: Actor, deploymentId: string): Promise<DeploymentView> {
    assertWrite(actor);
    const { deployment, service } = await deploymentFor(this.deps.store, actor, deploymentId);
    if (deployment.status !== 'succeeded')
      throw new ConflictError(`The deployment is ${deployment.status}: only a deployment that went live can be rolled back to`, {
        status: deployment.status,
      });
    if (!deployment.imageTag || (this.images && !(await this.images.imageExists(deployment.imageTag))))
      throw new ImageGoneError(
        `The image of deployment ${deployment.id} is no longer kept (the last ${this.deps.config.deploy.rollbackKeep} live deployments are); deploy again instead`,
        { deploymentId: deployment.id },
      );
    return this.enqueue(
      service,
      { trigger: 'rollback', rollbackOf: deployment.id, commitSha: deployment.commitSha },
      `Rollback to deployment ${deployment.id} queued for ${service.name}`,
    );
  }

  /**
   * A service deployed before the cluster formed runs on plain containers on the manager: once stateless services
   * run on Swarm (the reconcile pass asks), its live deployment's image runs again through the Swarm path, as a
   * rollback does (no clone, no build): the image pushed to the cluster's registry, the Swarm service started and
   * healthy, the routes switched to its tasks, then the plain containers drained and stopped (Rollout.runOnSwarm).
   * Nothing when a deployment of the service is queued or running, or none went live; answers the queued one.
   */
  async moveToCluster(serviceId: string): Promise<DeploymentRecord | null> {
    const service = await this.deps.store.projects.getService(serviceId);
    if (!service || service.replicas === 0) return null;
    if ((await this.deps.store.deployments.listOfServiceByStatus(serviceId, ['queued', 'running'])).length > 0) return null;
    return this.redeployLive(
      serviceId,
      (live) =>
        `Moving ${service.name} to the cluster: the image of its live deployment ${live.id} runs as a Swarm service (no build); its containers on the manager stop once the tasks serve`,
    );
  }

  /**
   * The live deployment's image run again as a deployment of its own (no build): what moves a service, to the
   * cluster or a database to another server. Null when nothing went live (or its image is not kept).
   */
  async redeployLive(serviceId: string, firstLine: string | ((live: DeploymentRecord) => string)): Promise<DeploymentRecord | null> {
    const service = await this.deps.store.projects.getService(serviceId);
    if (!service) return null;
    const live = (await this.deps.store.deployments.listLive(serviceId, 1))[0];
    if (!live?.imageTag) return null;
    return this.enqueueRecord(
      serviceId,
      { trigger: 'rollback', rollbackOf: live.id, commitSha: live.commitSha, origin: null },
      typeof firstLine === 'string' ? firstLine : firstLine(live),
      newId(),
      service,
    );
  }

  /**
   * A deployment no person asked for: a push, a poll, a preview or a registry (src/git-hooks, src/previews).
   * Older queued deployments of the service that such triggers made are superseded first (recorded, never
   * run); with `cancelInProgress`, the running one is stopped too. Resolves with the new deployment.
   */
  async enqueueTriggered(
    serviceId: string,
    what: { trigger: Exclude<DeploymentTrigger, 'manual' | 'rollback'>; commitSha: string | null; origin: DeploymentOrigin },
    firstLine: string,
    options: { cancelInProgress: boolean },
  ): Promise<DeploymentRecord> {
    const id = newId();
    const now = this.deps.clock.now();
    const reason = what.commitSha
      ? `commit ${what.commitSha.slice(0, 12)}`
      : what.origin.imageDigest
        ? `digest ${what.origin.imageDigest}`
        : 'a newer change';
    for (const stale of await this.deps.store.deployments.listOfServiceByStatus(serviceId, ['queued', 'running'])) {
      if (stale.status === 'queued' && stale.trigger !== 'manual' && stale.trigger !== 'rollback') {
        const superseded = await this.deps.store.transaction(async (tx) => {
          const moved = await tx.deployments.transition(stale.id, ['queued'], { status: 'superseded', finishedAt: now });
          if (moved) await this.publish(tx, 'deployment.superseded', stale, null, `Superseded by deployment ${id} (${reason})`);
          return moved;
        });
        if (superseded) {
          await this.appendLog(stale.id, 'stdout', `Superseded by deployment ${id} (${reason}) before it started`);
          this.deps.logBus.publish(stale.id, { type: 'status', status: 'superseded' });
        }
      } else if (stale.status === 'running' && options.cancelInProgress) {
        if (await this.deps.store.deployments.transition(stale.id, ['running'], { abortRequested: true })) {
          await this.appendLog(stale.id, 'stdout', `Stopping: deployment ${id} (${reason}) replaces it (cancelInProgress is on)`);
          for (const listener of this.abortListeners) listener(stale.id);
        }
      }
    }
    const deployment = await this.enqueueRecord(
      serviceId,
      { trigger: what.trigger, rollbackOf: null, commitSha: what.commitSha, origin: what.origin },
      firstLine,
      id,
    );
    return deployment;
  }

  /** Queues the first deployment of a database the platform itself filled (a point-in-time restore's new service). */
  async enqueueFilled(service: ServiceRecord, firstLine: string): Promise<DeploymentView> {
    return this.enqueue(service, { trigger: 'manual', rollbackOf: null, commitSha: null }, firstLine);
  }

  private async enqueue(
    service: ServiceRecord,
    what: Pick<DeploymentRecord, 'trigger' | 'rollbackOf' | 'commitSha'>,
    firstLine: string,
  ): Promise<DeploymentView> {
    if (service.replicas === 0)
      throw new ConflictError('The service is scaled to 0 replicas: set replicas to 1 or more, then deploy', { replicas: 0 });
    return presentDeployment(await this.enqueueRecord(service.id, { ...what, origin: null }, firstLine, newId(), service));
  }

  private async enqueueRecord(
    serviceId: string,
    what: Pick<DeploymentRecord, 'trigger' | 'rollbackOf' | 'commitSha' | 'origin'>,
    firstLine: string,
    id = newId(),
    known: ServiceRecord | null = null,
  ): Promise<DeploymentRecord> {
    const deployment: DeploymentRecord = {
      id,
      serviceId,
      ...what,
      status: 'queued',
      imageTag: null,
      containerName: null,
      abortRequested: false,
      startedAt: null,
      finishedAt: null,
      createdAt: this.deps.clock.now(),
    };
    await this.deps.store.transaction(async (tx) => {
      await tx.deployments.insert(deployment);
      await this.publish(tx, 'deployment.queued', deployment, known);
    });
    await this.appendLog(deployment.id, 'stdout', firstLine);
    for (const listener of this.createdListeners) listener();
    return deployment;
  }

  /** The deployment serving now: the newest that went live (a cutover is what makes one succeed). */
  async live(serviceId: string): Promise<DeploymentRecord | null> {
    return (await this.deps.store.deployments.listLive(serviceId, 1))[0] ?? null;
  }

  /** Queues a deployment of every service of the project, in the order they were created. */
  /**
   * Every service of one environment of the project: the one named, or the default one (a staging or
   * preview copy is deployed only when asked for).
   */
  async createForProject(actor: Actor, projectId: string, environmentId?: string): Promise<DeploymentView[]> {
    assertWrite(actor);
    const project = await projectFor(this.deps.store, actor, projectId);
    const environment = environmentId
      ? await environmentFor(this.deps.store, actor, environmentId)
      : defaultEnvironment(await this.deps.store.environments.list([project.id]));
    if (environment && environment.projectId !== project.id)
      throw new ValidationError('environmentId', `Environment ${environmentId} is not an environment of project ${project.id}`);
    const services = environment ? await this.deps.store.projects.listServicesIn([environment.id]) : [];
    const queued: DeploymentView[] = [];
    for (const service of services) queued.push(await this.create(actor, service.id));
    return queued;
  }

  async list(actor: Actor, serviceId: string): Promise<DeploymentView[]> {
    const cached = this.listCache.get(serviceId);
    if (cached) {
      // The same 404 as serviceFor for a key that may not see the project.
      assertProjectVisible(actor, cached.projectId, 'Service', serviceId);
      return cached.deployments;
    }
    const version = this.deps.store.versionOf(LIST_TABLES);
    const service = await serviceFor(this.deps.store, actor, serviceId);
    const deployments = (await this.deps.store.deployments.list(service.id)).map(presentDeployment);
    this.listCache.set(service.id, { projectId: service.projectId, deployments }, version);
    return deployments;
  }

  async get(actor: Actor, deploymentId: string): Promise<DeploymentView> {
    return presentDeployment((await deploymentFor(this.deps.store, actor, deploymentId)).deployment);
  }

  /** The log so far, or the page of it after `afterId` (a long log is read in pages: one answer of 100,000 lines costs seconds to encode and decode). */
  async logs(
    actor: Actor,
    deploymentId: string,
    page: { afterId?: number | undefined; limit?: number | undefined } = {},
  ): Promise<DeploymentLogView[]> {
    const { deployment } = await deploymentFor(this.deps.store, actor, deploymentId);
    return (await this.deps.store.deployments.listLogs(deployment.id, page.afterId ?? 0, page.limit)).map(presentLogLine);
  }

  /**
   * A queued deployment ends `aborted` at once; a running one is flagged and its runner told,
   * and the runner moves it to `aborted` when its work has stopped. Finished ones: 409.
   */
  async abort(actor: Actor, deploymentId: string): Promise<void> {
    assertWrite(actor);
    const { deployment } = await deploymentFor(this.deps.store, actor, deploymentId);
    if (!isAbortable(deployment.status)) {
      throw new ConflictError(`The deployment is ${deployment.status} and can no longer be aborted`, { status: deployment.status });
    }
    const now = this.deps.clock.now();
    if (
      await this.deps.store.transaction(async (tx) => {
        const moved = await tx.deployments.transition(deployment.id, ['queued'], {
          status: 'aborted',
          abortRequested: true,
          finishedAt: now,
        });
        if (moved) await this.publish(tx, 'deployment.aborted', deployment, null, 'Aborted before it started');
        return moved;
      })
    ) {
      await this.appendLog(deployment.id, 'stdout', 'Deployment aborted before it started');
      this.deps.logBus.publish(deployment.id, { type: 'status', status: 'aborted' });
      return;
    }
    if (await this.deps.store.deployments.transition(deployment.id, ['running'], { abortRequested: true })) {
      await this.appendLog(deployment.id, 'stdout', 'Abort requested; stopping the deployment');
      for (const listener of this.abortListeners) listener(deployment.id);
      return;
    }
    const current = await this.deps.store.deployments.get(deployment.id);
    throw new ConflictError(`The deployment is ${current?.status ?? 'gone'} and can no longer be aborted`, { status: current?.status });
  }

  /** Stores log lines and hands them to live subscribers, in that order. */
  async appendLog(deploymentId: string, stream: LogStream, ...lines: string[]): Promise<DeploymentLogRecord[]> {
    const now = this.deps.clock.now();
    const records = await this.deps.store.deployments.appendLogs(
      deploymentId,
      lines.map((line) => ({ line, stream, createdAt: now })),
    );
    for (const record of records) this.deps.logBus.publish(deploymentId, { type: 'log', line: record });
    return records;
  }

  /**
   * The deployment log stream: a snapshot of the lines after `lastEventId`, then each new line,
   * with a keep-alive ping. It ends once the deployment has finished and every line was sent.
   */
  async stream(
    actor: Actor,
    deploymentId: string,
    opts: { lastEventId?: number | undefined; signal: AbortSignal },
  ): Promise<AsyncGenerator<DeploymentStreamEvent>> {
    // Access is checked before the first event, so a refusal is an HTTP error, not a broken stream.
    const { deployment } = await deploymentFor(this.deps.store, actor, deploymentId);
    return this.follow(deployment, opts);
  }

  private follow(
    deployment: DeploymentRecord,
    opts: { lastEventId?: number | undefined; signal: AbortSignal },
  ): AsyncGenerator<DeploymentStreamEvent> {
    const { store, logBus, config } = this.deps;
    return followJobLog(
      {
        lines: (afterId) => store.deployments.listLogs(deployment.id, afterId),
        ended: async () => isTerminal((await store.deployments.get(deployment.id))?.status ?? 'failed'),
        subscribe: (listener) => logBus.subscribe(deployment.id, listener),
        isEnd: isTerminal,
        runsHere: () => this.runningHere.has(deployment.id) || !this.peers(),
      },
      presentLogLine,
      { ...opts, pingMs: config.streamPingMs },
    );
  }

  // The queue side, for the runner. Every status move is a compare-and-set, followed by its event.

  listQueued(): Promise<DeploymentRecord[]> {
    return this.deps.store.deployments.listByStatus(['queued']);
  }

  listRunning(): Promise<DeploymentRecord[]> {
    return this.deps.store.deployments.listByStatus(['running']);
  }

  async claim(deployment: DeploymentRecord): Promise<DeploymentRecord | null> {
    const now = this.deps.clock.now();
    const claimed = await this.deps.store.transaction(async (tx) => {
      const moved = await tx.deployments.transition(deployment.id, ['queued'], { status: 'running', startedAt: now });
      if (moved) await this.publish(tx, 'deployment.started', deployment);
      return moved;
    });
    if (!claimed) return null;
    this.runningHere.add(deployment.id);
    this.deps.logBus.publish(deployment.id, { type: 'status', status: 'running' });
    return { ...deployment, status: 'running', startedAt: now };
  }

  async abortRequested(ids: string[]): Promise<string[]> {
    return (await this.deps.store.deployments.listByIds(ids)).filter((d) => d.abortRequested && d.status === 'running').map((d) => d.id);
  }

  async finish(deployment: DeploymentRecord, outcome: JobOutcome): Promise<void> {
    // A failure's reason is the last line its log has on stderr (the DeploymentFailure's message).
    const reason =
      outcome === 'succeeded'
        ? null
        : ((await this.deps.store.deployments.listLogTail(deployment.id, 20)).filter((l) => l.stream === 'stderr').at(-1)?.line ?? null);
    await this.deps.store.transaction(async (tx) => {
      if (await tx.deployments.transition(deployment.id, ['running'], { status: outcome, finishedAt: this.deps.clock.now() }))
        await this.publish(tx, `deployment.${outcome}`, deployment, null, reason);
    });
    this.runningHere.delete(deployment.id);
    this.deps.logBus.publish(deployment.id, { type: 'status', status: outcome });
  }

  /** A deployment's event, in the transaction of its move (the outbox: src/events). */
  private async publish(
    tx: Store,
    type:
      | 'deployment.queued'
      | 'deployment.started'
      | 'deployment.succeeded'
      | 'deployment.failed'
      | 'deployment.aborted'
      | 'deployment.superseded',
    deployment: DeploymentRecord,
    known: ServiceRecord | null = null,
    reason: string | null = null,
  ): Promise<void> {
    const service = known ?? (await tx.projects.getService(deployment.serviceId));
    if (!service) return;
    const current = known ? deployment : ((await tx.deployments.get(deployment.id)) ?? deployment);
    await this.deps.events.publish(
      type,
      { ...serviceRefOf(service), deploymentId: deployment.id, trigger: deployment.trigger, commitSha: current.commitSha, reason },
      { store: tx },
    );
  }

  recordCommit(deploymentId: string, commitSha: string): Promise<void> {
    return this.deps.store.deployments.update(deploymentId, { commitSha });
  }

  /** Written once, as the container starts: a failed deployment's row still names what it ran. */
  recordContainer(deploymentId: string, started: { containerName: string; imageTag: string }): Promise<void> {
    return this.deps.store.deployments.update(deploymentId, started);
  }
}
