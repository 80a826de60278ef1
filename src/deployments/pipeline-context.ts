import type { DeploymentRecord, ProjectRecord, ServiceRecord } from '../domain/types.js';
import type { JobLogWriter } from '../jobs/job-log-writer.js';

/** A step failed for a reason the user can act on; the message goes to the log as is. */
export class DeploymentFailure extends Error {}

/** What a deployment has made so far, so a failure removes exactly that and never what is live. */
export interface CreatedResources {
  image?: string;
  container?: string;
  /** The containers of the replicas after the first (see Rollout). */
  replicas?: string[];
  /** A database's previous containers, stopped before the new one took the data volume: started again if it fails. */
  stopped?: string[];
  /** When the previous database server stopped: how long the database was unavailable is logged from it. */
  downSince?: number;
}

export interface PipelineContext {
  deployment: DeploymentRecord;
  service: ServiceRecord;
  project: ProjectRecord;
  log: JobLogWriter;
  signal: AbortSignal;
  created: CreatedResources;
  /** The traffic slot the container takes, for a web service behind the proxy (see TrafficSlots). */
  slot?: { network: string; ip: string };
}

/**
 * The writes the pipeline makes to its deployment's row. DeploymentService owns the row; the
 * pipeline reaches it through this, so the container's name is written in one place.
 */
export interface DeploymentRecorder {
  recordCommit(deploymentId: string, commitSha: string): Promise<void>;
  recordContainer(deploymentId: string, started: { containerName: string; imageTag: string }): Promise<void>;
}

export function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw signal.reason instanceof Error ? signal.reason : new Error('aborted');
}

/** Resolves after `ms`, or at once when the signal aborts (the caller then sees it aborted). */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
