import { statfs } from 'node:fs/promises';
import type { DiskUsage } from '../../src/monitoring/monitoring.ports.js';

/** The file system's size and the space an unprivileged writer may still use (what `df` reports as available). */
export class StatfsDiskUsage implements DiskUsage {
  async usage(path: string): Promise<{ totalBytes: number; freeBytes: number }> {
    const stats = await statfs(path);
    return { totalBytes: stats.blocks * stats.bsize, freeBytes: stats.bavail * stats.bsize };
  }
}
