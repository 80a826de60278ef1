import type { BackupStorage, DrillFrequency, SchedulePeriod, VolumeMode } from './backup.records.js';

/**
 * A backup configuration: a database service backed up on a cron schedule (UTC) to a destination,
 * its older backups removed by count and/or age. `managed` ones are the detailed API's daily, weekly
 * and monthly switches (PUT .../backups/settings): written by the settings, never by the general API.
 */
export interface BackupScheduleRecord {
  id: string;
  serviceId: string;
  schedule: string;
  storage: BackupStorage;
  /** Succeeded backups kept, newest first; null: no count limit. */
  keepCount: number | null;
  /** Succeeded backups older than this many days go (the newest one always stays); null: no age limit. */
  keepDays: number | null;
  managed: SchedulePeriod | null;
  /** The slot the scheduler runs next: it runs once when the clock passes it, however many slots passed. */
  nextRunAt: Date;
  /** When it last queued a backup (fired or triggered). */
  lastRunAt: Date | null;
  /** Why the last slot did not queue a backup (a refusal, or the previous one still running); null when it did. */
  lastError: string | null;
  /** The named volume of the service it backs up; null: the database's dump. */
  volume: string | null;
  /** A volume configuration's snapshot mode; null for a database's. */
  volumeMode: VolumeMode | null;
  /** How often its newest succeeded backup is restored into a scratch container and checked. */
  drill: DrillFrequency;
  /** When it last queued a drill. */
  lastDrillAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}
