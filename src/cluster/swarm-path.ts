import type { DeploymentRecord, ServiceRecord } from '../domain/types.js';
import { DeploymentFailure } from '../deployments/pipeline-context.js';
import type { SwarmPath, SwarmRolloutInput } from '../deployments/swarm-path.port.js';
import type { ServiceDeps } from '../platform/deps.js';
import type { ClusterRuntime } from './cluster-runtime.port.js';
import type { ClusterSettings } from './cluster-settings.js';
import type { RegistryService } from './registry.service.js';
import { rollOutSwarmService, runsOnSwarm, SwarmRolloutFailed, swarmServiceName, taskUpstreams } from './swarm-rollout.js';
import type { SwarmServiceSpec, SwarmServices } from './swarm-services.port.js';

const NODES_TIMEOUT_MS = 5_000;
/** Room for Swarm to pull the image on each node, start each task and see it healthy, one at a time, beyond the health timeout. */
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
 * deployment's image pushed to the cluster's registry and run by digest, one dnsrr Swarm service per service,
 * rolled start-first and health-checked by Swarm (src/cluster/swarm-rollout.ts), its tasks' addresses what the
 * proxy balances over.
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

  serviceName(serviceId: string): string {
    return swarmServiceName(this.deps.config.resourcePrefix, serviceId);
  }

  async rollOut(input: SwarmRolloutInput): Promise<string[]> {
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
    log.write(
      `Rolling out ${spec.replicas} replica(s) as Swarm service ${spec.name} from ${published.reference}: start-first, one at a time, each healthy before an old one stops`,
    );
    const deadlineMs = this.deps.config.deploy.healthTimeoutMs * Math.max(1, spec.replicas) + ROLLOUT_SLACK_MS;
    try {
      const upstreams = await rollOutSwarmService(this.services, spec, { deadlineMs, pollMs: ROLLOUT_POLL_MS }, signal);
      log.write(`${upstreams.length} replica(s) of deployment ${deployment.id} running on the cluster: ${upstreams.join(', ')}`);
      return upstreams;
    } catch (error) {
      if (error instanceof SwarmRolloutFailed) throw new DeploymentFailure(error.message);
      throw error;
    }
  }

  async current(service: ServiceRecord, signal?: AbortSignal): Promise<{ replicas: number | null; upstreams: string[] } | null> {
    const name = swarmServiceName(this.deps.config.resourcePrefix, service.id);
    const status = await this.services.status(name, signal);
    if (!status.exists) return null;
    const network = overlayNetworkName(this.deps.config.resourcePrefix, service.environmentId);
    const tasks = await this.services.tasks(name, network, signal);
    return {
      replicas: status.replicas,
      upstreams: taskUpstreams(tasks, service.internalPort, status.deploymentId ?? undefined, service.runtimeMode === 'web'),
    };
  }

  async scale(service: ServiceRecord, replicas: number, signal?: AbortSignal): Promise<void> {
    await this.services.scale(swarmServiceName(this.deps.config.resourcePrefix, service.id), replicas, signal);
  }

  async remove(serviceId: string, signal?: AbortSignal): Promise<void> {
    await this.services.remove(swarmServiceName(this.deps.config.resourcePrefix, serviceId), signal);
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
      name: swarmServiceName(this.deps.config.resourcePrefix, service.id),
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
      constraints: [],
      resources: {
        ...(service.cpuLimitMillis ? { cpuLimit: service.cpuLimitMillis / 1000 } : {}),
        ...(service.memoryLimitMb ? { memoryLimitMb: service.memoryLimitMb } : {}),
        ...(service.cpuReservationMillis ? { cpuReservation: service.cpuReservationMillis / 1000 } : {}),
        ...(service.memoryReservationMb ? { memoryReservationMb: service.memoryReservationMb } : {}),
      },
      // A worker keeps its image's own check.
      health: { ...HEALTH, command: web ? [...HEALTH_COMMAND] : null },
      monitorMs: MONITOR_MS,
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
    `exec wget -q -T 5 -O /dev/null "$${HEALTH_URL_ENV}"`,
  ].join('; '),
];

/** The environment the health check reads: the task's own port and HEALTH_PATH. */
export function healthEnv(port: number, healthPath: string): Record<string, string> {
  return { [HEALTH_URL_ENV]: `http://127.0.0.1:${port}${healthPath.startsWith('/') ? '' : '/'}${healthPath}` };
}
