/**
 * How many copies of a service run and what each may use (issue 31), held on the service row: CPUs
 * in thousandths (whole numbers in both databases), memory in MB. Null: no limit, no reservation.
 */
export interface ServiceScale {
  replicas: number;
  cpuLimitMillis: number | null;
  memoryLimitMb: number | null;
  cpuReservationMillis: number | null;
  memoryReservationMb: number | null;
}

/** As the API shows and takes them: CPUs as a number of CPUs (0.5 is half of one). */
export interface ServiceResources {
  cpuLimit: number | null;
  memoryLimitMb: number | null;
  cpuReservation: number | null;
  memoryReservationMb: number | null;
}

/** Docker refuses a memory limit under 6 MB ("Minimum memory limit allowed is 6MB"). */
export const MIN_MEMORY_MB = 6;

export const DEFAULT_SCALE: ServiceScale = {
  replicas: 1,
  cpuLimitMillis: null,
  memoryLimitMb: null,
  cpuReservationMillis: null,
  memoryReservationMb: null,
};

const toMillis = (cpus: number | null): number | null => (cpus === null ? null : Math.round(cpus * 1000));
const fromMillis = (millis: number | null): number | null => (millis === null ? null : millis / 1000);

export function resourcesOf(scale: ServiceScale): ServiceResources {
  return {
    cpuLimit: fromMillis(scale.cpuLimitMillis),
    memoryLimitMb: scale.memoryLimitMb,
    cpuReservation: fromMillis(scale.cpuReservationMillis),
    memoryReservationMb: scale.memoryReservationMb,
  };
}

/** A partial change (a field left out stays, null clears it) applied to what the service has. */
export function withResources(scale: ServiceScale, change: Partial<ServiceResources>): ServiceScale {
  return {
    ...scale,
    ...(change.cpuLimit !== undefined ? { cpuLimitMillis: toMillis(change.cpuLimit) } : {}),
    ...(change.memoryLimitMb !== undefined ? { memoryLimitMb: change.memoryLimitMb } : {}),
    ...(change.cpuReservation !== undefined ? { cpuReservationMillis: toMillis(change.cpuReservation) } : {}),
    ...(change.memoryReservationMb !== undefined ? { memoryReservationMb: change.memoryReservationMb } : {}),
  };
}

/** What the container engine is given for each replica: Docker's own units. */
export interface ContainerLimits {
  nanoCpus?: number;
  memoryBytes?: number;
  memoryReservationBytes?: number;
  /** A plain container has no CPU reservation: its relative weight stands for it (1024 per CPU). */
  cpuShares?: number;
}

const MB = 1024 * 1024;

export function containerLimitsOf(scale: ServiceScale): ContainerLimits {
  return {
    ...(scale.cpuLimitMillis !== null ? { nanoCpus: scale.cpuLimitMillis * 1_000_000 } : {}),
    ...(scale.memoryLimitMb !== null ? { memoryBytes: scale.memoryLimitMb * MB } : {}),
    ...(scale.memoryReservationMb !== null ? { memoryReservationBytes: scale.memoryReservationMb * MB } : {}),
    ...(scale.cpuReservationMillis !== null ? { cpuShares: Math.max(2, Math.round((scale.cpuReservationMillis * 1024) / 1000)) } : {}),
  };
}
