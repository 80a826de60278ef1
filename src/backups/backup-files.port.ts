import type { Readable, Writable } from 'node:stream';

/** Backup files on the platform's own disk, under the backups directory. */
export interface BackupFiles {
  /** Where a backup's file lives: `<dir>/<serviceId>/<name>`. */
  pathOf(serviceId: string, name: string): string;
  /** A new file (its folder made); the bytes land under a temporary name until `commit`. */
  create(path: string): Promise<Writable>;
  /** Moves a finished file from its temporary name to `path`. */
  commit(path: string): Promise<void>;
  read(path: string): Readable;
  /** Size in bytes, or null when the file is missing. */
  size(path: string): Promise<number | null>;
  /** The file and its temporary twin; missing files are fine. */
  remove(path: string): Promise<void>;
}
