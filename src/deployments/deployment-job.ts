import type { DeploymentRecord } from '../domain/types.js';
import { JobAborted, type JobContext, type JobKind } from '../jobs/job-kind.js';
import { JobLogWriter } from '../jobs/job-log-writer.js';
import type { JobOutcome } from '../jobs/job-queue.port.js';
import type { ServiceDeps } from '../platform/deps.js';
import { serves, type CurrentContainers } from './current-containers.js';
import type { DeploymentService } from './deployment.service.js';
import { DeploymentFailure } from './pipeline-context.js';
import type { Rollout, RolloutAttempt } from './rollout.js';

/** What the kind leaves to the runtime around it: the engine gate and the runtime's own recovery. */
export interface DeploymentJobHooks {
  readyToClaim(): Promise<boolean>;
  recoverRuntime(): Promise<void>;
}

/**
 * Deployments as a kind of durable job: the table is DeploymentService's, one deployment runs at a
 * time per service, and the work is a rollout. What the user reads in the log, and the service's
 * and project's status afterwards, are decided here.
 */
export class DeploymentJobs implements JobKind<DeploymentRecord, JobLogWriter> {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly deployments: DeploymentService,
    private readonly rollout: Rollout,
    private readonly containers: CurrentContainers,
    private readonly hooks: DeploymentJobHooks,
  ) {}

  get queue(): DeploymentService {
    return this.deployments;
  }

  keyOf(deployment: DeploymentRecord): string {
    return deployment.serviceId;
  }

  openLog(deployment: DeploymentRecord): JobLogWriter {
    return new JobLogWriter((stream, lines) => this.deployments.appendLog(deployment.id, stream, ...lines));
  }

  readyToClaim(): Promise<boolean> {
    return this.hooks.readyToClaim();
  }

  /** Its container may be half-started and its traffic half-switched: recoverRuntime sorts that out; the user deploys again. */
  async interrupted(_deployment: DeploymentRecord, log: JobLogWriter): Promise<JobOutcome> {
    log.write('The server stopped while this deployment was running; it was not finished. Deploy again.', 'stderr');
    return 'failed';
  }

  recover(): Promise<void> {
    return this.hooks.recoverRuntime();
  }

  async run(deployment: DeploymentRecord, { signal, log }: JobContext<JobLogWriter>): Promise<JobOutcome> {
    const attempt: RolloutAttempt = { created: {} };
    const service = await this.deps.store.projects.getService(deployment.serviceId);
    const project = service ? await this.deps.store.projects.get(service.projectId) : null;
    try {
      if (!service || !project) throw new DeploymentFailure('The service was deleted');
      // An active service stays active while it deploys: nothing to write then (a write also makes the routes' table be read again).
      if (service.status !== 'active') await this.deps.store.projects.updateService(service.id, { status: 'deploying' });
      log.write(`Deployment ${deployment.id} started`);
      const result = await this.rollout.run(attempt, { deployment, service, project, log, signal });
      const now = this.deps.clock.now();
      await this.deps.store.projects.updateService(service.id, {
        status: 'active',
        reachable: serves(service),
        lastDeployedAt: now,
        updatedAt: now,
      });
      await this.deps.store.projects.update(project.id, { status: 'active', updatedAt: now });
      log.write(`Deployment succeeded: ${result.container.name}`);
      return 'succeeded';
    } catch (error) {
      const aborted = error instanceof JobAborted || signal.reason instanceof JobAborted;
      const reason =
        error instanceof DeploymentFailure
          ? error.message
          : signal.reason instanceof Error
            ? signal.reason.message
            : `Internal error: ${(error as Error).message}`;
      log.write(
        aborted ? 'Deployment aborted; the previous container keeps serving' : `Deployment failed: ${reason}`,
        aborted ? 'stdout' : 'stderr',
      );
      await this.rollout.abandon(attempt, log);
      if (service && !(await this.containers.currentOf(service)))
        await this.deps.store.projects.updateService(service.id, { status: 'failed', reachable: false });
      return aborted ? 'aborted' : 'failed';
    } finally {
      this.rollout.end(attempt);
    }
  }
}
