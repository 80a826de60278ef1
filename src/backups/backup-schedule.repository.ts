import { ConflictError } from '../domain/errors.js';
import { Backup, BackupSchedule, type BackupRow } from '../persistence/entities.js';
import { backupOfRow, backupRowPatch } from './backup.repository.js';
import { Repository, type Patch, type Where } from '../persistence/repository.js';
import type { BackupScheduleRecord } from './backup-schedule.records.js';
import type { BackupRecord, SchedulePeriod } from './backup.records.js';

const NEWEST_FIRST = { createdAt: 'desc', id: 'desc' } as const;

/** A managed configuration's records are its service's backups of its period (older ones included); any other's carry its id. */
function recordsOf(schedule: BackupScheduleRecord): Where<BackupRow> {
  return schedule.managed ? { serviceId: schedule.serviceId, kind: 'dump', trigger: schedule.managed } : { scheduleId: schedule.id };
}

/** Backup configurations, and the backups each one made (its records). */
export class BackupScheduleRepository extends Repository {
  insert(schedule: BackupScheduleRecord): Promise<BackupScheduleRecord> {
    return this.insertRow(BackupSchedule, schedule, 'backup configuration');
  }
  get(id: string): Promise<BackupScheduleRecord | null> {
    return this.row(BackupSchedule, { id });
  }
  /** Oldest first; of the given services, or all when null. */
  list(serviceIds: string[] | null): Promise<BackupScheduleRecord[]> {
    if (serviceIds?.length === 0) return Promise.resolve([]);
    return this.rows(BackupSchedule, serviceIds ? { serviceId: { $in: serviceIds } } : {}, { createdAt: 'asc', id: 'asc' });
  }
  /** The configurations whose next slot has come. */
  listDue(now: Date): Promise<BackupScheduleRecord[]> {
    return this.rows(BackupSchedule, { nextRunAt: { $lte: now } }, { nextRunAt: 'asc', id: 'asc' });
  }
  getManaged(serviceId: string, period: SchedulePeriod): Promise<BackupScheduleRecord | null> {
    return this.row(BackupSchedule, { serviceId, managed: period });
  }
  countMadeByUsers(serviceId: string): Promise<number> {
    return this.fork().count(BackupSchedule, { serviceId, managed: null });
  }
  update(id: string, patch: Patch<BackupScheduleRecord>): Promise<void> {
    return this.updateRow(BackupSchedule, id, patch, 'backup configuration');
  }
  async delete(id: string): Promise<void> {
    await this.deleteRows(BackupSchedule, { id });
  }
  async deleteOfServices(serviceIds: string[]): Promise<void> {
    if (serviceIds.length > 0) await this.deleteRows(BackupSchedule, { serviceId: { $in: serviceIds } });
  }

  /**
   * The backups a configuration made, newest first. A managed one's are its service's backups of its
   * period (those made before configurations existed included); any other's carry its id.
   */
  async records(schedule: BackupScheduleRecord, options: { limit?: number } = {}): Promise<BackupRecord[]> {
    return (await this.rows(Backup, recordsOf(schedule), NEWEST_FIRST, options.limit)).map(backupOfRow);
  }

  /**
   * The succeeded records past a retention, newest first: beyond the newest `keepCount`, or made before
   * `before` (never the newest of all). Found by the database, so a long history is not read to keep it.
   */
  async beyondRetention(schedule: BackupScheduleRecord, keepCount: number | null, before: Date | null): Promise<BackupRecord[]> {
    const succeeded: Where<BackupRow> = { $and: [recordsOf(schedule), { status: 'succeeded' }] };
    const past: Where<BackupRow>[] = [];
    if (keepCount !== null) {
      const kept = await this.rows(Backup, succeeded, NEWEST_FIRST, keepCount);
      const last = kept.at(-1);
      if (keepCount === 0) past.push({});
      else if (last && kept.length === keepCount)
        past.push({ $or: [{ createdAt: { $lt: last.createdAt } }, { createdAt: last.createdAt, id: { $lt: last.id } }] });
    }
    if (before) {
      const [newest] = await this.rows(Backup, succeeded, NEWEST_FIRST, 1);
      if (newest) past.push({ createdAt: { $lt: before }, id: { $ne: newest.id } });
    }
    if (past.length === 0) return [];
    return (await this.rows(Backup, { $and: [succeeded, { $or: past }] }, NEWEST_FIRST)).map(backupOfRow);
  }

  /**
   * Inserts the backup of one slot. Its id is derived from the configuration and the slot, so a second
   * control plane running the same slot meets the primary key: false, and nothing is inserted.
   */
  async insertRun(backup: BackupRecord): Promise<boolean> {
    try {
      await this.insertRow(Backup, backupRowPatch(backup) as BackupRow, 'backup');
      return true;
    } catch (error) {
      if (error instanceof ConflictError) return false;
      throw error;
    }
  }
}
