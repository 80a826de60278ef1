import type { ContainerEngine } from '../deployments/container-engine.port.js';

/** The platform's client identity towards the nodes' engines: a client-auth certificate from the install's CA. */
export interface NodeCredentials {
  caPem: string;
  certPem: string;
  keyPem: string;
}

/** A node's engine reached over mutual TLS (its API on `address:port`, `--tlsverify`). */
export interface RemoteEngine {
  /** Everything the platform does to containers, as with the local engine. */
  engine: ContainerEngine;
  /** The engine's version: also the check that it answers and accepts the platform's certificate. */
  version(signal?: AbortSignal): Promise<string>;
  /** `docker swarm leave --force` on the node itself (its removal from the cluster). */
  leaveSwarm(signal?: AbortSignal): Promise<void>;
  /** Closes its connections. */
  close(): void;
}

/** Dials nodes' engines; never a socket without TLS client authentication. */
export interface RemoteEngineFactory {
  connect(address: string, port: number, credentials: NodeCredentials): RemoteEngine;
}
