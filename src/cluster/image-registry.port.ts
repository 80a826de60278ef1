import type { LineSink } from '../deployments/container-engine.port.js';

/** Where images go and how to authenticate there: the platform's registry or an external one. */
export interface RegistryEndpoint {
  /** `host:port` as image references name it. */
  address: string;
  username: string;
  password: string;
  /** The CA its TLS certificate is checked against; null: the system's roots (an external registry). */
  caPem: string | null;
}

/** The platform's own registry container, as the adapter starts it on the manager's engine. */
export interface RegistryContainerSpec {
  image: string;
  /** The address and port it listens on (the manager's advertised address). */
  host: string;
  port: number;
  certPem: string;
  keyPem: string;
  caPem: string;
  username: string;
  password: string;
}

/**
 * The image registry of the cluster (issue 31): the Distribution registry (`registry:2`) the platform
 * runs on the manager, or an external one. Implemented in adapters/registry/.
 */
export interface ImageRegistry {
  /**
   * Starts `slipway-registry` on the manager's engine when it is not running (or its settings
   * changed), and makes that engine trust its CA for pushes. Idempotent.
   */
  ensureRunning(spec: RegistryContainerSpec, signal?: AbortSignal): Promise<void>;
  /** Answers once the registry accepts the credentials (GET /v2/ = 200), or rejects with why not. */
  check(endpoint: RegistryEndpoint, signal?: AbortSignal): Promise<void>;
  /** Tags a local image as `<address>/<repository>:<tag>`, pushes it with the credentials and answers its digest. */
  push(
    endpoint: RegistryEndpoint,
    localImage: string,
    repository: string,
    tag: string,
    onLine: LineSink,
    signal?: AbortSignal,
  ): Promise<string>;
  /** Deletes a manifest by digest (its blobs go at the next garbage collection); a missing one is fine. */
  deleteManifest(endpoint: RegistryEndpoint, repository: string, digest: string, signal?: AbortSignal): Promise<void>;
  /**
   * Removes blobs no manifest names: the platform's registry is stopped for the collection (no push
   * may run meanwhile), then started again. Answers what the collection printed, for the log.
   */
  collectGarbage(spec: RegistryContainerSpec, signal?: AbortSignal): Promise<string[]>;
}
