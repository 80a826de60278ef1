import { checkPlacement, swarmConstraints, type Placement } from '../domain/service-placement.js';
import type { SwarmServiceSpec, SwarmServices, SwarmTask } from './swarm-services.port.js';

/** Why a deployment's Swarm service never served: its service is removed and the earlier one serves on. */
export class SwarmRolloutFailed extends Error {}

export interface SwarmRolloutOptions {
  /** How long the whole rollout may take before it is called failed. */
  deadlineMs: number;
  pollMs: number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  now?: () => number;
}

/** Services run as Swarm services only once the install has more than one ready server; one server keeps plain containers. */
export function runsOnSwarm(readyServers: number): boolean {
  return readyServers > 1;
}

/**
 * Placement as Swarm constraints, checked: `must` labels become `node.labels.k==v`, `mustNot` become `!=`. A label
 * no node has is a 400 listing the labels that exist (a task with an impossible constraint stays `pending` forever).
 */
export function placementConstraints(placement: Partial<Placement> | undefined, nodeLabels: Record<string, string>[]): string[] {
  checkPlacement(placement, nodeLabels);
  return swarmConstraints(placement);
}

/** `ip:port` of each running task of the current deployment (its overlay address, or its node's published port): what the proxy balances over (dnsrr, no virtual IP). */
export function taskUpstreams(tasks: SwarmTask[], port: number, deploymentId?: string, published = false): string[] {
  return tasks
    .filter((task) => task.state === 'running' && task.desiredState === 'running' && (published ? task.endpoint : task.address))
    .filter((task) => !deploymentId || task.deploymentId === deploymentId)
    .map((task) => (published ? task.endpoint! : `${task.address}:${port}`))
    .sort();
}

/** Task states of a replica that ended before it ever served (a failed health check, a failed pull, a crash). */
const FAILED_STATES = new Set(['failed', 'rejected']);

/**
 * Creates a deployment's own Swarm service beside the one that serves (docs/cluster.md: one Swarm service per
 * deployment) and waits until every replica runs and is healthy: Swarm reports a task `running` only once its
 * health check passed, and each task's node publishes a port of its own, so the serving tasks are untouched.
 * Answers the new tasks' upstreams; the caller routes to them, then removes the earlier service. Throws
 * SwarmRolloutFailed at the first replica that fails, or at the deadline (a `pending` task never waits forever);
 * the caller then removes the new service and the earlier one serves on.
 */
export async function startSwarmService(
  services: SwarmServices,
  spec: SwarmServiceSpec,
  options: SwarmRolloutOptions,
  signal?: AbortSignal,
): Promise<string[]> {
  const sleep = options.sleep ?? defaultSleep;
  const now = options.now ?? Date.now;
  const deadline = now() + options.deadlineMs;
  await services.ensureNetwork(spec.network, signal);
  await services.apply(spec, signal);
  for (;;) {
    signal?.throwIfAborted();
    const tasks = await services.tasks(spec.name, spec.network, signal);
    const failed = tasks.find((task) => FAILED_STATES.has(task.state));
    if (failed)
      throw new SwarmRolloutFailed(
        `A new replica failed before it served (${failed.state}${failed.error ? `: ${failed.error}` : ''}); the earlier replicas serve on`,
      );
    const upstreams = taskUpstreams(tasks, spec.port, spec.deploymentId, spec.publish);
    if (upstreams.length >= spec.replicas) return upstreams;
    if (now() >= deadline) {
      const stuck = tasks.find((task) => task.error);
      throw new SwarmRolloutFailed(
        `The new replicas did not all run within ${Math.round(options.deadlineMs / 1000)} s (${upstreams.length} of ${spec.replicas} running)${stuck?.error ? `: ${stuck.error}` : ''}; the earlier replicas serve on`,
      );
    }
    await sleep(options.pollMs, signal);
  }
}

function defaultSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}
