/**
 * Point-in-time recovery of a PostgreSQL (or TimescaleDB) service: its settings, the WAL segments its
 * archive holds, and the restores made from them (docs/backups.md, Point-in-time recovery).
 */

/** Where a database's WAL and base backups go: the platform's disk, or an object store (the install's, or a storage instance). */
export const PITR_STORAGES = ['disk', 'object'] as const;
export type PitrStorage = (typeof PITR_STORAGES)[number];

export const MAX_RETENTION_DAYS = 3_650;
export const DEFAULT_RETENTION_DAYS = 7;
/** Base backups: every day at 00:30 UTC unless the settings say otherwise (a cron of docs/backups.md). */
export const DEFAULT_BASE_SCHEDULE = '30 0 * * *';

export interface PitrSettingsRecord {
  serviceId: string;
  enabled: boolean;
  storage: PitrStorage;
  /** With storage `object`: the storage instance (a service id); null: the install's object store. */
  storageId: string | null;
  retentionDays: number;
  /** Cron (UTC) of the base backups. */
  baseSchedule: string;
  /** The next base backup's slot. */
  nextBaseAt: Date;
  // The archive as the shipper last saw it: WAL still waiting in the database's spool, and why.
  pendingSegments: number;
  pendingBytes: number;
  /** When the oldest segment still in the spool was completed; null when the spool is empty. */
  oldestPendingAt: Date | null;
  lastShippedAt: Date | null;
  /** Why the last pass shipped nothing it had (the destination down, the database not running); null when it did. */
  lastError: string | null;
  /** When the shipper last looked at the spool. */
  checkedAt: Date | null;
  /**
   * The data volume the service runs on since an in-place restore (`replace`) swapped it onto the one the
   * restore filled; null: its own `<prefix>-<id>-data`.
   */
  dataVolume: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** One WAL segment (or history / backup-history file) in a database's archive. */
export interface WalSegmentRecord {
  id: string;
  serviceId: string;
  /** PostgreSQL's own file name (`000000010000000000000003`, `00000002.history`, `...00000028.backup`). */
  name: string;
  timeline: number;
  /** The segment's own size (16 MiB for a WAL segment). */
  walBytes: number;
  /** What is stored: the segment gzipped. */
  sizeBytes: number;
  /** `sha256:<hex>` of the stored bytes. */
  checksum: string;
  /** When PostgreSQL finished the segment (its last write): every commit in it is at or before this. */
  completedAt: Date;
  storedAt: Date;
  localPath: string | null;
  objectKey: string | null;
  /** The storage instance holding objectKey; null: the install's object store. */
  storageId: string | null;
}

export const PITR_RESTORE_STATUSES = ['queued', 'running', 'succeeded', 'failed'] as const;
export type PitrRestoreStatus = (typeof PITR_RESTORE_STATUSES)[number];

export interface PitrRestoreRecord {
  id: string;
  /** The database restored from (its archive is read, never written). */
  serviceId: string;
  /** The new database service the restore made (null until made; the original's id with `replace`). */
  targetServiceId: string | null;
  /** The requested time. */
  at: Date;
  replace: boolean;
  status: PitrRestoreStatus;
  /**
   * With `replace`: the data volume the original ran on before the swap, recorded as the swap begins, so
   * a swap a restart cut off is put back onto it; null until then (and without `replace`).
   */
  previousVolume: string | null;
  /** The base backup it started from. */
  baseBackupId: string | null;
  /** The commit time of the last transaction the restore applied (at or before `at`). */
  reachedAt: Date | null;
  error: string | null;
  abortRequested: boolean;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
}
