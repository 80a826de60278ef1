import type { ClusterRuntime, EngineInfo, NodeChange, RuntimeTask, SwarmNode } from '../../src/cluster/cluster-runtime.port.js';
import type { ImageRegistry, RegistryContainerSpec, RegistryEndpoint } from '../../src/cluster/image-registry.port.js';
import type { NodeCredentials, RemoteEngine, RemoteEngineFactory } from '../../src/cluster/node-engines.port.js';
import type { ServerEvents } from '../../src/cluster/server-events.port.js';
import type { ServerRecord } from '../../src/cluster/server.records.js';
import type { ContainerEngine } from '../../src/deployments/container-engine.port.js';

/**
 * Fakes of the cluster's ports (src/cluster): a swarm in memory that a test joins nodes to, loses
 * and brings back; nodes' engines that record what they were asked; a registry that hands out digests.
 */
export class FakeSwarm implements ClusterRuntime {
  swarm: EngineInfo['swarm'] = 'inactive';
  managerId = 'node-manager';
  inits: string[] = [];
  nodesById = new Map<string, SwarmNode>();
  taskList: RuntimeTask[] = [];
  updates: Array<{ nodeId: string; change: NodeChange }> = [];
  removed: Array<{ nodeId: string; force: boolean }> = [];
  /** Set to make every call fail (the manager unreachable). */
  down = false;

  async info(): Promise<EngineInfo> {
    this.check();
    return {
      version: '20.10.24',
      hostname: 'host-1',
      cpus: 4,
      memoryBytes: 8 * 1024 ** 3,
      swarm: this.swarm,
      nodeId: this.swarm === 'active' ? this.managerId : null,
    };
  }

  async initSwarm(advertiseAddress: string): Promise<string> {
    this.check();
    if (this.swarm === 'active') throw new Error('This node is already part of a swarm');
    this.inits.push(advertiseAddress);
    this.swarm = 'active';
    this.nodesById.set(this.managerId, node(this.managerId, 'host-1', 'manager', advertiseAddress));
    return this.managerId;
  }

  async workerJoinToken(): Promise<string> {
    this.check();
    if (this.swarm !== 'active') throw new Error('not a swarm manager');
    return 'SWMTKN-1-fakeworkertoken';
  }

  async nodes(): Promise<SwarmNode[]> {
    this.check();
    if (this.swarm !== 'active') throw new Error('not a swarm manager');
    return [...this.nodesById.values()].map((n) => ({ ...n, labels: { ...n.labels } }));
  }

  async updateNode(nodeId: string, change: NodeChange): Promise<void> {
    this.check();
    const found = this.nodesById.get(nodeId);
    if (!found) throw new Error(`no such node ${nodeId}`);
    this.updates.push({ nodeId, change });
    if (change.availability) found.availability = change.availability;
    if (change.labels) found.labels = { ...change.labels };
  }

  async removeNode(nodeId: string, force: boolean): Promise<void> {
    this.check();
    this.removed.push({ nodeId, force });
    this.nodesById.delete(nodeId);
  }

  async tasks(): Promise<RuntimeTask[]> {
    this.check();
    return this.taskList.map((t) => ({ ...t }));
  }

  /** What the join script's `docker swarm join` does, as the manager sees it. */
  join(id: string, hostname: string, address: string): SwarmNode {
    const joined = node(id, hostname, 'worker', address);
    this.nodesById.set(id, joined);
    return joined;
  }

  setState(id: string, state: string): void {
    this.nodesById.get(id)!.state = state;
  }

  private check(): void {
    if (this.down) throw new Error('connect ECONNREFUSED /var/run/docker.sock');
  }
}

function node(id: string, hostname: string, role: 'manager' | 'worker', address: string): SwarmNode {
  return {
    id,
    hostname,
    role,
    availability: 'active',
    state: 'ready',
    address,
    engineVersion: '20.10.24',
    labels: {},
    cpus: 2,
    memoryBytes: 4 * 1024 ** 3,
  };
}

export class FakeRemoteEngines implements RemoteEngineFactory {
  connections: Array<{ address: string; port: number; credentials: NodeCredentials }> = [];
  left: string[] = [];

  constructor(private readonly engine: ContainerEngine = {} as ContainerEngine) {}

  connect(address: string, port: number, credentials: NodeCredentials): RemoteEngine {
    this.connections.push({ address, port, credentials });
    return {
      engine: this.engine,
      version: async () => '20.10.24',
      leaveSwarm: async () => {
        this.left.push(address);
      },
      close: () => {},
    };
  }
}

export class FakeRegistry implements ImageRegistry {
  started: RegistryContainerSpec[] = [];
  pushes: Array<{ localImage: string; repository: string; tag: string; endpoint: RegistryEndpoint }> = [];
  deleted: Array<{ repository: string; digest: string }> = [];
  collections = 0;
  accepts = true;

  async ensureRunning(spec: RegistryContainerSpec): Promise<void> {
    this.started.push(spec);
  }
  async check(endpoint: RegistryEndpoint): Promise<void> {
    if (!this.accepts) throw new Error(`GET /v2/ answered 401 (credentials refused) at ${endpoint.address}`);
  }
  async push(endpoint: RegistryEndpoint, localImage: string, repository: string, tag: string): Promise<string> {
    this.pushes.push({ localImage, repository, tag, endpoint });
    return `sha256:${Buffer.from(`${repository}:${tag}`).toString('hex').padEnd(64, '0').slice(0, 64)}`;
  }
  async deleteManifest(_endpoint: RegistryEndpoint, repository: string, digest: string): Promise<void> {
    this.deleted.push({ repository, digest });
  }
  async collectGarbage(): Promise<string[]> {
    this.collections++;
    return ['blobs eligible for deletion: 2'];
  }
}

export class RecordingServerEvents implements ServerEvents {
  events: Array<{ type: 'server.down' | 'server.up'; serverId: string }> = [];
  async serverDown(server: ServerRecord): Promise<void> {
    this.events.push({ type: 'server.down', serverId: server.id });
  }
  async serverUp(server: ServerRecord): Promise<void> {
    this.events.push({ type: 'server.up', serverId: server.id });
  }
}
