import type { DeploymentRecord, ServiceRecord } from '../domain/types.js';
import { DeploymentFailure } from '../deployments/pipeline-context.js';
import type { SwarmPath, SwarmRolloutInput, SwarmStarted } from '../deployments/swarm-path.port.js';
import { resourceNames } from '../deployments/runtime-deps.js';
import { swarmConstraints } from '../domain/service-placement.js';
import { isTerminal } from '../domain/deployment-state.js';
import type { ServiceDeps } from '../platform/deps.js';
import type { ClusterRuntime } from './cluster-runtime.port.js';
import type { ClusterSettings } from './cluster-settings.js';
import type { RegistryService } from './registry.service.js';
import { runsOnSwarm, startSwarmService, SwarmRolloutFailed, taskUpstreams } from './swarm-rollout.js';
import type { SwarmServiceEntry, SwarmServiceSpec, SwarmServices } from './swarm-services.port.js';

const NODES_TIMEOUT_MS = 5_000;
/** Removing a failed deployment's service after the rollout's own signal may have ended (aborted, or past its deadline). */
const CLEANUP_TIMEOUT_MS = 30_000;
/** Room for Swarm to pull the image on each node and start the new tasks (all at once, beside the serving ones), beyond the health timeout. */
const ROLLOUT_SLACK_MS = 120_000;
const ROLLOUT_POLL_MS = 500;
/**
 * Docker's health check of each task: Swarm kills a replica that fails it, so the timeout leaves room for a
 * loaded node (docs/cluster-findings.md item 3: 1-3 s timeouts failed healthy replicas under load).
 */
const HEALTH = { intervalMs: 2_000, timeoutMs: 10_000, retries: 3, startPeriodMs: 0 };
/** How long Swarm watches an updated task before it counts the step done (a task that dies in it rolls the update back). */
const MONITOR_MS = 5_000;

/** The overlay network of an environment's services on the cluster (the single-server bridge keeps its own name). */
export function overlayNetworkName(prefix: string, environmentId: string): string {
  return `${prefix}-${environmentId}-swarm`;
}

/**
 * Stateless services as Swarm services once the cluster has more than one ready server (docs/cluster.md): the
 * deployment's image pushed to the cluster's registry and run by digest as the deployment's own dnsrr Swarm
 * service, started beside the serving one and health-checked by Swarm (src/cluster/swarm-rollout.ts); the routes
 * switch to its tasks, and only then does the earlier service go, so no request is sent to a stopping task.
 */
