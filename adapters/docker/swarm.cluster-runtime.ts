import type Docker from 'dockerode';
import type { ClusterRuntime, EngineInfo, NodeChange, RuntimeTask, SwarmNode } from '../../src/cluster/cluster-runtime.port.js';
import { LABELS } from '../../src/deployments/container-engine.port.js';

const CALL_TIMEOUT_MS = 15_000;
/** `docker swarm init` waits for the raft store and the first certificates. */
const INIT_TIMEOUT_MS = 60_000;
const SWARM_TASK_LABEL = 'com.docker.swarm.task.id';

interface NodeInfo {
  ID: string;
  Version: { Index: number };
  Spec: { Role: 'manager' | 'worker'; Availability: 'active' | 'drain' | 'pause'; Labels?: Record<string, string>; Name?: string };
  Description?: {
    Hostname?: string;
    Engine?: { EngineVersion?: string };
    Resources?: { NanoCPUs?: number; MemoryBytes?: number };
  };
  Status?: { State?: string; Addr?: string };
  ManagerStatus?: { Addr?: string };
}

interface TaskInfo {
  ID: string;
  ServiceID: string;
  NodeID?: string;
  DesiredState?: string;
  Status?: { State?: string; ContainerStatus?: { ContainerID?: string } };
  Spec?: {
    ContainerSpec?: { Labels?: Record<string, string> };
    Resources?: { Reservations?: { NanoCPUs?: number; MemoryBytes?: number } };
  };
}

/**
 * The manager's engine (the platform's own, DOCKER_SOCKET) as the cluster's runtime: Swarm mode
 * through dockerode, and on a single server this installation's containers as its "tasks".
 */
export class SwarmClusterRuntime implements ClusterRuntime {
  constructor(
    private readonly docker: Docker,
    private readonly instanceId: string,
  ) {}

  async info(signal?: AbortSignal): Promise<EngineInfo> {
    const info = (await (this.docker as unknown as WithOptions).info({ abortSignal: timeout(signal) })) as {
      ServerVersion?: string;
      Name?: string;
      NCPU?: number;
      MemTotal?: number;
      Swarm?: { LocalNodeState?: string; NodeID?: string };
    };
    const state = info.Swarm?.LocalNodeState ?? 'inactive';
    return {
      version: info.ServerVersion ?? '',
      hostname: info.Name ?? '',
      cpus: info.NCPU ?? 0,
      memoryBytes: info.MemTotal ?? 0,
      swarm: (['inactive', 'pending', 'active', 'error', 'locked'].includes(state) ? state : 'error') as EngineInfo['swarm'],
      nodeId: info.Swarm?.NodeID || null,
    };
  }

