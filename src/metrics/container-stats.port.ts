/** One running container's resource use, as the engine reports it at one moment. */
export interface ContainerStats {
  containerId: string;
  serviceId: string;
  /** Cumulative CPU time of the container and of the host, in the engine's units (nanoseconds), for a delta between two samples. */
  cpuTotal: number;
  systemCpuTotal: number;
  /** CPUs the host has (the denominator of Docker's CPU %: 100 % is one core). */
  onlineCpus: number;
  memoryUsedBytes: number;
  memoryLimitBytes: number;
  /** Cumulative since the container started. */
  netRxBytes: number;
  netTxBytes: number;
  blockReadBytes: number;
  blockWriteBytes: number;
  restarts: number;
}

/** Reads every running container of this install in one pass over the engine. */
export interface ContainerStatsSource {
  sample(signal: AbortSignal): Promise<ContainerStats[]>;
}
