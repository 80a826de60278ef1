import type { ContainerEngine } from '../deployments/container-engine.port.js';
import type { ServiceDeps } from '../platform/deps.js';
import type { CertificateAuthority } from '../tls/certificate-authority.js';
import type { CertificateIssuer } from '../tls/certificate-issuer.port.js';
import { ClusterFormation } from './cluster-formation.js';
import type { ClusterRuntime } from './cluster-runtime.port.js';
import { ClusterSettings } from './cluster-settings.js';
import type { ImageRegistry } from './image-registry.port.js';
import { JoinService } from './join.service.js';
import { NodeEngines } from './node-engines.js';
import type { RemoteEngineFactory } from './node-engines.port.js';
import { RegistryService } from './registry.service.js';
import type { ServerEvents } from './server-events.port.js';
import { ServerMonitor } from './server-monitor.js';
import { ServerService } from './server.service.js';
import { ClusterSwarmPath } from './swarm-path.js';
import type { SwarmServices } from './swarm-services.port.js';
import { SwarmReplicaLocator } from './replica-locator.js';
import type { SwarmTaskReader } from './replica-locator.port.js';
import type { LeftVolumes } from './database-move.js';
import { StoredStatefulPlacements } from './stateful-placements.js';

/** The cluster's adapters, as the composition root hands them over; without a runtime, servers can be read, not added. */
export interface ClusterOptions {
  runtime?: ClusterRuntime;
  remoteEngines?: RemoteEngineFactory;
  registry?: ImageRegistry;
  events?: ServerEvents;
  /** The platform's URL as a joining server reaches it (default `http://<SWARM_ADVERTISE_ADDR>` + the API's port, from the root). */
  joinUrl?: () => string;
  /** The join script's text (scripts/cluster/join-node.sh with the engine provisioning in it). */
  joinScript?: () => Promise<string>;
  /** Swarm services on the manager: stateless services run there once a second server is ready (ClusterSwarmPath). */
  swarmServices?: SwarmServices;
  /** A reconcile pass now (the deploy runner's): a drain takes the server's tasks out of the routes with it. */
  reroute?: () => Promise<void>;
  /** The cluster's running tasks: where logs, metrics and terminals find a service's replicas (SwarmReplicaLocator). */
  swarmTasks?: SwarmTaskReader;
  /** A moved database's volumes left on its earlier server, removed once it serves from the new one. */
  leftVolumes?: LeftVolumes;
}

const LOGGED_EVENTS = (log: (message: string, extra?: Record<string, unknown>) => void): ServerEvents => ({
  serverDown: async (server) => log('event server.down', { serverId: server.id, name: server.name, address: server.address }),
  serverUp: async (server) => log('event server.up', { serverId: server.id, name: server.name, address: server.address }),
});

/** The cluster's use cases over their ports (src/cluster; docs/cluster.md). */
export function createCluster(
  deps: ServiceDeps,
  parts: {
    engine: ContainerEngine | null;
    ca: CertificateAuthority;
    issuer: CertificateIssuer | null;
    options: ClusterOptions;
    log: (message: string, extra?: Record<string, unknown>) => void;
  },
) {
  const { engine, ca, issuer, options, log } = parts;
  const settings = new ClusterSettings(deps);
  const registry = new RegistryService(deps, settings, ca, issuer, options.registry ?? null, log);
  const runtime = options.runtime ?? null;
  const formation = runtime ? new ClusterFormation(deps, runtime, settings, ca, issuer, registry, log) : null;
  const engines =
    engine || options.remoteEngines
      ? new NodeEngines(deps, engine, options.remoteEngines ?? null, () => {
          if (!formation) throw new Error('This platform cannot form a cluster');
          return formation.clientCredentials();
        })
      : null;
  const joinScript = options.joinScript ?? (() => Promise.reject(new Error('This platform serves no join script')));
  const joinUrl = options.joinUrl ?? (() => `http://${deps.config.cluster.advertiseAddress}`);
  const servers = new ServerService(deps, runtime, formation, engines, ca, { joinUrl, joinScript, reroute: options.reroute }, log);
  const join = new JoinService(deps, runtime, formation, ca, issuer, settings, joinScript, log);
  const monitor =
    runtime && formation ? new ServerMonitor(deps, runtime, formation, registry, options.events ?? LOGGED_EVENTS(log), log) : null;
  const swarm = runtime && options.swarmServices ? new ClusterSwarmPath(deps, runtime, settings, registry, options.swarmServices) : null;
  const replicas =
    options.swarmServices && options.swarmTasks ? new SwarmReplicaLocator(deps, settings, options.swarmServices, options.swarmTasks) : null;
  // Databases run on the server holding their volume; the engine adapter follows these placements.
  const placements = options.swarmServices ? new StoredStatefulPlacements(deps, settings, options.swarmServices) : null;
  return { servers, join, registry, formation, monitor, engines, swarm, replicas, placements };
}

export type Cluster = ReturnType<typeof createCluster>;
