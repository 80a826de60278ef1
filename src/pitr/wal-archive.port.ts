import type { Readable } from 'node:stream';
import type { DumpTarget, RunningDump } from '../backups/database-dump.port.js';

/** A file waiting in a database's WAL spool. */
export interface SpooledFile {
  name: string;
  bytes: number;
  /** Its last write (cp -p keeps the segment's own): every commit in it is at or before this. */
  completedAt: Date;
}

/**
 * The WAL spool of a running PostgreSQL container and its base backups, through the engine's own tools
 * in the container (argv, never a shell string). Every call honours its signal.
 */
export interface WalSpool {
  /** The spool's finished files, oldest first. */
  list(containerId: string, signal: AbortSignal): Promise<SpooledFile[]>;
  /** One file's bytes; `done` rejects with the tool's message. */
  read(containerId: string, name: string, signal: AbortSignal): Promise<{ stream: Readable; done: Promise<void> }>;
  remove(containerId: string, names: string[], signal: AbortSignal): Promise<void>;
  /** `pg_basebackup` as one tar on stdout, WAL left to the archive; `walStart` resolves with its first segment (from backup_label). */
  baseBackup(target: DumpTarget, signal: AbortSignal, log: (line: string) => void): Promise<RunningDump & { walStart: Promise<string> }>;
  /** Whether the server archives (archive_mode on, with the platform's command), and pg_stat_archiver's failures. */
  status(target: DumpTarget, signal: AbortSignal): Promise<{ archiving: boolean; failedCount: number; lastFailure: string | null }>;
}

/** A file the recovery reads: its name in the archive, and its bytes (checked against the archive's checksum by `open`). */
export interface ArchivedFile {
  name: string;
  open(signal: AbortSignal): Promise<Readable>;
}

export interface RecoveryRequest {
  /** Names the scratch containers and network (`<prefix>-pitr-<id>`). */
  id: string;
  /** The database's image (the engine's setting). */
  image: string;
  /** The original's env: the restored data keeps its roles and passwords. */
  env: Record<string, string>;
  /** The Docker volume to fill: the new service's data volume, or a scratch one. */
  volume: string;
  /** Where the image keeps its data (PGDATA). */
  dataDir: string;
  base: Readable;
  files: ArchivedFile[];
  at: Date;
  signal: AbortSignal;
  log: (line: string, stream?: 'stdout' | 'stderr') => void;
}

export interface RecoveryResult {
  /** The commit time of the last transaction recovery applied; null when it applied none after the base backup. */
  reachedAt: Date | null;
  /** The archive ended before a commit after `at` (nothing was committed between its last transaction and `at`): recovered to its end. */
  endOfArchive: boolean;
}

/**
 * PostgreSQL's own recovery in scratch containers on a private network (no port, no domain): the
 * volume filled with the base backup and the WAL files, then the server started with `restore_command`
 * and `recovery_target_time`, promoted at the target, and stopped cleanly. The volume is then a
 * data directory any container of the image starts from.
 */
export interface PointInTimeRecovery {
  recover(request: RecoveryRequest): Promise<RecoveryResult>;
  /** Removes the scratch containers and networks a stopped platform left; resolves with what it removed. */
  sweep(): Promise<string[]>;
  removeVolume(volume: string): Promise<void>;
}