export class ClusterSwarmPath implements SwarmPath {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly runtime: ClusterRuntime,
    private readonly settings: ClusterSettings,
    private readonly registry: RegistryService,
    private readonly services: SwarmServices,
  ) {}

  async active(signal?: AbortSignal): Promise<boolean> {
    // A single server never formed a cluster: one settings read, no engine call.
    if (!(await this.settings.formed())) return false;
    const timeout = AbortSignal.timeout(NODES_TIMEOUT_MS);
    const nodes = await this.runtime.nodes(signal ? AbortSignal.any([signal, timeout]) : timeout).catch(() => null);
    return nodes !== null && runsOnSwarm(nodes.filter((node) => node.state === 'ready').length);
  }

  async rollOut(input: SwarmRolloutInput): Promise<SwarmStarted> {
    const { service, deployment, log, signal } = input;
    const published = await this.registry.publish(deployment, input.imageTag, (line, stream) => log.write(line, stream), signal);
    const endpoint = await this.registry.endpoint();
    if (!published || !endpoint) throw new DeploymentFailure('The cluster has no registry to run the image from; see GET /api/registry');
    const network = overlayNetworkName(this.deps.config.resourcePrefix, service.environmentId);
    await this.services.ensureNetwork(network, signal);
    const spec = this.specOf(service, deployment, published.reference, input.env, network, {
      username: endpoint.username,
      password: endpoint.password,
      serveraddress: endpoint.address,
    });
    const previous = (await this.services.list(service.id, signal)).map((entry) => entry.name).filter((name) => name !== spec.name);
    log.write(
      `Starting ${spec.replicas} replica(s) as Swarm service ${spec.name} from ${published.reference}, beside the ${previous.length ? `serving ${previous.join(', ')}` : 'nothing serving yet'}; each must be healthy before any gets traffic`,
    );
    const deadlineMs = this.deps.config.deploy.healthTimeoutMs + ROLLOUT_SLACK_MS;
    try {
      const upstreams = await startSwarmService(this.services, spec, { deadlineMs, pollMs: ROLLOUT_POLL_MS }, signal);
      log.write(`${upstreams.length} replica(s) of deployment ${deployment.id} running on the cluster: ${upstreams.join(', ')}`);
      return { name: spec.name, upstreams, previous };
    } catch (error) {
      // What never served goes; the earlier service was never touched.
      await this.services
        .remove(spec.name, AbortSignal.timeout(CLEANUP_TIMEOUT_MS))
        .catch((e: Error) => log.write(`Could not remove Swarm service ${spec.name}: ${e.message}`, 'stderr'));
      if (error instanceof SwarmRolloutFailed) throw new DeploymentFailure(error.message);
      throw error;
    }
  }

  async retire(names: string[], signal?: AbortSignal): Promise<void> {
    for (const name of names) await this.services.remove(name, signal);
  }

  async current(service: ServiceRecord, signal?: AbortSignal): Promise<{ replicas: number | null; upstreams: string[] } | null> {
    const serving = await this.serving(service, signal);
    if (!serving) return null;
    const status = await this.services.status(serving.name, signal);
    if (!status.exists) return null;
    const network = overlayNetworkName(this.deps.config.resourcePrefix, service.environmentId);
    const tasks = await this.services.tasks(serving.name, network, signal);
    const published = service.runtimeMode === 'web';
    const deploymentId = status.deploymentId ?? undefined;
    // A server being drained keeps its tasks running until they are out of the routes (ServerService.update):
    // they are routed no more, unless no other task runs (better a stopping task than none).
    const leaving = await this.drainingNodes();
    const staying = tasks.filter((task) => !task.nodeId || !leaving.has(task.nodeId));
    const upstreams = taskUpstreams(staying, service.internalPort, deploymentId, published);
    return {
      replicas: status.replicas,
      upstreams: upstreams.length > 0 ? upstreams : taskUpstreams(tasks, service.internalPort, deploymentId, published),
    };
  }

  /** The swarm nodes of servers whose availability is `drain` (the row: it says so before the node does). */
  private async drainingNodes(): Promise<Set<string>> {
    const servers = await this.deps.store.servers.list();
    return new Set(servers.flatMap((s) => (s.availability === 'drain' && s.swarmNodeId ? [s.swarmNodeId] : [])));
  }

  async scale(service: ServiceRecord, replicas: number, signal?: AbortSignal): Promise<void> {
    const serving = await this.serving(service, signal);
    if (serving) await this.services.scale(serving.name, replicas, signal);
  }

  async prune(service: ServiceRecord, signal?: AbortSignal): Promise<string[]> {
    const entries = await this.services.list(service.id, signal);
    if (entries.length <= 1) return [];
    const serving = await this.servingOf(service, entries);
    const removed: string[] = [];
    for (const entry of entries) {
      if (entry.name === serving.name) continue;
      // A deployment under way owns its service: it routes to it, or removes it, itself.
      const deployment = entry.deploymentId ? await this.deps.store.deployments.get(entry.deploymentId) : null;
      if (deployment && !isTerminal(deployment.status)) continue;
      await this.services.remove(entry.name, signal);
      removed.push(entry.name);
    }
    return removed;
  }

  async remove(serviceId: string, signal?: AbortSignal): Promise<void> {
    for (const entry of await this.services.list(serviceId, signal)) await this.services.remove(entry.name, signal);
  }

  /**
   * The Swarm service that serves: the live deployment's. Outside a deployment there is one; a leftover (a
   * deployment whose cleanup was cut short) never takes the place of the live one. Without a live deployment's,
   * the newest.
   */
  private async serving(service: ServiceRecord, signal?: AbortSignal): Promise<SwarmServiceEntry | null> {
    const entries = await this.services.list(service.id, signal);
    if (entries.length <= 1) return entries[0] ?? null;
    return this.servingOf(service, entries);
  }

  private async servingOf(service: ServiceRecord, entries: SwarmServiceEntry[]): Promise<SwarmServiceEntry> {
    const live = (await this.deps.store.deployments.listLive(service.id, 1))[0];
    return entries.find((entry) => entry.deploymentId === live?.id) ?? entries[entries.length - 1]!;
  }

  private specOf(
    service: ServiceRecord,
    deployment: DeploymentRecord,
    image: string,
    env: Record<string, string>,
    network: string,
    registryAuth: SwarmServiceSpec['registryAuth'],
  ): SwarmServiceSpec {
    const web = service.runtimeMode === 'web';
    return {
      // Named as the deployment's container would be: one Swarm service per deployment.
      name: resourceNames(this.deps.config.resourcePrefix, service.id, deployment.id, service.environmentId).container,
      serviceId: service.id,
      deploymentId: deployment.id,
      image,
      registryAuth,
      command: service.source.kind === 'image' && service.startCommand ? ['sh', '-c', service.startCommand] : null,
      // The health URL last: the check reads it, and a variable of the service's own does not replace it.
      env: {
        PORT: String(service.internalPort),
        ...env,
        ...(web ? healthEnv(service.internalPort, this.deps.config.deploy.healthPath) : {}),
      },
      port: service.internalPort,
      replicas: service.replicas,
      network,
      // Caddy runs on the manager's host network: it dials each task at its node's published port.
      publish: service.runtimeMode === 'web',
      constraints: swarmConstraints(service.placement),
      resources: {
        ...(service.cpuLimitMillis ? { cpuLimit: service.cpuLimitMillis / 1000 } : {}),
        ...(service.memoryLimitMb ? { memoryLimitMb: service.memoryLimitMb } : {}),
        ...(service.cpuReservationMillis ? { cpuReservation: service.cpuReservationMillis / 1000 } : {}),
        ...(service.memoryReservationMb ? { memoryReservationMb: service.memoryReservationMb } : {}),
      },
      // A worker keeps its image's own check.
      health: { ...HEALTH, command: web ? [...HEALTH_COMMAND] : null },
      monitorMs: MONITOR_MS,
      stopGraceMs: this.deps.config.deploy.stopGraceSeconds * 1000,
    };
  }
}

