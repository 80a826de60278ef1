/** A container of this installation stopped (Docker's `die`): what the crash-loop detector counts. */
export interface ContainerExit {
  containerId: string;
  serviceId: string;
  deploymentId: string | null;
  exitCode: number | null;
  at: Date;
}

/** Tells about container exits as they happen (adapters/docker/docker.container-exits.ts). */
export interface ContainerExits {
  /** Starts watching; reconnects by itself. The returned function stops it. */
  watch(onExit: (exit: ContainerExit) => void, log?: (message: string, extra?: Record<string, unknown>) => void): () => void;
}
