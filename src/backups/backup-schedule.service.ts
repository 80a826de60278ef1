import { assertProjectVisible, assertWrite, type Actor } from '../domain/access.js';
import { ConflictError, NotFoundError, ValidationError } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import type { DatabaseEngine } from '../domain/database-engines.js';
import type { ServiceRecord } from '../domain/types.js';
import type { ServiceDeps } from '../platform/deps.js';
import { serviceFor, visibleServices } from '../platform/lookup.js';
import { CronError, parseCron, type CronSchedule } from './cron.js';
import { type BackupConfigurationInput, type BackupConfigurationView, presentBackupConfiguration } from './backup-schedule-views.js';
import type { BackupScheduleRecord } from './backup-schedule.records.js';
import { DEFAULT_DRILL, SCHEDULE_PERIODS } from './backup.records.js';
import { presentBackup, type BackupView } from './backup-views.js';
import type { BackupQueue } from './backup-queue.js';
import type { BackupSettingsService } from './backup-settings.service.js';
import { databaseFor } from './backup-targets.js';

/** Configurations a user may make per database (the managed daily/weekly/monthly ones are not counted). */
export const MAX_CONFIGURATIONS_PER_DATABASE = 10;
/** The shortest time between two slots of a schedule: a backup is a full dump of the database. */
export const MIN_INTERVAL_MINUTES = 5;
/** Kept when a configuration names neither a count nor an age. */
export const DEFAULT_KEEP_COUNT = 7;

/** A schedule as the API takes it: a cron expression that fires at most every MIN_INTERVAL_MINUTES; 400 on `schedule` otherwise. */
export function scheduleOf(expression: string): CronSchedule {
  let cron: CronSchedule;
  try {
    cron = parseCron(expression);
  } catch (error) {
    if (error instanceof CronError) throw new ValidationError('schedule', error.message);
    throw error;
  }
  const interval = cron.shortestIntervalMinutes();
  if (interval < MIN_INTERVAL_MINUTES)
    throw new ValidationError(
      'schedule',
      `${cron.expression} fires ${interval === 1 ? 'every minute' : `${interval} minutes apart`} at its most frequent; backups may be at most every ${MIN_INTERVAL_MINUTES} minutes`,
      { shortestIntervalMinutes: interval },
    );
  return cron;
}

/**
 * The general API's backup configurations (`/api/backups`): list, create, get, delete, trigger and their
 * records. The backups themselves are BackupQueue's; BackupDestinations removes them; BackupScheduler runs
 * the schedules.
 */
