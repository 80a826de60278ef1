import type { DatabaseEngine } from '../domain/database-engines.js';
import type { LogStream } from '../domain/types.js';

export const BACKUP_STORAGES = ['disk', 'object', 'disk+object'] as const;
export type BackupStorage = (typeof BACKUP_STORAGES)[number];

/** `queued` is the table's own: a backup waiting for its turn reads as `running` (the spec's create answers it). */
export const BACKUP_STATUSES = ['queued', 'running', 'succeeded', 'failed'] as const;
export type BackupStatus = (typeof BACKUP_STATUSES)[number];

/** `schedule`: fired by a backup configuration's cron schedule (the daily/weekly/monthly ones keep their period's name). */
export const BACKUP_TRIGGERS = ['manual', 'daily', 'weekly', 'monthly', 'schedule', 'pitr'] as const;
export type BackupTrigger = (typeof BACKUP_TRIGGERS)[number];
export const SCHEDULE_PERIODS = ['daily', 'weekly', 'monthly'] as const;
export type SchedulePeriod = (typeof SCHEDULE_PERIODS)[number];

/**
 * What a backup's file is (docs/backups.md, Engines): `custom` pg_dump's archive, `sql` a mysqldump
 * script, `rdb` a Redis RDB snapshot, `native` ClickHouse tables (their CREATE statements and their
 * rows in ClickHouse's Native format, framed by the platform), `archive` a mongodump archive.
 */
export const BACKUP_FORMATS = ['custom', 'sql', 'rdb', 'native', 'archive', 'tar', 'basebackup'] as const;
export type BackupFormat = (typeof BACKUP_FORMATS)[number];

/** The file name extension of each format: stored files and downloads. */
export const BACKUP_FILE_EXTENSIONS: Record<BackupFormat, string> = {
  custom: 'dump',
  sql: 'sql',
  rdb: 'rdb',
  native: 'chnative',
  archive: 'archive',
  tar: 'tar',
  basebackup: 'base.tar',
};

/**
 * What a backup holds: `dump` a database's dump (the engine's tool), `volume` a tar of one of a service's
 * named volumes, `base` a PostgreSQL base backup (pg_basebackup's tar) that point-in-time recovery starts from.
 */
export const BACKUP_KINDS = ['dump', 'volume', 'base'] as const;
export type BackupKind = (typeof BACKUP_KINDS)[number];

/** A volume backup's snapshot: with the service's container stopped (consistent), or while it runs (live). */
export const VOLUME_MODES = ['stopped', 'live'] as const;
export type VolumeMode = (typeof VOLUME_MODES)[number];

/** How often a configuration's newest backup is restored and checked (docs/backups.md, Restore drills). */
export const DRILL_FREQUENCIES = ['daily', 'weekly', 'off'] as const;
export type DrillFrequency = (typeof DRILL_FREQUENCIES)[number];
/** On by default for scheduled backups. */
export const DEFAULT_DRILL: DrillFrequency = 'weekly';

export const DRILL_STATUSES = ['queued', 'running', 'passed', 'failed', 'skipped'] as const;
export type DrillStatus = (typeof DRILL_STATUSES)[number];

/** What the counts of a backup count: rows per table, keys per logical database, documents per collection, files and bytes of a volume. */
export const COUNT_UNITS = ['rows', 'keys', 'documents', 'files'] as const;
export type CountUnit = (typeof COUNT_UNITS)[number];

/**
 * What a restore of the backup must hold, recorded when it was made: per table (collection, logical
 * database, or `files`/`bytes` of a volume) the range its count must fall in. Counted before and after
 * the dump, so writes made while it ran widen the range instead of failing a later drill.
 */
export interface BackupCounts {
  unit: CountUnit;
  expected: Record<string, { min: number; max: number }>;
}

/** The last drill of a backup: queued or running, then passed, failed (with the reason) or skipped (with why). */
export interface DrillRecord {
  status: DrillStatus;
  reason: string | null;
  requestedAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  /** What the restored copy held, per table (or `files`/`bytes`); null when it did not get that far. */
  counts: Record<string, number> | null;
  /** Whether the stored bytes still matched the backup's checksum when the drill read them. */
  checksumOk: boolean | null;
}

export interface BackupRecord {
  id: string;
  serviceId: string;
  /** The database's engine; null for a volume backup of a service that is not a database. */
  engine: DatabaseEngine | null;
  status: BackupStatus;
  trigger: BackupTrigger;
  storage: BackupStorage;
  format: BackupFormat;
  localPath: string | null;
  objectKey: string | null;
  /** The storage instance (a service id) holding objectKey; null: the platform's object store. */
  storageId: string | null;
  sizeBytes: number;
  /** `sha256:<hex>` of the bytes stored; empty until the backup succeeded. */
  checksum: string;
  error: string | null;
  abortRequested: boolean;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  /** The backup configuration that made it; null for the detailed API's own. */
  scheduleId: string | null;
  kind: BackupKind;
  /** The named volume a `volume` backup is of; null for the others. */
  volume: string | null;
  /** A `volume` backup's snapshot mode; null for the others. */
  volumeMode: VolumeMode | null;
  /** A `base` backup's first WAL segment (its backup_label's START WAL LOCATION file); null for the others. */
  walStart: string | null;
  /** What a restore must hold (recorded as the backup was made); null when it could not be counted. */
  counts: BackupCounts | null;
  /** The last restore drill; null when it was never drilled. */
  drill: DrillRecord | null;
}

export interface BackupLogRecord {
  id: number;
  backupId: string;
  line: string;
  stream: LogStream;
  createdAt: Date;
}

export interface BackupSettingsRecord {
  serviceId: string;
  storage: BackupStorage;
  /** The storage instance (a service id) this database's backups go to; null: the platform's object store. */
  storageId: string | null;
  automaticEnabled: boolean;
  dailyEnabled: boolean;
  weeklyEnabled: boolean;
  monthlyEnabled: boolean;
  keepDaily: number;
  keepWeekly: number;
  keepMonthly: number;
  /** Drills of the managed daily/weekly/monthly configurations. */
  drill: DrillFrequency;
  createdAt: Date;
  updatedAt: Date;
}
