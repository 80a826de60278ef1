import type { ContainerEngine } from './container-engine.port.js';
import type { GitSource } from './git-source.port.js';
import type { HealthProbe } from './health-probe.port.js';
import type { PortForwarder } from './port-forwarder.port.js';
import type { TrafficGate } from './traffic-gate.port.js';
import type { ContainerExits } from './container-exits.port.js';
import type { DatabaseReadiness } from '../domain/database-engines.js';
import type { StorageServer } from './storage-server.port.js';
import type { ServiceRecord } from '../domain/types.js';
import type { SwarmPath } from './swarm-path.port.js';
import type { TlsMount } from '../tls/database-tls.service.js';

/** The ports that run deployments: only the runner and the cleanup of removed services use them. */
export interface RuntimeDeps {
  engine: ContainerEngine;
  git: GitSource;
  forwarder: PortForwarder;
  health: HealthProbe;
  /** Absent: no slots, and a cutover reloads the proxy with the new container's address. */
  gate?: TrafficGate;
  /** Present: a database is ready when its engine's own check answers, not when its port accepts a connection. */
  databaseReadiness?: DatabaseReadiness;
  /** Present: a storage instance is ready when its bucket answers an S3 call (made first when missing), not at its first HTTP answer. */
  storageServer?: StorageServer;
  /** Present: a replica whose container dies leaves the routes as Docker says so (see DeployRunner.containerExited). */
  exits?: ContainerExits;
  /** Present: Postgres-compatible databases start with the platform's TLS certificate (see DatabaseTlsService). */
  databaseTls?: { mountFor(service: ServiceRecord, signal?: AbortSignal): Promise<TlsMount | null> };
  /** Present: stateless services run as Swarm services once the cluster has more than one ready server (docs/cluster.md). */
  swarm?: () => SwarmPath | null;
}

/**
 * Names of what the platform creates for a deployment. The network is the service's environment's:
 * a project's first environment has the project's id, so its network is the project network of
 * before environments (see isFirstEnvironment).
 */
export function resourceNames(prefix: string, serviceId: string, deploymentId: string, environmentId: string) {
  return {
    image: `${prefix}-${serviceId}-${deploymentId}`,
    container: `${prefix}-${serviceId}-${deploymentId}`,
    network: `${prefix}-${environmentId}`,
    volume: `${prefix}-${serviceId}-data`,
    imagePrefix: `${prefix}-${serviceId}-`,
  };
}

/** A replica's container: the first keeps the deployment's name (its row names it), the others add their index. */
export function replicaName(container: string, index: number): string {
  return index === 0 ? container : `${container}-r${index}`;
}
