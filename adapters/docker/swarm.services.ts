import type Docker from 'dockerode';
import type {
  SwarmServiceEntry,
  SwarmServiceSpec,
  SwarmServiceStatus,
  SwarmServices,
  SwarmTask,
  SwarmUpdateState,
} from '../../src/cluster/swarm-services.port.js';
import type { RunningSwarmTask, SwarmTaskReader } from '../../src/cluster/replica-locator.port.js';
import { LABELS } from '../../src/deployments/container-engine.port.js';

const CALL_TIMEOUT_MS = 15_000;
const NS_PER_MS = 1_000_000;

interface ServiceInfo {
  ID: string;
  Version: { Index: number };
  Spec: { Mode?: { Replicated?: { Replicas?: number } }; TaskTemplate?: { ContainerSpec?: { Labels?: Record<string, string> } } } & Record<
    string,
    unknown
  >;
  UpdateStatus?: { State?: string; Message?: string };
}

interface TaskInfo {
  ID: string;
  NodeID?: string;
  DesiredState?: string;
  Status?: {
    State?: string;
    Err?: string;
    Message?: string;
    ContainerStatus?: { ContainerID?: string };
    PortStatus?: { Ports?: { PublishedPort?: number }[] };
  };
  Spec?: { ContainerSpec?: { Labels?: Record<string, string> } };
  NetworksAttachments?: { Network?: { Spec?: { Name?: string } }; Addresses?: string[] }[];
}

/** Swarm services on the manager's engine through dockerode (no shell; every call bounded by a timeout). */
export class DockerSwarmServices implements SwarmServices, SwarmTaskReader {
  constructor(private readonly docker: Docker) {}

  async runningTasks(signal?: AbortSignal): Promise<RunningSwarmTask[]> {
    const tasks = (await this.docker.listTasks({
      filters: { 'desired-state': ['running'] },
      abortSignal: timeout(signal),
    } as object)) as TaskInfo[];
    return tasks.flatMap((task) => {
      const containerId = task.Status?.ContainerStatus?.ContainerID;
      if (task.Status?.State !== 'running' || !containerId || !task.NodeID) return [];
      const labels = task.Spec?.ContainerSpec?.Labels ?? {};
      return [
        {
          taskId: task.ID,
          nodeId: task.NodeID,
          containerId,
          serviceId: labels[LABELS.service] ?? null,
          deploymentId: labels[LABELS.deployment] ?? null,
        },
      ];
    });
  }

  async ensureNetwork(name: string, signal?: AbortSignal): Promise<void> {
    const existing = (await this.docker.listNetworks({ filters: { name: [name] }, abortSignal: timeout(signal) } as object)) as {
      Name: string;
    }[];
    if (existing.some((network) => network.Name === name)) return;
    try {
      await this.docker.createNetwork({
        Name: name,
        Driver: 'overlay',
        // Attachable: the proxy's container on the manager joins it to dial the tasks' addresses (dnsrr).
        Attachable: true,
        CheckDuplicate: true,
        Labels: { [LABELS.managed]: 'true' },
        abortSignal: timeout(signal),
      } as Docker.NetworkCreateOptions);
    } catch (error) {
      if (!/already exists/i.test(String((error as Error).message))) throw error;
    }
  }

  async apply(spec: SwarmServiceSpec, signal?: AbortSignal): Promise<void> {
    const body = serviceBody(spec);
    const auth = spec.registryAuth ?? undefined;
    const current = await this.inspect(spec.name, signal);
    if (!current) {
      await this.docker.createService(auth as never, { _body: body, abortSignal: timeout(signal) } as never);
      return;
    }
    await this.docker
      .getService(current.ID)
      .update(
        auth as never,
        { _query: { version: current.Version.Index, registryAuthFrom: 'spec' }, _body: body, abortSignal: timeout(signal) } as never,
      );
  }

  async list(serviceId: string, signal?: AbortSignal): Promise<SwarmServiceEntry[]> {
    const found = (await this.docker.listServices({
      filters: { label: [`${LABELS.service}=${serviceId}`] },
      abortSignal: timeout(signal),
    } as object)) as unknown as (ServiceInfo & { CreatedAt?: string })[];
    return found
      .map((service) => ({
        name: String(service.Spec.Name ?? service.ID),
        deploymentId: service.Spec.TaskTemplate?.ContainerSpec?.Labels?.[LABELS.deployment] ?? null,
        createdAt: service.CreatedAt ?? '',
      }))
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  }

  async status(name: string, signal?: AbortSignal): Promise<SwarmServiceStatus> {
    const current = await this.inspect(name, signal);
    if (!current) return { exists: false, updateState: 'none', updateMessage: '', deploymentId: null, replicas: null };
    return {
      exists: true,
      updateState: (current.UpdateStatus?.State as SwarmUpdateState | undefined) ?? 'none',
      updateMessage: current.UpdateStatus?.Message ?? '',
      deploymentId: current.Spec.TaskTemplate?.ContainerSpec?.Labels?.[LABELS.deployment] ?? null,
      replicas: current.Spec.Mode?.Replicated?.Replicas ?? null,
    };
  }

