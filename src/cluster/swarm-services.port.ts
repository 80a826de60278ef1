/**
 * A deployment's replicas as one Swarm service (issue 31): each deployment gets a service of its own, started
 * beside the serving one and removed once the routes left it (docs/cluster.md). Swarm's virtual IPs and ingress
 * mesh need IPVS, which hosts like this one lack, so every service runs `endpoint_mode: dnsrr`, on an overlay
 * network; a web service's tasks publish their port on their node's address (`publish`), which the proxy dials.
 */
export interface SwarmServiceSpec {
  /** The deployment's resource name (`<RESOURCE_PREFIX>-<serviceId>-<deploymentId>`, as its container would be). */
  name: string;
  serviceId: string;
  deploymentId: string;
  /** Pulled by digest from the platform's registry (`<registry>/<repo>@sha256:...`). */
  image: string;
  /** The registry credentials sent with this service, so that no node stores one. */
  registryAuth: { username: string; password: string; serveraddress: string } | null;
  /** The start command as an argv (an image service's own), or null for the image's CMD. */
  command: string[] | null;
  env: Record<string, string>;
  port: number;
  replicas: number;
  network: string;
  /**
   * Each task's port published on its node's own address (`mode: host`, a port the node's engine picks per task,
   * so a start-first update never collides): what a proxy outside the overlay (Caddy on the manager's host
   * network) dials. No ingress mesh, no IPVS.
   */
  publish: boolean;
  /** Swarm constraints (`node.labels.x==y`, `node.labels.x!=y`). */
  constraints: string[];
  resources: { cpuLimit?: number; memoryLimitMb?: number; cpuReservation?: number; memoryReservationMb?: number };
  /**
   * The task's health check as an argv (no shell), or null to keep the image's own HEALTHCHECK; Swarm routes
   * nothing itself here, but a rollout waits for each new task to be healthy before it stops an old one.
   */
  health: { command: string[] | null; intervalMs: number; timeoutMs: number; retries: number; startPeriodMs: number };
  /** How long Swarm watches each updated task for a failure before it counts the step done. */
  monitorMs: number;
  /** Between SIGTERM and SIGKILL when a task stops (STOP_GRACE_SECONDS): the app finishes what it serves. */
  stopGraceMs: number;
}

/** One of a Slipway service's Swarm services (label `slipway.service`). */
export interface SwarmServiceEntry {
  name: string;
  deploymentId: string | null;
  /** ISO time Swarm created it. */
  createdAt: string;
}

/** A task of a Swarm service as the rollout and the proxy need it. */
export interface SwarmTask {
  id: string;
  nodeId: string | null;
  state: string;
  desiredState: string;
  /** The task's address on the service's network (dnsrr: what the proxy dials), null before it has one. */
  address: string | null;
  /** `<node address>:<published port>` when the service publishes its port (see SwarmServiceSpec.publish), else null. */
  endpoint: string | null;
  /** The deployment whose spec made the task (label `slipway.deployment`). */
  deploymentId: string | null;
  error: string | null;
}

/** Swarm's UpdateStatus.State, or `none` before the first update. */
export type SwarmUpdateState = 'none' | 'updating' | 'paused' | 'completed' | 'rollback_started' | 'rollback_paused' | 'rollback_completed';

export interface SwarmServiceStatus {
  exists: boolean;
  updateState: SwarmUpdateState;
  updateMessage: string;
  /** The deployment id in the service's current spec. */
  deploymentId: string | null;
  /** The replica count in the service's current spec (null when it does not exist). */
  replicas: number | null;
}

export interface SwarmServices {
  /** An attachable overlay network (idempotent). */
  ensureNetwork(name: string, signal?: AbortSignal): Promise<void>;
  /** Creates the service, or updates it (Swarm then rolls start-first, as the spec's UpdateConfig says). */
  apply(spec: SwarmServiceSpec, signal?: AbortSignal): Promise<void>;
  /** A Slipway service's Swarm services, oldest first: one, or two while a deployment replaces the serving one. */
  list(serviceId: string, signal?: AbortSignal): Promise<SwarmServiceEntry[]>;
  status(name: string, signal?: AbortSignal): Promise<SwarmServiceStatus>;
  tasks(name: string, network: string, signal?: AbortSignal): Promise<SwarmTask[]>;
  scale(name: string, replicas: number, signal?: AbortSignal): Promise<void>;
  remove(name: string, signal?: AbortSignal): Promise<void>;
}
