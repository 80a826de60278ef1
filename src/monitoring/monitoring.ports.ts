// Container exits are the runtime's port (deployments watch them too); monitoring counts them.
export type { ContainerExit, ContainerExits } from '../deployments/container-exits.port.js';

/** The size and free space of the file system holding a path (adapters/host/statfs.disk-usage.ts). */
export interface DiskUsage {
  usage(path: string): Promise<{ totalBytes: number; freeBytes: number }>;
}
