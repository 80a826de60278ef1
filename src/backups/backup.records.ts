import type { DatabaseEngine } from '../domain/database-engines.js';
import type { LogStream } from '../domain/types.js';

export const BACKUP_STORAGES = ['disk', 'object', 'disk+object'] as const;
export type BackupStorage = (typeof BACKUP_STORAGES)[number];

/** `queued` is the table's own: a backup waiting for its turn reads as `running` (the spec's create answers it). */
export const BACKUP_STATUSES = ['queued', 'running', 'succeeded', 'failed'] as const;
export type BackupStatus = (typeof BACKUP_STATUSES)[number];

/** `schedule`: fired by a backup configuration's cron schedule (the daily/weekly/monthly ones keep their period's name). */
export const BACKUP_TRIGGERS = ['manual', 'daily', 'weekly', 'monthly', 'schedule'] as const;
export type BackupTrigger = (typeof BACKUP_TRIGGERS)[number];
export const SCHEDULE_PERIODS = ['daily', 'weekly', 'monthly'] as const;
export type SchedulePeriod = (typeof SCHEDULE_PERIODS)[number];

/**
 * What a backup's file is (docs/backups.md, Engines): `custom` pg_dump's archive, `sql` a mysqldump
 * script, `rdb` a Redis RDB snapshot, `native` ClickHouse tables (their CREATE statements and their
 * rows in ClickHouse's Native format, framed by the platform), `archive` a mongodump archive.
 */
export const BACKUP_FORMATS = ['custom', 'sql', 'rdb', 'native', 'archive'] as const;
export type BackupFormat = (typeof BACKUP_FORMATS)[number];

/** The file name extension of each format: stored files and downloads. */
export const BACKUP_FILE_EXTENSIONS: Record<BackupFormat, string> = {
  custom: 'dump',
  sql: 'sql',
  rdb: 'rdb',
  native: 'chnative',
  archive: 'archive',
};

export interface BackupRecord {
  id: string;
  serviceId: string;
  engine: DatabaseEngine;
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
  createdAt: Date;
  updatedAt: Date;
}
