import type { ContainerEngine } from '../deployments/container-engine.port.js';
import type { ServiceDeps } from '../platform/deps.js';
import type { NodeCredentials, RemoteEngine, RemoteEngineFactory } from './node-engines.port.js';
import type { ServerRecord } from './server.records.js';

/** Where a container runs: a task's node (null: the local engine, as on a single server) and its id. */
export interface ContainerLocation {
  nodeId: string | null;
  containerId: string;
}

/**
 * Every node's engine, as one lookup: the local engine (the platform's own socket) for the host,
 * and for each other server its engine over mutual TLS at `address:engineTlsPort`, with the
 * platform's client certificate. Logs, metrics, terminals, database administration, backups,
 * restores, imports and rollbacks reach "a container on node X" through this, so they work the same
 * on every node (issue 31). Clients are kept per address and dropped when a server goes.
 */
export class NodeEngines {
  private readonly remotes = new Map<string, RemoteEngine>();

  constructor(
    private readonly deps: ServiceDeps,
    /** The platform's own engine; null where the platform runs none (tests of the use cases). */
    private readonly localEngine: ContainerEngine | null,
    private readonly factory: RemoteEngineFactory | null,
    private readonly credentials: () => Promise<NodeCredentials>,
  ) {}

  get local(): ContainerEngine {
    if (!this.localEngine) throw new Error('This platform runs no container engine');
    return this.localEngine;
  }

  /** The engine holding a container: the local one unless the container is a task on another node. */
  async engineOf(location: ContainerLocation): Promise<ContainerEngine> {
    if (!location.nodeId) return this.local;
    return this.engineOfNode(location.nodeId);
  }

  /** A swarm node's engine: the local one for the host's own node. */
  async engineOfNode(nodeId: string): Promise<ContainerEngine> {
    const server = (await this.deps.store.servers.list()).find((s) => s.swarmNodeId === nodeId);
    if (!server) throw new Error(`No server is node ${nodeId}; it may have been removed`);
    return this.engineOfServer(server);
  }

  async engineOfServer(server: ServerRecord): Promise<ContainerEngine> {
    if (server.local) return this.local;
    return (await this.remote(server)).engine;
  }

  /**
   * How to reach a swarm node's engine, for adapters that speak its API themselves (streams of logs, stats,
   * a terminal's hijacked exec): the platform's own engine for the host's node, else the node's address with
   * the platform's client credentials (mutual TLS only).
   */
  async endpointOf(
    nodeId: string,
  ): Promise<{ local: true } | { local: false; address: string; port: number; credentials: NodeCredentials }> {
    const server = (await this.deps.store.servers.list()).find((s) => s.swarmNodeId === nodeId);
    if (!server) throw new Error(`No server is node ${nodeId}; it may have been removed`);
    if (server.local) return { local: true };
    if (!server.address) throw new Error(`Server ${server.name} has not joined yet: it has no address`);
    return { local: false, address: server.address, port: this.deps.config.cluster.engineTlsPort, credentials: await this.credentials() };
  }

  /** A node's engine itself (its version, leaving the swarm); never for the local server. */
  async remote(server: ServerRecord): Promise<RemoteEngine> {
    if (server.local) throw new Error('The local server is reached through the platform\u2019s own engine');
    if (!server.address) throw new Error(`Server ${server.name} has not joined yet: it has no address`);
    if (!this.factory) throw new Error('This platform cannot reach other servers\u2019 engines');
    const key = `${server.address}:${this.deps.config.cluster.engineTlsPort}`;
    const known = this.remotes.get(key);
    if (known) return known;
    const remote = this.factory.connect(server.address, this.deps.config.cluster.engineTlsPort, await this.credentials());
    this.remotes.set(key, remote);
    return remote;
  }

  /** Stops dialling a server's engine (it was removed). */
  forget(server: ServerRecord): void {
    if (!server.address) return;
    const key = `${server.address}:${this.deps.config.cluster.engineTlsPort}`;
    this.remotes.get(key)?.close();
    this.remotes.delete(key);
  }

  closeAll(): void {
    for (const remote of this.remotes.values()) remote.close();
    this.remotes.clear();
  }
}
