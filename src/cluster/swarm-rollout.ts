import { ValidationError } from '../domain/errors.js';
import type { SwarmServiceSpec, SwarmServices, SwarmTask } from './swarm-services.port.js';

/** Why a Swarm rollout ended without the new tasks serving: the old tasks serve on (Swarm rolled back). */
export class SwarmRolloutFailed extends Error {}

export interface SwarmRolloutOptions {
  /** How long the whole rollout may take before it is called failed. */
  deadlineMs: number;
  pollMs: number;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  now?: () => number;
}

/** The Swarm service's name for a Slipway service: under the install's RESOURCE_PREFIX, as its containers, images and networks are. */
export function swarmServiceName(prefix: string, serviceId: string): string {
  return `${prefix}-${serviceId}`;
}

/** Services run as Swarm services only once the install has more than one ready server; one server keeps plain containers. */
export function runsOnSwarm(readyServers: number): boolean {
  return readyServers > 1;
}

/**
 * Placement as Swarm constraints: `must` labels become `node.labels.k==v`, `mustNot` become `!=`. A label no
 * node has is a 400 listing the labels that exist (a task with an impossible constraint stays `pending` forever).
 */
export function placementConstraints(
  placement: { must?: Record<string, string>; mustNot?: Record<string, string> } | undefined,
  nodeLabels: Record<string, string>[],
): string[] {
  if (!placement) return [];
  const existing = new Set(nodeLabels.flatMap((labels) => Object.entries(labels).map(([k, v]) => `${k}=${v}`)));
  const constraints: string[] = [];
  for (const [key, value] of Object.entries(placement.must ?? {})) {
    if (!existing.has(`${key}=${value}`)) {
      throw new ValidationError(
        'placement',
        `No server has the label ${key}=${value}; the labels that exist are: ${[...existing].sort().join(', ') || 'none'}`,
        {
          labels: [...existing].sort(),
        },
      );
    }
    constraints.push(`node.labels.${key}==${value}`);
  }
  for (const [key, value] of Object.entries(placement.mustNot ?? {})) constraints.push(`node.labels.${key}!=${value}`);
  return constraints;
}

/** `ip:port` of each running task of the current deployment (its overlay address, or its node's published port): what the proxy balances over (dnsrr, no virtual IP). */
export function taskUpstreams(tasks: SwarmTask[], port: number, deploymentId?: string, published = false): string[] {
  return tasks
    .filter((task) => task.state === 'running' && task.desiredState === 'running' && (published ? task.endpoint : task.address))
    .filter((task) => !deploymentId || task.deploymentId === deploymentId)
    .map((task) => (published ? task.endpoint! : `${task.address}:${port}`))
    .sort();
}

/**
 * Creates or updates a service's Swarm service and waits for the outcome. Swarm rolls start-first, one task at a
 * time, each healthy (the spec's health check) before the next; a failed task makes Swarm roll back, so the old
 * tasks serve on, and this throws with Swarm's reason. Answers the new tasks' upstreams.
 */
export async function rollOutSwarmService(
  services: SwarmServices,
  spec: SwarmServiceSpec,
  options: SwarmRolloutOptions,
  signal?: AbortSignal,
): Promise<string[]> {
  const sleep = options.sleep ?? defaultSleep;
  const now = options.now ?? Date.now;
  const deadline = now() + options.deadlineMs;
  await services.ensureNetwork(spec.network, signal);
  const before = await services.status(spec.name, signal);
  await services.apply(spec, signal);
  for (;;) {
    signal?.throwIfAborted();
    const status = await services.status(spec.name, signal);
    if (status.updateState === 'rollback_completed' || status.updateState === 'rollback_paused' || status.updateState === 'paused') {
      throw new SwarmRolloutFailed(`The rollout stopped and the earlier replicas serve on: ${status.updateMessage || status.updateState}`);
    }
    const tasks = await services.tasks(spec.name, spec.network, signal);
    const upstreams = taskUpstreams(tasks, spec.port, spec.deploymentId, spec.publish);
    // A first create has no UpdateStatus: it is done when every replica of this deployment runs.
    const settled = before.exists ? status.updateState === 'completed' || status.updateState === 'none' : true;
    if (settled && upstreams.length >= spec.replicas) return upstreams;
    if (now() >= deadline) {
      const failed = tasks.find((task) => task.deploymentId === spec.deploymentId && task.error);
      throw new SwarmRolloutFailed(
        `The rollout did not finish within ${Math.round(options.deadlineMs / 1000)} s (${upstreams.length} of ${spec.replicas} replicas running)${failed?.error ? `: ${failed.error}` : ''}`,
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
