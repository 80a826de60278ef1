import type { ServiceDeps } from '../platform/deps.js';
import type { ClusterSettings } from './cluster-settings.js';
import type { ReplicaLocation, ReplicaLocator, RunningSwarmTask, SwarmTaskReader } from './replica-locator.port.js';
import type { SwarmServices } from './swarm-services.port.js';

const CALL_TIMEOUT_MS = 5_000;

/**
 * Finds a service's tasks on the cluster (docs/cluster.md, "Logs, metrics and terminals on any server"): the
 * Swarm service of its live deployment (a deployment under way has its own beside it, which serves nothing yet),
 * and that service's running tasks with their nodes and containers. A single server reads one setting and stops.
 */
export class SwarmReplicaLocator implements ReplicaLocator {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly settings: ClusterSettings,
    private readonly services: SwarmServices,
    private readonly tasks: SwarmTaskReader,
  ) {}

  async tasksOf(serviceId: string, signal?: AbortSignal): Promise<ReplicaLocation[] | null> {
    if (!(await this.settings.formed())) return null;
    const bounded = withTimeout(signal);
    const entries = await this.services.list(serviceId, bounded);
    if (entries.length === 0) return null;
    const live = (await this.deps.store.deployments.listLive(serviceId, 1))[0];
    const serving = entries.find((entry) => entry.deploymentId === live?.id);
    // A live deployment with no Swarm service runs plain containers (deployed while one server was ready): those serve.
    if (live && !serving) return null;
    const deploymentId = (serving ?? entries[entries.length - 1]!).deploymentId;
    return (await this.tasks.runningTasks(bounded))
      .filter((task) => task.serviceId === serviceId && task.deploymentId === deploymentId)
      .map(locationOf);
  }

  async clusterTasks(signal?: AbortSignal): Promise<ReplicaLocation[]> {
    if (!(await this.settings.formed())) return [];
    const running = await this.tasks.runningTasks(withTimeout(signal));
    // Only this install's services: another install's tasks on the same swarm are not ours to read.
    const ids = [...new Set(running.flatMap((task) => (task.serviceId ? [task.serviceId] : [])))];
    const ours = new Set<string>();
    for (const id of ids) if (await this.deps.store.projects.getService(id)) ours.add(id);
    return running.filter((task) => task.serviceId && ours.has(task.serviceId)).map(locationOf);
  }
}

function locationOf(task: RunningSwarmTask): ReplicaLocation {
  return {
    serviceId: task.serviceId ?? '',
    deploymentId: task.deploymentId,
    containerId: task.containerId,
    nodeId: task.nodeId,
    taskId: task.taskId,
  };
}

function withTimeout(signal?: AbortSignal): AbortSignal {
  return signal ? AbortSignal.any([signal, AbortSignal.timeout(CALL_TIMEOUT_MS)]) : AbortSignal.timeout(CALL_TIMEOUT_MS);
}
