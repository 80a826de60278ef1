import type { Readable } from 'node:stream';
import type { RunningDump } from './database-dump.port.js';

/** What a volume (or a tar of one) holds: regular files and their total size (hard links counted as files, their bytes once). */
export interface VolumeStats {
  files: number;
  bytes: number;
}

/**
 * Tars of Docker volumes, made and read by a helper container (the helper image, GNU tar) that mounts
 * the volume; the bytes stream through, never held whole. Every call honours its signal.
 */
export interface VolumeArchive {
  /** A tar of the volume's contents (`./...`, numeric owners, sorted by name). `live`: files changing while read are a warning, not a failure. */
  archive(volume: string, options: { live: boolean }, signal: AbortSignal, log: (line: string) => void): Promise<RunningDump>;
  /**
   * Replaces the volume's contents with the tar: extracted into a staging directory of the same volume
   * first (a tar that cannot be read leaves the volume as it was), then swapped in by renames.
   */
  restore(volume: string, input: Readable, signal: AbortSignal, log: (line: string) => void): Promise<void>;
  /** The drill: the tar extracted into a scratch volume on a private network, counted with find, and removed. */
  drill(id: string, input: Readable, signal: AbortSignal, log: (line: string) => void): Promise<VolumeStats>;
  /** Leftovers of helpers a stopped platform did not remove. */
  sweep(): Promise<string[]>;
  removeVolume(volume: string): Promise<void>;
}