/** The variable that carries a web task's health URL into its container: the check's script reads it, never splices it. */
export const HEALTH_URL_ENV = 'SLIPWAY_HEALTH_URL';

/**
 * A web task is healthy once anything answers GET HEALTH_PATH on its own port, as a plain container's check
 * counts it: with the first of node, curl or wget the image has. The script is a constant: the URL reaches it
 * as a variable of the task's environment (`healthEnv`), quoted where the shell expands it, so no value of the
 * service or the settings is ever parsed as shell.
 */
export const HEALTH_COMMAND: readonly string[] = [
  'sh',
  '-c',
  [
    `command -v node >/dev/null && exec node -e 'require("http").get(process.env.${HEALTH_URL_ENV},()=>process.exit(0)).on("error",()=>process.exit(1))'`,
    `command -v curl >/dev/null && exec curl -s -m 5 -o /dev/null "$${HEALTH_URL_ENV}"`,
    // No -T: Docker's own timeout bounds the check, and busybox builds exist whose wget crashes with it.
    `exec wget -q -O /dev/null "$${HEALTH_URL_ENV}"`,
  ].join('; '),
];

/** The environment the health check reads: the task's own port and HEALTH_PATH. */
export function healthEnv(port: number, healthPath: string): Record<string, string> {
  return { [HEALTH_URL_ENV]: `http://127.0.0.1:${port}${healthPath.startsWith('/') ? '' : '/'}${healthPath}` };
}
