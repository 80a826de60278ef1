/**
 * Where a service's replicas run, for what reads or enters a running container (runtime logs, metrics,
 * terminals; issue 31): on one server every replica is a plain container on the platform's own engine; on the
 * cluster a stateless service's replicas are the tasks of its Swarm service, each a container on some node's
 * engine, reached over mutual TLS (NodeEngines).
 */
export interface ReplicaLocation {
  serviceId: string;
  deploymentId: string | null;
  /** The container's id on the engine that runs it. */
  containerId: string;
  /** The swarm node that runs it (the manager's own node is the platform's engine). */
  nodeId: string;
  /** Swarm's task id. */
  taskId: string;
}

export interface ReplicaLocator {
  /**
   * The running tasks of the Swarm service that serves `serviceId` (its live deployment's), null when it runs
   * none: before the cluster formed (one settings read, no engine call) or for a service on plain containers.
   */
  tasksOf(serviceId: string, signal?: AbortSignal): Promise<ReplicaLocation[] | null>;
  /** Every running task of this install's services on the cluster; none before it formed (one settings read). */
  clusterTasks(signal?: AbortSignal): Promise<ReplicaLocation[]>;
}

/** A running task as the manager's Swarm API lists it (desired and current state `running`, a container made). */
export interface RunningSwarmTask {
  taskId: string;
  nodeId: string;
  containerId: string;
  /** Labels `slipway.service` and `slipway.deployment` of its container spec (null on a stranger's task). */
  serviceId: string | null;
  deploymentId: string | null;
}

/** Reads the tasks that run now, in one call to the manager. */
export interface SwarmTaskReader {
  runningTasks(signal?: AbortSignal): Promise<RunningSwarmTask[]>;
}
