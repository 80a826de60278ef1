import type { ContainerLimits } from '../domain/service-scale.js';
import type { LogStream } from '../domain/types.js';

export type LineSink = (line: string, stream: LogStream) => void;

export interface BuildRequest {
  /** Directory sent as the build context. */
  contextDir: string;
  /** Path of the Dockerfile inside the context. */
  dockerfile: string;
  /** Images are found by this tag's prefix: build labels would cost the old builder a step each. */
  tag: string;
  buildArgs: Record<string, string>;
  signal: AbortSignal;
  onLine: LineSink;
}

export interface RunRequest {
  name: string;
  image: string;
  env: Record<string, string>;
  /** Overrides the image's command; null keeps it. */
  cmd: string[] | null;
  labels: Record<string, string>;
  /** The project's network; `aliases` are the names other services reach it by. */
  network: string;
  aliases: string[];
  volumes: Array<{ name: string; target: string }>;
  /** The container's fixed address on the slot network, where the proxy reaches it (web services behind the proxy). */
  slot?: { network: string; ip: string };
  /**
   * Written into the container before it starts, owned by `owner` (a user of the image's /etc/passwd)
   * with `mode`; their directory is made, owned by the same user.
   */
  files?: Array<{ path: string; content: string; mode: number; owner: string }>;
  /** What the container may use and is promised (the service's resources); none: no limit. */
  limits?: ContainerLimits;
  signal: AbortSignal;
  /** The port it serves on (the service's internal port): published where the platform cannot reach its address. */
  port?: number;
  /** Where the engine's own steps are told (an image or a data volume brought from another server): the deployment's log. */
  log?: (line: string) => void;
}

export interface DaemonRequest {
  name: string;
  image: string;
  cmd: string[];
  env: Record<string, string>;
  labels: Record<string, string>;
  volumes: Array<{ name: string; target: string }>;
  /** Host directories mounted into the container (the proxy reads its routes directory from one). */
  binds?: Array<{ source: string; target: string; readOnly: boolean }>;
  /** Written into the container before it starts (an image has no place for our bootstrap file). */
  files: Array<{ path: string; content: string }>;
  signal: AbortSignal;
}

export interface ContainerState {
  id: string;
  name: string;
  running: boolean;
  /** Exited, and the engine is starting it again (its restart policy): not gone, not to be replaced. */
  restarting?: boolean;
  exitCode: number | null;
  /** Address on the project network (never the slot address); null when not running. */
  ip: string | null;
  labels: Record<string, string>;
  image: string;
}

export interface NetworkState {
  name: string;
  labels: Record<string, string>;
  subnet: string | null;
}

/** What the platform needs of a container engine. Implemented over dockerode. */
export interface ContainerEngine {
  ping(signal?: AbortSignal): Promise<void>;
  imageExists(ref: string): Promise<boolean>;
  pullImage(ref: string, onLine: LineSink, signal: AbortSignal): Promise<void>;
  /** Rejects with the builder's own error message when a step fails. */
  buildImage(request: BuildRequest): Promise<void>;
  ensureNetwork(name: string, labels: Record<string, string>): Promise<void>;
  /**
   * The network that holds traffic slots: fixed addresses need a subnet of our choosing, and its
   * containers must not reach each other through it (projects stay apart). When it does not exist,
   * it is made on the first of `candidates` (CIDRs) that no other network overlaps; resolves with the
   * subnet it has.
   */
  ensureSlotNetwork(name: string, labels: Record<string, string>, candidates: string[]): Promise<string>;
  /** Networks carrying a label (any value when `value` is absent), with their subnet when they have one. */
  listNetworks(label: { key: string; value?: string }): Promise<NetworkState[]>;
  /** Starts with no restart policy, so a container that dies while it is being checked stays dead and keeps its log. */
  runContainer(request: RunRequest): Promise<ContainerState>;
  /** Once it serves, Docker brings it back after a crash or a reboot. */
  keepRunning(idOrName: string): Promise<void>;
  inspect(idOrName: string): Promise<ContainerState | null>;
  /** The last lines a container wrote, for failure reports. */
  tail(idOrName: string, lines: number): Promise<string[]>;
  /** SIGTERM, then SIGKILL after `graceSeconds`; then removal. Missing containers are fine. */
  stopAndRemove(idOrName: string, graceSeconds: number): Promise<void>;
  /**
   * Established TCP connections to `port` inside the container: what a container being retired
   * still serves. Null when the engine cannot tell.
   */
  countConnections(idOrName: string, port: number): Promise<number | null>;
  /** Runs a platform daemon (the reverse proxy) on the host's network; Docker restarts it after a crash or a reboot. */
  runDaemon(request: DaemonRequest): Promise<ContainerState>;
  startContainer(idOrName: string): Promise<void>;
  /** Stops it and keeps it (a database's previous server, started again when its replacement fails). */
  stopContainer(idOrName: string, graceSeconds: number): Promise<void>;
  listContainers(label: { key: string; value?: string }): Promise<ContainerState[]>;
  tagImage(source: string, target: string): Promise<void>;
  removeImage(ref: string): Promise<void>;
  /** Tags of local images whose name starts with `prefix`. */
  listImageTags(prefix: string): Promise<string[]>;
  removeVolume(name: string): Promise<void>;
  /** Names of volumes starting with `prefix` (a service's named volumes, removed with it). */
  listVolumes?(prefix: string): Promise<string[]>;
  removeNetwork(name: string): Promise<void>;
  /** Joins a running container to another network too, reachable there by `aliases` (idempotent). */
  connectNetwork?(idOrName: string, network: string, aliases: string[]): Promise<void>;
}

/** Labels on what the platform creates, so it finds (and cleans up) its own and never another install's. */
export const LABELS = {
  managed: 'slipway.managed',
  /** Which installation made it: two installs sharing a Docker host never touch each other's containers. */
  instance: 'slipway.instance',
  service: 'slipway.service',
  deployment: 'slipway.deployment',
  project: 'slipway.project',
  environment: 'slipway.environment',
  /** The container's fixed address on the slot network, when it has one. */
  slot: 'slipway.slot',
  /** Set on the platform's own daemons (the proxy), which belong to no service. */
  role: 'slipway.role',
  /** `on` on a database container started with the platform's TLS certificate. */
  tls: 'slipway.tls',
  /** A service's replica index, from 1; its first replica (index 0) carries none, as before replicas. */
  replica: 'slipway.replica',
} as const;
