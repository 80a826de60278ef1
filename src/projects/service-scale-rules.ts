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
 * a database or a storage instance runs exactly one; a reservation within its limit, each replica's within what the largest server has free,
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
  if (next.replicas < 0) throw new ValidationError('replicas', `replicas is 0 or more; got ${next.replicas}`);
  if (next.replicas !== 1 && context.stateful)
    throw new ValidationError(
      'replicas',
      'A database or a storage instance runs exactly one replica (its volume takes one server at a time); stop it with its stop operation',
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
    (next.memoryReservationMb ?? 0) * next.replicas > (current.memoryReservationMb ?? 0) * current.replicas ||
    (next.cpuReservationMillis ?? 0) * next.replicas > (current.cpuReservationMillis ?? 0) * current.replicas;
  if (reserves && context.capacity) await assertPlaceable(next, current, await context.capacity());
  return next;
}

/**
 * Each replica must fit on one server, and all of them on the servers together: the free room counts
 * what this service reserves already (its own replicas count against it).
 */
async function assertPlaceable(next: ServiceScale, current: ServiceScale, servers: ScaleCapacity[]): Promise<void> {
  if (servers.length === 0 || next.replicas === 0) return;
  const held = {
    memory: (current.memoryReservationMb ?? 0) * current.replicas,
    cpus: ((current.cpuReservationMillis ?? 0) / 1000) * current.replicas,
  };
  const memory = next.memoryReservationMb;
  if (memory !== null) {
    const largest = Math.max(...servers.map((s) => s.freeMemoryMb + held.memory));
    if (memory > largest)
      throw new ValidationError(
        'resources.memoryReservationMb',
        `No server can hold this service: it needs ${memory} MB, the largest free server has ${largest} MB`,
      );
    const total = servers.reduce((sum, s) => sum + s.freeMemoryMb, 0) + held.memory;
    if (memory * next.replicas > total)
      throw new ValidationError(
        'replicas',
        `The servers cannot hold ${next.replicas} replicas: they need ${memory * next.replicas} MB reserved, ${total} MB is free`,
      );
  }
  const cpus = next.cpuReservationMillis === null ? null : next.cpuReservationMillis / 1000;
  if (cpus !== null) {
    const largest = Math.max(...servers.map((s) => s.freeCpus + held.cpus));
    if (cpus > largest)
      throw new ValidationError(
        'resources.cpuReservation',
        `No server can hold this service: it needs ${cpus} CPUs, the largest free server has ${Math.round(largest * 1000) / 1000}`,
      );
    const total = servers.reduce((sum, s) => sum + s.freeCpus, 0) + held.cpus;
    if (cpus * next.replicas > total + 1e-9)
      throw new ValidationError(
        'replicas',
        `The servers cannot hold ${next.replicas} replicas: they need ${Math.round(cpus * next.replicas * 1000) / 1000} CPUs reserved, ${Math.round(total * 1000) / 1000} are free`,
      );
  }
}
