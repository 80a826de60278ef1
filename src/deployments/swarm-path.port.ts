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

/** A deployment's Swarm service, started and healthy beside the serving one. */
export interface SwarmStarted {
  /** Its name (what the deployment's row records as its runner). */
  name: string;
  /** Its tasks' `ip:port` (or `node:port`) upstreams: what the routes name next. */
  upstreams: string[];
  /** The service's earlier Swarm services, serving until the routes leave them: `retire` removes them then. */
  previous: string[];
}

export interface SwarmPath {
  /** Whether stateless services run on Swarm now (the cluster formed and more than one server is ready). */
  active(signal?: AbortSignal): Promise<boolean>;
  /**
   * Pushes the deployment's image to the cluster's registry and starts the deployment's own Swarm service beside
   * the serving one (docs/cluster.md), and answers once every replica of it runs healthy. The serving service is
   * untouched: the caller switches the routes, drains, then retires it. Throws a DeploymentFailure with the reason
   * when the new replicas do not all run (the new service is removed again; the earlier one serves on).
   */
  rollOut(input: SwarmRolloutInput): Promise<SwarmStarted>;
  /** Removes earlier Swarm services of a deployment once the routes have left them (Swarm stops their tasks with SIGTERM, then the grace period). */
  retire(names: string[], signal?: AbortSignal): Promise<void>;
  /** The service's serving Swarm service as it runs now: its replica count and the running tasks' upstreams; null when it has none. */
  current(service: ServiceRecord, signal?: AbortSignal): Promise<{ replicas: number | null; upstreams: string[] } | null>;
  scale(service: ServiceRecord, replicas: number, signal?: AbortSignal): Promise<void>;
  /**
   * Removes the service's Swarm services that neither serve nor belong to a deployment under way: what a deployment
   * cut short (a crash between its start and its cleanup) left behind. Answers their names.
   */
  prune(service: ServiceRecord, signal?: AbortSignal): Promise<string[]>;
  /** Every Swarm service of the service goes (the service was deleted); none is fine. */
  remove(serviceId: string, signal?: AbortSignal): Promise<void>;
}
