import type { DeploymentRecord } from '../domain/types.js';
import type { EnvService } from '../env/env.service.js';
import type { JobClaims } from '../jobs/control-plane.js';
import { JobAborted } from '../jobs/job-kind.js';
import type { JobLogWriter } from '../jobs/job-log-writer.js';
import { JobRunner, type RunnerLog } from '../jobs/job-runner.js';
import type { ServiceDeps } from '../platform/deps.js';
import type { RoutingService } from '../routing/routing.service.js';
import type { TrafficSlots } from './traffic-slots.js';
import { CurrentContainers } from './current-containers.js';
import { DeploymentJobs } from './deployment-job.js';
import { DeploymentPipeline } from './deployment-pipeline.js';
import type { DeploymentService } from './deployment.service.js';
import { Reconciler, ReconcileLoop } from './reconcile.js';
import { Rollout } from './rollout.js';
import type { RuntimeDeps } from './runtime-deps.js';

/** How often a pass runs while a service on the cluster runs short of tasks (passWhileShort), and for how long at most. */
const QUICK_PASS_MS = 2_000;
const QUICK_PASSES_FOR_MS = 60_000;

/**
 * Deployments at runtime, composed: the JobRunner takes queued deployments from the table (one per
 * service, at most `buildConcurrency` at once) and runs each as a rollout; the reconcile loop keeps
 * the runtime as the table says, and holds claims back while the engine is away.
 */
export class DeployRunner {
  private readonly jobs: JobRunner<DeploymentRecord, JobLogWriter>;
  private readonly reconciler: Reconciler;
  private readonly loop: ReconcileLoop;
  /** The check of the cluster's routed tasks, every health interval (Reconciler.probeSwarmTasks). */
  private probeTimer: NodeJS.Timeout | null = null;
  private probing: Promise<void> | null = null;
  private shortSince: number | null = null;
  private quickPassAt = 0;
  private stopWatching: (() => void) | null = null;

  constructor(
    private readonly deps: ServiceDeps,
    private readonly runtime: RuntimeDeps,
    deployments: DeploymentService,
    env: EnvService,
    routing: RoutingService,
    /** Null without a traffic gate or a proxy: cutovers then reload the proxy with the new address. */
    slots: TrafficSlots | null,
    private readonly log: RunnerLog = () => {},
    /** Which process holds each deployment, with several on one database (src/jobs/control-plane.ts). */
    claims?: JobClaims,
  ) {
    const containers = new CurrentContainers(deps, runtime.engine);
    const pipeline = new DeploymentPipeline(deps, runtime, env, deployments);
    const rollout = new Rollout(deps, runtime, routing, slots, containers, pipeline, () => this.jobs.stopping);
    const kind = new DeploymentJobs(deps, deployments, rollout, containers, {
      readyToClaim: () => this.loop.engineReachable(),
      recoverRuntime: () => this.reconciler.recoverRuntime(),
    });
    this.jobs = new JobRunner(kind, { concurrency: () => deps.config.deploy.buildConcurrency, log, ...(claims ? { claims } : {}) });
    this.reconciler = new Reconciler(
      deps,
      runtime,
      routing,
      slots,
      containers,
      rollout,
      {
        services: () => this.jobs.busyKeys(),
        holds: (id) => this.jobs.holds(id),
        stopping: () => this.jobs.stopping,
      },
      log,
      (serviceId) => deployments.moveToCluster(serviceId),
    );
    this.loop = new ReconcileLoop(
      runtime.engine,
      {
        recovered: () => this.jobs.recovered,
        recover: () => this.jobs.recover(),
        reconcile: () => this.reconciler.reconcile(),
      },
      log,
    );
    deployments.onAbort((id) => this.jobs.abort(id));
    deployments.onCreated(() => this.jobs.wake());
  }

  /** Recovers from whatever a previous process left (once the engine answers), then takes work. */
  async start(): Promise<void> {
    // Otherwise a paused runner shows only queued deployments, which reads as a hang.
    if (this.deps.config.deploy.buildConcurrency === 0)
      this.log('the deploy runner is paused (BUILD_CONCURRENCY=0): deployments stay queued');
    this.jobs.start();
    await this.loop.maintain();
    this.loop.start();
    const interval = this.deps.config.routing.healthIntervalMs;
    this.probeTimer ??= setInterval(() => {
      // One check at a time: a slow one (a loaded host) is not joined by the next.
      this.probing ??= this.reconciler
        .probeSwarmTasks(interval)
        .then(() => this.passWhileShort())
        .catch((error: Error) => this.log('the check of the cluster tasks failed', { error: error.message }))
        .finally(() => {
          this.probing = null;
        });
    }, interval);
    this.stopWatching ??=
      this.runtime.exits?.watch(
        (exit) =>
          void this.containerExited(exit.serviceId, exit.containerId).catch((error: Error) =>
            this.log('a replica that died could not be taken out of the routes', { error: error.message }),
          ),
        this.log,
      ) ?? null;
    this.jobs.wake();
  }

  /** Stops taking work and interrupts what runs; those deployments end `failed`, saying why. */
  async stop(): Promise<void> {
    this.stopWatching?.();
    this.stopWatching = null;
    if (this.probeTimer) clearInterval(this.probeTimer);
    this.probeTimer = null;
    const loopStopped = this.loop.stop();
    await this.jobs.stop();
    await loopStopped;
    await this.probing;
  }

  /** One maintenance pass (see ReconcileLoop.maintain). */
  maintain(): Promise<void> {
    return this.loop.maintain();
  }

  reconcile(): Promise<void> {
    return this.reconciler.reconcile();
  }

  /** A service's container died (Docker's `die`): a replica leaves the routes now, and the next pass replaces it. */
  async containerExited(serviceId: string, containerId: string): Promise<void> {
    await this.reconciler.replicaExited(serviceId, containerId);
    void this.loop.passNow().catch(() => {});
  }

  /**
   * While a service on the cluster runs short of answering tasks (a node lost), a pass every QUICK_PASS_MS routes the
   * tasks Swarm starts in their place as soon as they run; for QUICK_PASSES_FOR_MS at most (a task no node can take
   * stays pending), then the 10-second passes.
   */
  private passWhileShort(): void {
    if (!this.reconciler.runningShort()) {
      this.shortSince = null;
      return;
    }
    const now = Date.now();
    this.shortSince ??= now;
    if (now - this.shortSince > QUICK_PASSES_FOR_MS || now - this.quickPassAt < QUICK_PASS_MS) return;
    this.quickPassAt = now;
    void this.loop.passNow().catch(() => {});
  }

  /** A maintenance pass now, in turn with the loop's (see ReconcileLoop.passNow). */
  passNow(): Promise<void> {
    return this.loop.passNow();
  }

  wake(): void {
    this.jobs.wake();
  }

  /** Ends the deployments of services about to be deleted, and waits until they have stopped writing. */
  stopDeploymentsOf(serviceIds: string[]): Promise<void> {
    return this.jobs.abortKeys(serviceIds, new JobAborted('the service is being deleted'));
  }
}
