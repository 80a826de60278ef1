import type { ServerAvailability, ServerRole } from './server.records.js';

/** What the manager's engine says about itself (the host running the platform). */
export interface EngineInfo {
  version: string;
  hostname: string;
  cpus: number;
  memoryBytes: number;
  /** Swarm mode of this engine: `inactive` until the cluster forms. */
  swarm: 'inactive' | 'pending' | 'active' | 'error' | 'locked';
  /** This engine's node id once it is in a swarm. */
  nodeId: string | null;
}

/** A node as the swarm's manager sees it. */
export interface SwarmNode {
  id: string;
  hostname: string;
  role: ServerRole;
  availability: ServerAvailability;
  /** Swarm's own state: `ready`, `down`, `disconnected`, `unknown`. */
  state: string;
  /** The address the node advertises (Status.Addr). */
  address: string;
  engineVersion: string;
  labels: Record<string, string>;
  cpus: number;
  memoryBytes: number;
}

/** A running unit on a server: a Swarm task, or on a single server a container. */
export interface RuntimeTask {
  id: string;
  /** The Slipway service it belongs to (label `slipway.service`), null for anything else. */
  serviceId: string | null;
  /** Swarm's service name, or the container's name. */
  name: string;
  /** The node it is on; null on a single server (the local engine). */
  nodeId: string | null;
  /** `running`, `pending`, `shutdown`, `failed`, ... (Swarm's), or the container's state. */
  state: string;
  desiredState: string;
  containerId: string | null;
  reservedCpus: number;
  reservedMemoryBytes: number;
}

/** How the node's engine is asked to change: only what is given changes. */
export interface NodeChange {
  availability?: ServerAvailability;
  /** The node's whole label set (the platform's own labels included). */
  labels?: Record<string, string>;
}

/**
 * The cluster's orchestrator as the platform drives it: the local engine (the manager) and, once
 * formed, Docker Swarm through it. Implemented over dockerode (adapters/docker/swarm.cluster-runtime.ts).
 */
export interface ClusterRuntime {
  info(signal?: AbortSignal): Promise<EngineInfo>;
  /** `swarm init` on the local engine; answers its node id. */
  initSwarm(advertiseAddress: string, signal?: AbortSignal): Promise<string>;
  /** The token a worker joins with (Swarm's, handed to a node only in the join exchange). */
  workerJoinToken(signal?: AbortSignal): Promise<string>;
  nodes(signal?: AbortSignal): Promise<SwarmNode[]>;
  updateNode(nodeId: string, change: NodeChange, signal?: AbortSignal): Promise<void>;
  /** `docker node rm` (forced: a node that is down, or that left without saying so). */
  removeNode(nodeId: string, force: boolean, signal?: AbortSignal): Promise<void>;
  /** Swarm's tasks (all nodes), or on a single server this installation's containers. */
  tasks(signal?: AbortSignal): Promise<RuntimeTask[]>;
}
