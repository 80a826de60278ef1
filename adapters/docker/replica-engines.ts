import type Docker from 'dockerode';
import type { NodeCredentials } from '../../src/cluster/node-engines.port.js';
import type { ReplicaLocation, ReplicaLocator } from '../../src/cluster/replica-locator.port.js';
import { mtlsDocker } from './mtls.remote-engines.js';

/** How a node's engine is reached (NodeEngines.endpointOf): the platform's own, or over mutual TLS. */
export interface NodeEndpoints {
  endpointOf(nodeId: string): Promise<{ local: true } | { local: false; address: string; port: number; credentials: NodeCredentials }>;
}

/** The containers of databases the platform runs on other servers (PlacedContainerEngine), which are no Swarm tasks. */
export interface StatefulContainers {
  remoteContainerOf(serviceId: string, signal?: AbortSignal): Promise<{ containerId: string; nodeId: string; docker: Docker } | null>;
  remoteContainers(signal?: AbortSignal): Promise<Array<{ serviceId: string; containerId: string; nodeId: string; docker: Docker }>>;
}

/** A replica and the engine client that reaches its container. */
export interface ReplicaOnEngine {
  location: ReplicaLocation;
  docker: Docker;
}

/**
 * Where a service's replicas run and which engine reaches each, for the adapters that speak the engine's API
 * themselves (runtime logs, container stats, terminals): the cluster's ReplicaLocator says where, and each
 * node's engine is the platform's own socket for the host's node, else the node's API over mutual TLS with the
 * platform's client certificate (never SSH, never a socket without client authentication).
 *
 * Bound once the use cases exist (the composition root makes the adapters first); unbound, or on a single
 * server (the locator reads one setting), the adapters keep to the local engine exactly as before.
 */
export class ReplicaEngines {
  private bound: { locator: ReplicaLocator; endpoints: NodeEndpoints } | null = null;
  private readonly remotes = new Map<string, Docker>();

  constructor(
    private readonly local: Docker,
    private readonly connect: (address: string, port: number, credentials: NodeCredentials) => Docker = mtlsDocker,
  ) {}

  bind(locator: ReplicaLocator, endpoints: NodeEndpoints, stateful: StatefulContainers | null = null): void {
    this.bound = { locator, endpoints };
    this.stateful = stateful;
  }

  private stateful: StatefulContainers | null = null;

  /**
   * The running tasks of a service on the cluster with their engines, or a database's container on the server that
   * holds its volume; null: plain containers on the local engine.
   */
  async tasksOf(serviceId: string, signal?: AbortSignal): Promise<ReplicaOnEngine[] | null> {
    if (!this.bound) return null;
    const tasks = await this.bound.locator.tasksOf(serviceId, signal);
    if (tasks) return this.withEngines(tasks);
    const placed = await this.stateful?.remoteContainerOf(serviceId, signal);
    return placed
      ? [
          {
            location: { serviceId, deploymentId: null, containerId: placed.containerId, nodeId: placed.nodeId, taskId: '' },
            docker: placed.docker,
          },
        ]
      : null;
  }

  /** Every running task of this install's services on the cluster, with their engines (none on a single server). */
  async clusterTasks(signal?: AbortSignal): Promise<ReplicaOnEngine[]> {
    if (!this.bound) return [];
    const tasks = await this.withEngines(await this.bound.locator.clusterTasks(signal));
    const placed = (await this.stateful?.remoteContainers(signal).catch(() => [])) ?? [];
    return [
      ...tasks,
      ...placed.map(({ serviceId, containerId, nodeId, docker }) => ({
        location: { serviceId, deploymentId: null, containerId, nodeId, taskId: '' },
        docker,
      })),
    ];
  }

  /** A swarm node's engine client. */
  async dockerOf(nodeId: string): Promise<Docker> {
    if (!this.bound) throw new Error('This platform reaches no other server\u2019s engine');
    const endpoint = await this.bound.endpoints.endpointOf(nodeId);
    if (endpoint.local) return this.local;
    const key = `${endpoint.address}:${endpoint.port}`;
    let docker = this.remotes.get(key);
    if (!docker) {
      docker = this.connect(endpoint.address, endpoint.port, endpoint.credentials);
      this.remotes.set(key, docker);
    }
    return docker;
  }

  /**
   * Each task with its node's engine. A task whose node cannot be reached from here (a swarm node that is no
   * server of this install, one that has not joined yet) is left out, so the others are still read; when none
   * is left, the first reason is the answer.
   */
  private async withEngines(tasks: ReplicaLocation[]): Promise<ReplicaOnEngine[]> {
    // One look-up of the servers per node, not per task.
    const byNode = new Map<string, Promise<Docker>>();
    const out: ReplicaOnEngine[] = [];
    let failure: unknown = null;
    for (const location of tasks) {
      const docker = byNode.get(location.nodeId) ?? this.dockerOf(location.nodeId);
      byNode.set(location.nodeId, docker);
      try {
        out.push({ location, docker: await docker });
      } catch (error) {
        failure ??= error;
      }
    }
    if (out.length === 0 && failure) throw failure;
    return out;
  }
}
