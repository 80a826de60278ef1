import { statfs } from 'node:fs/promises';

/**
 * The fill of the file system holding `dir` (the backups directory; on a one-disk install Docker's
 * volumes share it): bytes used and in all, as df counts them (blocks free to root count as used by none).
 */
export function statfsDiskUsage(dir: string): () => Promise<{ usedBytes: number; totalBytes: number } | null> {
  return async () => {
    try {
      const stats = await statfs(dir);
      const total = stats.blocks * stats.bsize;
      return { usedBytes: total - stats.bfree * stats.bsize, totalBytes: total };
    } catch {
      return null;
    }
  };
}
