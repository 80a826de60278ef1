import type { ServiceDeps } from '../platform/deps.js';
import type { ClusterFormation } from './cluster-formation.js';
import type { ClusterRuntime, SwarmNode } from './cluster-runtime.port.js';
import type { RegistryService } from './registry.service.js';
import type { ServerEvents } from './server-events.port.js';
import { nodeLabels, stateOf } from './server-state.js';
import type { ServerRecord, ServerState } from './server.records.js';

/** Images no rollback keeps are collected at most this often (a collection stops the registry for seconds). */
const GC_INTERVAL_MS = 3_600_000;
const CALL_TIMEOUT_MS = 10_000;

/**
 * Watches the cluster once it has formed: links each server that joined to its swarm node (by the
 * address it advertised) and gives the node its labels and availability, records every server's
 * state as the manager reports it (`server.down` and `server.up` events, once each, whichever
 * process sees the change first), keeps the registry running, and collects the registry's garbage.
 */
export class ServerMonitor {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private registryUp = false;
  private lastGc = 0;
  private managerProblem = '';

  constructor(
    private readonly deps: ServiceDeps,
    private readonly runtime: ClusterRuntime,
    private readonly formation: ClusterFormation,
    private readonly registry: RegistryService,
    private readonly events: ServerEvents,
    private readonly log: (message: string, extra?: Record<string, unknown>) => void = () => {},
    private readonly gcIntervalMs = GC_INTERVAL_MS,
  ) {}

  start(): void {
    if (this.timer) return;
    this.lastGc = Date.now();
    this.timer = setInterval(() => void this.wake(), this.deps.config.cluster.monitorIntervalMs);
    void this.wake();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  /** A pass now (or the one under way). */
  wake(): Promise<void> {
    this.running ??= this.tick()
      .catch((error: Error) => this.log('server monitor pass failed', { error: error.message }))
      .finally(() => {
        this.running = null;
      });
    return this.running;
  }

  /** One pass; a single server (no cluster yet) has nothing to watch. */
  async tick(): Promise<void> {
    if (!(await this.formation.formed())) return;
    let nodes: SwarmNode[];
    try {
      nodes = await this.runtime.nodes(AbortSignal.timeout(CALL_TIMEOUT_MS));
      if (this.managerProblem) this.log('the swarm manager answers again');
      this.managerProblem = '';
    } catch (error) {
      // The manager itself is away: nothing can be said about the others (their state stays as recorded).
      const message = (error as Error).message;
      if (message !== this.managerProblem)
        this.log('the swarm manager does not answer; servers show their last known state', { error: message });
      this.managerProblem = message;
      return;
    }
    for (const server of await this.deps.store.servers.list()) {
      const node = await this.nodeOf(server, nodes);
      if (!node) continue;
      await this.follow(server, node);
    }
    await this.keepRegistry();
  }

  /** The node a server is; a server that just joined is linked to it here (label, availability). */
  private async nodeOf(server: ServerRecord, nodes: SwarmNode[]): Promise<SwarmNode | undefined> {
    if (server.swarmNodeId) {
      const node = nodes.find((n) => n.id === server.swarmNodeId);
      // Gone from the swarm (removed by hand): the manager cannot tell its state.
      if (!node) await this.record(server, 'unknown');
      return node;
    }
    if (!server.address || (!server.local && !server.joinUsedAt)) return undefined;
    const taken = new Set((await this.deps.store.servers.list()).flatMap((s) => (s.swarmNodeId ? [s.swarmNodeId] : [])));
    const node = nodes.find((n) => n.address === server.address && !taken.has(n.id));
    if (!node) return undefined;
    const now = this.deps.clock.now();
    await this.runtime.updateNode(node.id, { availability: server.availability, labels: nodeLabels(server.id, server.labels) });
    await this.deps.store.servers.update(server.id, {
      swarmNodeId: node.id,
      hostname: node.hostname,
      engineVersion: node.engineVersion || server.engineVersion,
      joinedAt: server.joinedAt ?? now,
      // Spent: the row no longer answers to any token.
      joinTokenHash: null,
      updatedAt: now,
    });
    this.log('server joined', { serverId: server.id, name: server.name, nodeId: node.id, address: node.address });
    return node;
  }

  private async follow(server: ServerRecord, node: SwarmNode): Promise<void> {
    await this.record(server, stateOf(node));
    const patch: Partial<ServerRecord> = {};
    if (node.engineVersion && node.engineVersion !== server.engineVersion) patch.engineVersion = node.engineVersion;
    if (node.role !== server.role) patch.role = node.role;
    if (Object.keys(patch).length > 0) await this.deps.store.servers.update(server.id, { ...patch, updatedAt: this.deps.clock.now() });
  }

  /** A state change, recorded by one process (compare-and-set); down and back up are events. */
  private async record(server: ServerRecord, state: ServerState): Promise<void> {
    if (state === server.state) return;
    if (!(await this.deps.store.servers.moveState(server.id, server.state, state, this.deps.clock.now()))) return;
    this.log(`server ${state}`, { serverId: server.id, name: server.name, from: server.state });
    const moved = { ...server, state };
    if (state === 'down') await this.events.serverDown(moved);
    else if (server.state === 'down' && state === 'ready') await this.events.serverUp(moved);
  }

  private async keepRegistry(): Promise<void> {
    try {
      if (!this.registryUp) {
        await this.registry.ensure(AbortSignal.timeout(60_000));
        this.registryUp = true;
      }
      if (Date.now() - this.lastGc >= this.gcIntervalMs) {
        this.lastGc = Date.now();
        await this.registry.collect(AbortSignal.timeout(10 * 60_000));
      }
    } catch (error) {
      this.registryUp = false;
      this.log('the cluster registry is not ready; trying again', { error: (error as Error).message });
    }
  }
}
