import { ConflictError } from '../domain/errors.js';
import { Backup, BackupSchedule } from '../persistence/entities.js';
import { Repository, type Patch } from '../persistence/repository.js';
import type { BackupScheduleRecord } from './backup-schedule.records.js';
import type { BackupRecord, SchedulePeriod } from './backup.records.js';

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
  async countMadeByUsers(serviceId: string): Promise<number> {
    return (await this.rows(BackupSchedule, { serviceId, managed: null })).length;
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
  records(schedule: BackupScheduleRecord, options: { limit?: number; succeededOnly?: boolean } = {}): Promise<BackupRecord[]> {
    const where = schedule.managed ? { serviceId: schedule.serviceId, trigger: schedule.managed } : { scheduleId: schedule.id };
    return this.rows(
      Backup,
      options.succeededOnly ? { ...where, status: 'succeeded' } : where,
      { createdAt: 'desc', id: 'desc' },
      options.limit,
    );
  }

  /**
   * Inserts the backup of one slot. Its id is derived from the configuration and the slot, so a second
   * control plane running the same slot meets the primary key: false, and nothing is inserted.
   */
  async insertRun(backup: BackupRecord): Promise<boolean> {
    try {
      await this.insertRow(Backup, backup, 'backup');
      return true;
    } catch (error) {
      if (error instanceof ConflictError) return false;
      throw error;
    }
  }
}
