import { ValidationError } from '../domain/errors.js';
import { withResources, type ServiceResources, type ServiceScale } from '../domain/service-scale.js';
import type { PlatformConfig } from '../platform/platform-config.js';

/** What a server could still take: the largest decides whether a reservation can be placed at all. */
export interface ScaleCapacity {
  name: string;
  freeCpus: number;
  freeMemoryMb: number;
}

/** The servers' room, read when a service asks for a reservation (empty: unknown, nothing refused). */
export type CapacityOf = () => Promise<ScaleCapacity[]>;

export interface ScaleChange {
  replicas?: number | undefined;
  resources?: Partial<ServiceResources> | undefined;
}

/**
 * A service's replicas and resources after a change, held to the rules: at most SERVICE_MAX_REPLICAS;
 * a database or a storage instance runs one (0 stops it); until replicas roll out behind the proxy
 * (docs/cluster.md), every service runs exactly one; a reservation within its limit, and within what the largest server has free,
 * since a request no node can hold would otherwise wait for ever (a Swarm task left `pending`).
 */
export async function scaleAfter(
  current: ServiceScale,
  change: ScaleChange,
  context: { config: PlatformConfig; stateful: boolean; capacity?: CapacityOf | undefined },
): Promise<ServiceScale> {
  // Only the scale's own fields: `current` may be a whole service, whose other fields a caller writes back as they are.
  const own: ServiceScale = {
    replicas: current.replicas,
    cpuLimitMillis: current.cpuLimitMillis,
    memoryLimitMb: current.memoryLimitMb,
    cpuReservationMillis: current.cpuReservationMillis,
    memoryReservationMb: current.memoryReservationMb,
  };
  const next = change.resources ? withResources(own, change.resources) : own;
  if (change.replicas !== undefined) next.replicas = change.replicas;
  const max = context.config.cluster.maxReplicas;
  if (next.replicas > max) throw new ValidationError('replicas', `At most ${max} replicas (SERVICE_MAX_REPLICAS); got ${next.replicas}`);
  if (next.replicas > 1 && context.stateful)
    throw new ValidationError('replicas', 'A database or a storage instance runs exactly one replica (0 stops it and keeps it)');
  if (next.replicas !== 1)
    throw new ValidationError(
      'replicas',
      'Only 1 replica is available yet: several replicas and 0 (stopped and kept) come with the rollout across replicas (docs/cluster.md)',
    );
  if (next.memoryLimitMb !== null && next.memoryReservationMb !== null && next.memoryReservationMb > next.memoryLimitMb)
    throw new ValidationError(
      'resources.memoryReservationMb',
      `The reservation (${next.memoryReservationMb} MB) is above the limit (${next.memoryLimitMb} MB)`,
    );
  if (next.cpuLimitMillis !== null && next.cpuReservationMillis !== null && next.cpuReservationMillis > next.cpuLimitMillis)
    throw new ValidationError(
      'resources.cpuReservation',
      `The reservation (${next.cpuReservationMillis / 1000} CPUs) is above the limit (${next.cpuLimitMillis / 1000} CPUs)`,
    );
  const reserves =
    (next.memoryReservationMb ?? 0) > (current.memoryReservationMb ?? 0) ||
    (next.cpuReservationMillis ?? 0) > (current.cpuReservationMillis ?? 0);
  if (reserves && context.capacity) await assertPlaceable(next, current, await context.capacity());
  return next;
}

/** The largest free server, less what this service reserves already (its own tasks count against it). */
async function assertPlaceable(next: ServiceScale, current: ServiceScale, servers: ScaleCapacity[]): Promise<void> {
  if (servers.length === 0) return;
  const memory = next.memoryReservationMb;
  if (memory !== null) {
    const largest = Math.max(...servers.map((s) => s.freeMemoryMb + (current.memoryReservationMb ?? 0)));
    if (memory > largest)
      throw new ValidationError(
        'resources.memoryReservationMb',
        `No server can hold this service: it needs ${memory} MB, the largest free server has ${largest} MB`,
      );
  }
  const cpus = next.cpuReservationMillis === null ? null : next.cpuReservationMillis / 1000;
  if (cpus !== null) {
    const largest = Math.max(...servers.map((s) => s.freeCpus + (current.cpuReservationMillis ?? 0) / 1000));
    if (cpus > largest)
      throw new ValidationError(
        'resources.cpuReservation',
        `No server can hold this service: it needs ${cpus} CPUs, the largest free server has ${Math.round(largest * 1000) / 1000}`,
      );
  }
}