  async tasks(name: string, network: string, signal?: AbortSignal): Promise<SwarmTask[]> {
    const tasks = (await this.docker.listTasks({ filters: { service: [name] }, abortSignal: timeout(signal) } as object)) as TaskInfo[];
    const published = tasks.some((task) => task.Status?.PortStatus?.Ports?.length);
    const nodes = published ? await this.nodeAddresses(signal) : new Map<string, string>();
    return tasks.map((task) => {
      const attachment = task.NetworksAttachments?.find((each) => each.Network?.Spec?.Name === network);
      const address = attachment?.Addresses?.[0]?.split('/')[0] ?? null;
      const port = task.Status?.PortStatus?.Ports?.[0]?.PublishedPort;
      const nodeAddress = task.NodeID ? nodes.get(task.NodeID) : undefined;
      return {
        id: task.ID,
        nodeId: task.NodeID ?? null,
        state: task.Status?.State ?? 'unknown',
        desiredState: task.DesiredState ?? 'unknown',
        address,
        endpoint: port && nodeAddress ? `${nodeAddress}:${port}` : null,
        deploymentId: task.Spec?.ContainerSpec?.Labels?.[LABELS.deployment] ?? null,
        error: task.Status?.Err ?? null,
      };
    });
  }

  async scale(name: string, replicas: number, signal?: AbortSignal): Promise<void> {
    const current = await this.inspect(name, signal);
    if (!current) return;
    const spec = { ...current.Spec, Mode: { Replicated: { Replicas: replicas } } };
    await this.docker.getService(current.ID).update({
      // The credentials from the current spec: after Swarm's rollback a service has no previous spec.
      _query: { version: current.Version.Index, registryAuthFrom: 'spec' },
      _body: spec,
      abortSignal: timeout(signal),
    } as never);
  }

  async remove(name: string, signal?: AbortSignal): Promise<void> {
    const current = await this.inspect(name, signal);
    if (!current) return;
    await this.docker.getService(current.ID).remove({ abortSignal: timeout(signal) } as never);
  }

  /** Each node's address; a manager may report 0.0.0.0 there, its manager address then says it. */
  private async nodeAddresses(signal?: AbortSignal): Promise<Map<string, string>> {
    const nodes = (await this.docker.listNodes({ abortSignal: timeout(signal) } as object)) as {
      ID: string;
      Status?: { Addr?: string };
      ManagerStatus?: { Addr?: string };
    }[];
    return new Map(
      nodes.flatMap((node) => {
        const addr = node.Status?.Addr && node.Status.Addr !== '0.0.0.0' ? node.Status.Addr : node.ManagerStatus?.Addr?.split(':')[0];
        return addr ? [[node.ID, addr] as [string, string]] : [];
      }),
    );
  }

  private async inspect(name: string, signal?: AbortSignal): Promise<ServiceInfo | null> {
    try {
      return (await this.docker.getService(name).inspect({ abortSignal: timeout(signal) } as never)) as unknown as ServiceInfo;
    } catch (error) {
      if ((error as { statusCode?: number }).statusCode === 404) return null;
      throw error;
    }
  }
}

/** The Engine API's ServiceSpec for a deployment's Swarm service: dnsrr, a web task's port published on its node (host mode). */
export function serviceBody(spec: SwarmServiceSpec): Record<string, unknown> {
  const labels = { [LABELS.managed]: 'true', [LABELS.service]: spec.serviceId, [LABELS.deployment]: spec.deploymentId };
  const { cpuLimit, memoryLimitMb, cpuReservation, memoryReservationMb } = spec.resources;
  const health = spec.health;
  return {
    Name: spec.name,
    Labels: labels,
    TaskTemplate: {
      ContainerSpec: {
        Image: spec.image,
        ...(spec.command ? { Command: spec.command } : {}),
        Env: Object.entries(spec.env).map(([key, value]) => `${key}=${value}`),
        Labels: labels,
        StopGracePeriod: spec.stopGraceMs * NS_PER_MS,
        ...(health.command
          ? {
              Healthcheck: {
                Test: ['CMD', ...health.command],
                Interval: health.intervalMs * NS_PER_MS,
                Timeout: health.timeoutMs * NS_PER_MS,
                Retries: health.retries,
                StartPeriod: health.startPeriodMs * NS_PER_MS,
              },
            }
          : {}),
      },
      Resources: {
        Limits: {
          ...(cpuLimit ? { NanoCPUs: Math.round(cpuLimit * 1e9) } : {}),
          ...(memoryLimitMb ? { MemoryBytes: memoryLimitMb * 1024 * 1024 } : {}),
        },
        Reservations: {
          ...(cpuReservation ? { NanoCPUs: Math.round(cpuReservation * 1e9) } : {}),
          ...(memoryReservationMb ? { MemoryBytes: memoryReservationMb * 1024 * 1024 } : {}),
        },
      },
      RestartPolicy: { Condition: 'any', Delay: 1_000 * NS_PER_MS },
      Placement: { Constraints: spec.constraints },
      Networks: [{ Target: spec.network }],
    },
    Mode: { Replicated: { Replicas: spec.replicas } },
    UpdateConfig: {
      Parallelism: 1,
      Order: 'start-first',
      FailureAction: 'rollback',
      Monitor: spec.monitorMs * NS_PER_MS,
      MaxFailureRatio: 0,
    },
    RollbackConfig: { Parallelism: 1, Order: 'start-first', FailureAction: 'pause', Monitor: spec.monitorMs * NS_PER_MS },
    // No IPVS on hosts like this one: no virtual IP, no ingress mesh; the proxy dials task addresses.
    EndpointSpec: {
      Mode: 'dnsrr',
      // No PublishedPort: each task's node picks a free port, so a start-first task never collides with the old one.
      ...(spec.publish ? { Ports: [{ Protocol: 'tcp', TargetPort: spec.port, PublishMode: 'host' }] } : {}),
    },
  };
}

function timeout(signal?: AbortSignal, ms = CALL_TIMEOUT_MS): AbortSignal {
  return signal ? AbortSignal.any([signal, AbortSignal.timeout(ms)]) : AbortSignal.timeout(ms);
}