  async initSwarm(advertiseAddress: string, signal?: AbortSignal): Promise<string> {
    const id = await this.docker.swarmInit({
      _body: { ListenAddr: '0.0.0.0:2377', AdvertiseAddr: advertiseAddress, ForceNewCluster: false },
      abortSignal: timeout(signal, INIT_TIMEOUT_MS),
    } as object);
    return String(id).replace(/"/g, '').trim();
  }

  async workerJoinToken(signal?: AbortSignal): Promise<string> {
    const swarm = (await (this.docker as unknown as WithOptions).swarmInspect({ abortSignal: timeout(signal) })) as {
      JoinTokens?: { Worker?: string };
    };
    const token = swarm.JoinTokens?.Worker;
    if (!token) throw new Error('The swarm did not give a worker join token');
    return token;
  }

  async nodes(signal?: AbortSignal): Promise<SwarmNode[]> {
    const nodes = (await this.docker.listNodes({ abortSignal: timeout(signal) } as object)) as NodeInfo[];
    return nodes.map((node) => ({
      id: node.ID,
      hostname: node.Description?.Hostname ?? '',
      role: node.Spec.Role,
      availability: node.Spec.Availability,
      state: node.Status?.State ?? 'unknown',
      // A manager's Status.Addr can be 0.0.0.0 (Docker 20.10): its ManagerStatus names the advertised address.
      address: usable(node.Status?.Addr) ?? node.ManagerStatus?.Addr?.replace(/:\d+$/, '') ?? '',
      engineVersion: node.Description?.Engine?.EngineVersion ?? '',
      labels: node.Spec.Labels ?? {},
      cpus: (node.Description?.Resources?.NanoCPUs ?? 0) / 1e9,
      memoryBytes: node.Description?.Resources?.MemoryBytes ?? 0,
    }));
  }

  async updateNode(nodeId: string, change: NodeChange, signal?: AbortSignal): Promise<void> {
    // The spec is replaced whole and versioned: read it, change it, write it back (retried once on a race).
    for (let attempt = 0; ; attempt++) {
      const node = this.docker.getNode(nodeId);
      const info = (await node.inspect({ abortSignal: timeout(signal) } as object)) as NodeInfo;
      const spec = {
        ...info.Spec,
        ...(change.availability ? { Availability: change.availability } : {}),
        ...(change.labels ? { Labels: change.labels } : {}),
      };
      try {
        await node.update({ _query: { version: info.Version.Index }, _body: spec, abortSignal: timeout(signal) } as object);
        return;
      } catch (error) {
        if (attempt === 0 && /update out of sequence/i.test((error as Error).message)) continue;
        throw error;
      }
    }
  }

  async removeNode(nodeId: string, force: boolean, signal?: AbortSignal): Promise<void> {
    try {
      await this.docker.getNode(nodeId).remove({ _query: { force }, abortSignal: timeout(signal) } as object);
    } catch (error) {
      if ((error as { statusCode?: number }).statusCode !== 404) throw error;
    }
  }

  async tasks(signal?: AbortSignal): Promise<RuntimeTask[]> {
    const info = await this.info(signal);
    const [swarmTasks, containers] = await Promise.all([info.swarm === 'active' ? this.swarmTasks(signal) : [], this.containers(signal)]);
    return [...swarmTasks, ...containers];
  }

  private async swarmTasks(signal?: AbortSignal): Promise<RuntimeTask[]> {
    const [tasks, services] = await Promise.all([
      this.docker.listTasks({ abortSignal: timeout(signal) } as object) as Promise<TaskInfo[]>,
      this.docker.listServices({ abortSignal: timeout(signal) } as object) as Promise<
        Array<{ ID: string; Spec?: { Name?: string; Labels?: Record<string, string> } }>
      >,
    ]);
    const byId = new Map(services.map((s) => [s.ID, s]));
    return tasks.map((task) => {
      const service = byId.get(task.ServiceID);
      const labels = { ...service?.Spec?.Labels, ...task.Spec?.ContainerSpec?.Labels };
      const mine = labels[LABELS.instance] === this.instanceId;
      return {
        id: task.ID,
        serviceId: mine ? (labels[LABELS.service] ?? null) : null,
        name: service?.Spec?.Name ?? task.ServiceID,
        nodeId: task.NodeID ?? null,
        state: task.Status?.State ?? 'unknown',
        desiredState: task.DesiredState ?? 'unknown',
        containerId: task.Status?.ContainerStatus?.ContainerID ?? null,
        reservedCpus: (task.Spec?.Resources?.Reservations?.NanoCPUs ?? 0) / 1e9,
        reservedMemoryBytes: task.Spec?.Resources?.Reservations?.MemoryBytes ?? 0,
      };
    });
  }

  /** This installation's plain containers on the local engine (what a single server runs). */
  private async containers(signal?: AbortSignal): Promise<RuntimeTask[]> {
    const list = (await this.docker.listContainers({
      all: false,
      filters: { label: [`${LABELS.instance}=${this.instanceId}`] },
      abortSignal: timeout(signal),
    } as object)) as Array<{ Id: string; Names?: string[]; State?: string; Labels?: Record<string, string> }>;
    const plain = list.filter((c) => !c.Labels?.[SWARM_TASK_LABEL]);
    return Promise.all(
      plain.map(async (c) => {
        const inspected = (await this.docker
          .getContainer(c.Id)
          .inspect({ abortSignal: timeout(signal) } as object)
          .catch(() => null)) as { HostConfig?: { MemoryReservation?: number; NanoCpus?: number } } | null;
        return {
          id: c.Id,
          serviceId: c.Labels?.[LABELS.service] ?? null,
          name: (c.Names?.[0] ?? c.Id).replace(/^\//, ''),
          nodeId: null,
          state: c.State ?? 'unknown',
          desiredState: 'running',
          containerId: c.Id,
          // A plain container reserves what it is limited to: Docker keeps that much for it.
          reservedCpus: (inspected?.HostConfig?.NanoCpus ?? 0) / 1e9,
          reservedMemoryBytes: inspected?.HostConfig?.MemoryReservation ?? 0,
        };
      }),
    );
  }
}

/** Calls the typings give only a callback form, though dockerode takes options (an abort signal) too. */
interface WithOptions {
  info(options: object): Promise<unknown>;
  swarmInspect(options: object): Promise<unknown>;
}

function usable(address: string | undefined): string | undefined {
  return address && address !== '0.0.0.0' ? address : undefined;
}

function timeout(signal?: AbortSignal, ms = CALL_TIMEOUT_MS): AbortSignal {
  return signal ? AbortSignal.any([signal, AbortSignal.timeout(ms)]) : AbortSignal.timeout(ms);
}
