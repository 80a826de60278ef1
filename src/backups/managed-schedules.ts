import { newId } from '../domain/ids.js';
import type { Store } from '../persistence/store.js';
import { parseCron } from './cron.js';
import { SCHEDULE_PERIODS, type BackupSettingsRecord, type SchedulePeriod } from './backup.records.js';

/**
 * The detailed API's daily, weekly and monthly switches are backup configurations like any other, with
 * these schedules (UTC midnight; ISO weeks start on Monday) and their `keep*` as the count. The
 * settings write them; the general API lists, triggers and reads their records, and refuses to delete them.
 */
export const MANAGED_SCHEDULES: Record<SchedulePeriod, string> = {
  daily: '0 0 * * *',
  weekly: '0 0 * * 1',
  monthly: '0 0 1 * *',
};

const enabled = (s: BackupSettingsRecord, p: SchedulePeriod) =>
  p === 'daily' ? s.dailyEnabled : p === 'weekly' ? s.weeklyEnabled : s.monthlyEnabled;
const keep = (s: BackupSettingsRecord, p: SchedulePeriod) => (p === 'daily' ? s.keepDaily : p === 'weekly' ? s.keepWeekly : s.keepMonthly);

/** Brings a service's managed configurations in line with its backup settings (call it in the settings' transaction). */
export async function syncManagedSchedules(store: Store, settings: BackupSettingsRecord, now: Date): Promise<void> {
  for (const period of SCHEDULE_PERIODS) {
    const existing = await store.backupSchedules.getManaged(settings.serviceId, period);
    if (!settings.automaticEnabled || !enabled(settings, period)) {
      if (existing) await store.backupSchedules.delete(existing.id);
      continue;
    }
    const keepCount = keep(settings, period);
    if (existing) {
      await store.backupSchedules.update(existing.id, { storage: settings.storage, keepCount, drill: settings.drill, updatedAt: now });
      continue;
    }
    await store.backupSchedules.insert({
      id: newId(),
      serviceId: settings.serviceId,
      schedule: MANAGED_SCHEDULES[period],
      storage: settings.storage,
      keepCount,
      keepDays: null,
      managed: period,
      // The period under way is due at once: it gets its backup now unless it already has one.
      nextRunAt: parseCron(MANAGED_SCHEDULES[period]).previous(now) ?? now,
      lastRunAt: null,
      lastError: null,
      volume: null,
      volumeMode: null,
      drill: settings.drill,
      lastDrillAt: null,
      createdAt: now,
      updatedAt: now,
    });
  }
}
