/**
 * The servers of the cluster (issue 31): the host that runs the platform is the first one (`local`),
 * the others join with a one-time token. Swarm is the source of truth for a joined node's state and
 * availability; the row keeps what the API shows when the manager cannot be asked, and what Swarm
 * does not know (the name, the join token, when the state last changed).
 */
export const SERVER_ROLES = ['manager', 'worker'] as const;
export type ServerRole = (typeof SERVER_ROLES)[number];

/** `unknown`: not joined yet, or the manager cannot tell (it is unreachable itself). */
export const SERVER_STATES = ['ready', 'down', 'unknown'] as const;
export type ServerState = (typeof SERVER_STATES)[number];

export const SERVER_AVAILABILITIES = ['active', 'drain', 'pause'] as const;
export type ServerAvailability = (typeof SERVER_AVAILABILITIES)[number];

export interface ServerRecord {
  id: string;
  name: string;
  role: ServerRole;
  /** The host running the platform: its engine is the platform's own (DOCKER_SOCKET). */
  local: boolean;
  /** The address the node advertises to the swarm (and its engine's certificate names); null before it joined. */
  address: string | null;
  hostname: string | null;
  swarmNodeId: string | null;
  /** The user's labels (placement constraints match them); the platform's own `slipway.*` labels are not among them. */
  labels: Record<string, string>;
  availability: ServerAvailability;
  state: ServerState;
  /** When `state` last changed: how long a node has been down. */
  stateChangedAt: Date;
  engineVersion: string | null;
  /** sha256 of the join token, shown once at creation; null once the node joined, and for the local server. */
  joinTokenHash: string | null;
  joinExpiresAt: Date | null;
  joinUsedAt: Date | null;
  joinedAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/** Where a stateful service (a database, a storage instance) is pinned: the node that holds its volume. */
export interface ServicePlacementRecord {
  serviceId: string;
  serverId: string;
  updatedAt: Date;
}

/** An image the platform pushed to the cluster's registry for a deployment, by digest. */
export interface RegistryImageRecord {
  deploymentId: string;
  serviceId: string;
  /** `slipway/<serviceId>` in the registry. */
  repository: string;
  /** `sha256:...`: what nodes pull. */
  digest: string;
  pushedAt: Date;
}
