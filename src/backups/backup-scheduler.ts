import type { AuditService } from '../audit/audit.service.js';
import { createHash } from 'node:crypto';
import { databaseEngineOf } from '../domain/database-engines.js';
import { idFromBytes } from '../domain/ids.js';
import type { ServiceDeps } from '../platform/deps.js';
import { PassLoop } from '../platform/pass-loop.js';
import { DAY_MS, parseCron } from './cron.js';
import type { BackupScheduleRecord } from './backup-schedule.records.js';
import type { BackupRecord } from './backup.records.js';
import type { BackupDestinations } from './backup-destinations.js';
import type { BackupQueue } from './backup-queue.js';

/**
 * The id of the backup of one configuration's slot. Every control plane derives the same one, so the
 * backups table's primary key lets only one of them insert it: that insert is the compare-and-set.
 */
export function runId(scheduleId: string, slot: Date): string {
  return idFromBytes(createHash('sha256').update(`${scheduleId}@${slot.toISOString()}`).digest().subarray(0, 16));
}

/**
 * Runs the backup configurations (the daily/weekly/monthly switches among them). Each configuration
 * stores its next slot, so schedules survive restarts; a pass runs the latest slot that has come, once,
 * however many passed while the platform was down, and moves the configuration to the slot after now.
 * Two control planes on one database both run passes: the slot's backup has an id derived from the
 * configuration and the slot (`runId`), so only one of them can insert it. Then retention: each
 * configuration's succeeded backups beyond its count or older than its age go from every place.
 */
export class BackupScheduler {
  private readonly loop = new PassLoop(
    () => this.tick(),
    () => this.deps.config.backups.schedulerIntervalMs,
    (error) => this.log('backup scheduler pass failed', { error: error.message }),
  );

  constructor(
    private readonly deps: ServiceDeps,
    private readonly queue: BackupQueue,
    private readonly destinations: BackupDestinations,
    private readonly log: (message: string, extra?: Record<string, unknown>) => void = () => {},
    /** The audit log: what the schedule queues and its retention removes are writes of the platform's own. */
    private readonly audit?: Pick<AuditService, 'record'>,
  ) {}

  start(): void {
    this.loop.start();
    this.loop.wake();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** One pass: queue what is due, then apply retention. */
  async tick(): Promise<void> {
    const now = this.deps.clock.now();
    for (const schedule of await this.deps.store.backupSchedules.listDue(now)) {
      try {
        await this.runSlot(schedule, now);
      } catch (error) {
        this.log('backup configuration not run', { scheduleId: schedule.id, error: (error as Error).message });
      }
    }
    for (const schedule of await this.deps.store.backupSchedules.list(null)) await this.applyRetention(schedule, now);
  }

  private async runSlot(schedule: BackupScheduleRecord, now: Date): Promise<void> {
    const store = this.deps.store.backupSchedules;
    const cron = parseCron(schedule.schedule);
    const slot = cron.previous(now) ?? schedule.nextRunAt;
    const nextRunAt = cron.next(now) ?? new Date(now.getTime() + 366 * DAY_MS);
    const [latest] = await store.records(schedule, { limit: 1 });
    if (latest && latest.createdAt >= slot) {
      // The slot has its backup (another control plane's, a trigger's, or a managed period's own).
      await store.update(schedule.id, { nextRunAt });
      return;
    }
    let backup: BackupRecord | null = null;
    let lastError: string | null = null;
    const service = await this.deps.store.projects.getService(schedule.serviceId);
    const engine = service ? databaseEngineOf(service) : null;
    if (latest && (latest.status === 'queued' || latest.status === 'running')) {
      lastError = `The slot of ${slot.toISOString()} was skipped: backup ${latest.id} of this configuration was still running`;
    } else if (!service || (!engine && !schedule.volume)) {
      lastError = 'The database service is gone';
    } else {
      try {
        const trigger = schedule.managed ?? 'schedule';
        backup = schedule.volume
          ? await this.queue.prepareVolume(
              service,
              { name: schedule.volume, mode: schedule.volumeMode ?? 'stopped' },
              schedule.storage,
              trigger,
              schedule.id,
              runId(schedule.id, slot),
            )
          : await this.queue.prepare(service, engine!, schedule.storage, trigger, schedule.id, runId(schedule.id, slot));
      } catch (error) {
        lastError = `No backup was queued for the slot of ${slot.toISOString()}: ${(error as Error).message}`;
      }
    }
    // Another control plane inserted this slot's backup first: it moves the configuration on.
    if (backup && !(await store.insertRun(backup))) return;
    await store.update(schedule.id, { nextRunAt, lastError, ...(backup ? { lastRunAt: backup.createdAt } : {}) });
    if (backup) await this.queue.announce(backup);
    else this.log('backup configuration slot skipped', { scheduleId: schedule.id, reason: lastError });
    await this.audit?.record({
      who: { system: 'backups.schedule' },
      operation: 'backups.create',
      door: 'schedule',
      targetIds: [schedule.id, schedule.serviceId, ...(backup ? [backup.id] : [])],
      projectId: service?.projectId ?? null,
      outcome: backup ? 'success' : 'skipped',
    });
  }

  /** Succeeded backups beyond the count, and those older than the age (never the newest one), from every place. */
  private async applyRetention(schedule: BackupScheduleRecord, now: Date): Promise<void> {
    if (schedule.keepCount === null && schedule.keepDays === null) return;
    const cutoff = schedule.keepDays === null ? null : new Date(now.getTime() - schedule.keepDays * DAY_MS);
    for (const backup of await this.deps.store.backupSchedules.beyondRetention(schedule, schedule.keepCount, cutoff)) {
      let outcome = 'success';
      try {
        await this.destinations.removeEverywhere(backup, AbortSignal.timeout(60_000));
      } catch (error) {
        outcome = 'internal_error';
        this.log('old backup not removed', { backupId: backup.id, error: (error as Error).message });
      }
      await this.audit?.record({
        who: { system: 'backups.retention' },
        operation: 'backups.delete',
        door: 'schedule',
        targetIds: [schedule.id, backup.id],
        projectId: (await this.deps.store.projects.getService(backup.serviceId))?.projectId ?? null,
        outcome,
      });
    }
  }
}