export class BackupScheduleService {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly queue: BackupQueue,
    private readonly settings: BackupSettingsService,
  ) {}

  /** Every configuration of the databases the key sees, or of one database. */
  async list(actor: Actor, serviceId?: string): Promise<BackupConfigurationView[]> {
    const projectOf = new Map<string, string>();
    if (serviceId) {
      // A service of any kind: a web service's configurations back up its named volumes.
      const service = await serviceFor(this.deps.store, actor, serviceId);
      projectOf.set(service.id, service.projectId);
    } else {
      for (const s of await visibleServices(this.deps.store, actor)) projectOf.set(s.id, s.projectId);
    }
    const schedules = await this.deps.store.backupSchedules.list([...projectOf.keys()]);
    // Per database: the managed ones first (daily, weekly, monthly), then the others as they were made.
    const rank = (s: BackupScheduleRecord) => (s.managed ? SCHEDULE_PERIODS.indexOf(s.managed) : SCHEDULE_PERIODS.length);
    const order = new Map([...new Set(schedules.map((s) => s.serviceId))].map((id, i) => [id, i]));
    schedules.sort((a, b) => order.get(a.serviceId)! - order.get(b.serviceId)! || rank(a) - rank(b));
    return schedules.map((s) => presentBackupConfiguration(s, projectOf.get(s.serviceId)!));
  }

  async create(actor: Actor, input: BackupConfigurationInput): Promise<BackupConfigurationView> {
    assertWrite(actor);
    const { service } = await this.targetOf(actor, input.serviceId, input.volume?.name ?? null);
    const cron = scheduleOf(input.schedule);
    await this.settings.storageIdFor(service.id, input.storage);
    if ((await this.deps.store.backupSchedules.countMadeByUsers(service.id)) >= MAX_CONFIGURATIONS_PER_DATABASE)
      throw new ValidationError(
        'serviceId',
        `A database may have at most ${MAX_CONFIGURATIONS_PER_DATABASE} backup configurations; delete one first`,
      );
    const count = input.retention?.count ?? null;
    const maxAgeDays = input.retention?.maxAgeDays ?? null;
    const now = this.deps.clock.now();
    const record = await this.deps.store.backupSchedules.insert({
      id: newId(),
      serviceId: service.id,
      schedule: cron.expression,
      storage: input.storage,
      keepCount: count === null && maxAgeDays === null ? DEFAULT_KEEP_COUNT : count,
      keepDays: maxAgeDays,
      managed: null,
      // A new configuration waits for its first slot.
      nextRunAt: cron.next(now)!,
      lastRunAt: null,
      lastError: null,
      volume: input.volume?.name ?? null,
      volumeMode: input.volume?.mode ?? null,
      drill: input.drill ?? DEFAULT_DRILL,
      lastDrillAt: null,
      createdAt: now,
      updatedAt: now,
    });
    return presentBackupConfiguration(record, service.projectId);
  }

  async get(actor: Actor, id: string): Promise<BackupConfigurationView> {
    const { schedule, projectId } = await this.configurationFor(actor, id);
    return presentBackupConfiguration(schedule, projectId);
  }

  /** The configuration goes; the backups it made stay (delete them through the detailed API). */
  async delete(actor: Actor, id: string): Promise<void> {
    assertWrite(actor);
    const { schedule } = await this.configurationFor(actor, id);
    if (schedule.managed)
      throw new ConflictError(
        `Backup configuration ${id} is the ${schedule.managed} backup of the database's settings: turn it off with PUT /api/services/${schedule.serviceId}/database/backups/settings {"${schedule.managed}Enabled": false}`,
        { managed: schedule.managed },
      );
    await this.deps.store.backupSchedules.delete(schedule.id);
  }

  /** Queues one backup of the configuration now, as its schedule would; retention counts it. */
  async trigger(actor: Actor, id: string): Promise<BackupView> {
    assertWrite(actor);
    const { schedule } = await this.configurationFor(actor, id);
    const { service, engine } = await this.targetOf(actor, schedule.serviceId, schedule.volume);
    const trigger = schedule.managed ?? 'manual';
    const backup = engine
      ? await this.queue.queue(service, engine, schedule.storage, trigger, schedule.id)
      : await this.queue.queueVolume(
          service,
          { name: schedule.volume!, mode: schedule.volumeMode ?? 'stopped' },
          schedule.storage,
          trigger,
          schedule.id,
        );
    await this.deps.store.backupSchedules.update(schedule.id, { lastRunAt: backup.createdAt });
    return presentBackup(backup);
  }

  /** The backups the configuration made, newest first. */
  async records(actor: Actor, id: string, limit: number): Promise<BackupView[]> {
    const { schedule } = await this.configurationFor(actor, id);
    return (await this.deps.store.backupSchedules.records(schedule, { limit })).map(presentBackup);
  }

  /**
   * What a configuration backs up: the service's named volume (a service of any kind; 404 for an unknown
   * volume), or its database (404 for another kind of service; 422 for an engine without a dump tool).
   */
  private async targetOf(
    actor: Actor,
    serviceId: string,
    volume: string | null,
  ): Promise<{ service: ServiceRecord; engine: DatabaseEngine | null }> {
    if (volume === null) {
      const { service, engine } = await databaseFor(this.deps.store, actor, serviceId);
      this.queue.assertSupported(engine, 'Backups');
      return { service, engine };
    }
    const service = await serviceFor(this.deps.store, actor, serviceId);
    if (!(await this.deps.store.volumes.get(service.id, volume))) throw new NotFoundError('Volume', volume);
    return { service, engine: null };
  }

  /** 404 for an unknown configuration and for one of a project the key does not see. */
  private async configurationFor(actor: Actor, id: string): Promise<{ schedule: BackupScheduleRecord; projectId: string }> {
    const schedule = await this.deps.store.backupSchedules.get(id);
    const service = schedule ? await this.deps.store.projects.getService(schedule.serviceId) : null;
    if (!schedule || !service) throw new NotFoundError('Backup configuration', id);
    assertProjectVisible(actor, service.projectId, 'Backup configuration', id);
    return { schedule, projectId: service.projectId };
  }
}
