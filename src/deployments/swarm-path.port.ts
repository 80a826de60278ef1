import type { DeploymentRecord, ServiceRecord } from '../domain/types.js';
import type { JobLogWriter } from '../jobs/job-log-writer.js';

/**
 * The cluster's way of running a stateless service (issue 31; docs/cluster.md): once the install has more
 * than one ready server, a service's replicas are one Swarm service instead of plain containers on the host.
 * Implemented in src/cluster/swarm-path.ts; absent (or inactive) on a single server, which keeps plain
 * containers exactly as before.
 */
/** What a deployment hands the Swarm path to roll out. */
export interface SwarmRolloutInput {
  service: ServiceRecord;
  deployment: DeploymentRecord;
  imageTag: string;
  env: Record<string, string>;
  log: JobLogWriter;
  signal: AbortSignal;
}

export interface SwarmPath {
  /** Whether stateless services run on Swarm now (the cluster formed and more than one server is ready). */
  active(signal?: AbortSignal): Promise<boolean>;
  /** The Swarm service's name for a service (what the deployment's row records as its runner). */
  serviceName(serviceId: string): string;
  /**
   * Pushes the deployment's image to the cluster's registry, rolls the service's Swarm service to it (start-first,
   * one task at a time, health-checked; Swarm rolls back on a failure and the old tasks serve on) and answers the
   * new tasks' `ip:port` upstreams. Throws a DeploymentFailure with the reason when the rollout does not complete.
   */
  rollOut(input: SwarmRolloutInput): Promise<string[]>;
  /** The service's Swarm service as it runs now: its replica count and the running tasks' upstreams; null when it has none. */
  current(service: ServiceRecord, signal?: AbortSignal): Promise<{ replicas: number | null; upstreams: string[] } | null>;
  scale(service: ServiceRecord, replicas: number, signal?: AbortSignal): Promise<void>;
  /** The service's Swarm service goes (the service was deleted); a missing one is fine. */
  remove(serviceId: string, signal?: AbortSignal): Promise<void>;
}
