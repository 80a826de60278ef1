import { databaseEngineOf } from '../domain/database-engines.js';
import type { ServiceDeps } from '../platform/deps.js';
import type { BackupService } from './backup.service.js';
import type { BackupSettingsRecord, SchedulePeriod } from './backup.records.js';

const PERIODS: SchedulePeriod[] = ['daily', 'weekly', 'monthly'];

/** The start (UTC) of the day, ISO week (Monday) or month that `now` is in. */
export function periodStart(now: Date, period: SchedulePeriod): Date {
  const day = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()));
  if (period === 'daily') return day;
  if (period === 'weekly') return new Date(day.getTime() - ((day.getUTCDay() + 6) % 7) * 86_400_000);
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
}

const enabled = (s: BackupSettingsRecord, p: SchedulePeriod) =>
  p === 'daily' ? s.dailyEnabled : p === 'weekly' ? s.weeklyEnabled : s.monthlyEnabled;
const keep = (s: BackupSettingsRecord, p: SchedulePeriod) => (p === 'daily' ? s.keepDaily : p === 'weekly' ? s.keepWeekly : s.keepMonthly);

/**
 * Automatic backups. Holds no state of its own: each pass asks the backups table whether this day,
 * week or month already has its backup, so a restart (or a platform down over midnight) neither
 * skips nor doubles one. Retention counts succeeded backups per schedule and removes the oldest.
 */
export class BackupScheduler {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;

  constructor(
    private readonly deps: ServiceDeps,
    private readonly backups: BackupService,
    private readonly log: (message: string, extra?: Record<string, unknown>) => void = () => {},
  ) {}

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.wake(), this.deps.config.backups.schedulerIntervalMs);
    this.wake();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  private wake(): void {
    this.running ??= this.tick()
      .catch((error: Error) => this.log('backup scheduler pass failed', { error: error.message }))
      .finally(() => {
        this.running = null;
      });
  }

  /** One pass: queue what is due, then apply retention. */
  async tick(): Promise<void> {
    const now = this.deps.clock.now();
    for (const settings of await this.deps.store.backups.listAutomatic()) {
      const service = await this.deps.store.projects.getService(settings.serviceId);
      const engine = service ? databaseEngineOf(service) : null;
      if (!service || !engine) continue;
      for (const period of PERIODS) {
        if (!enabled(settings, period)) continue;
        const latest = await this.deps.store.backups.latest(service.id, period);
        if (!latest || latest.createdAt < periodStart(now, period)) {
          try {
            await this.backups.queue(service, engine, settings.storage, period);
          } catch (error) {
            this.log('automatic backup not queued', { serviceId: service.id, period, error: (error as Error).message });
          }
        }
      }
      for (const period of PERIODS) {
        const old = (await this.deps.store.backups.listSucceeded(service.id, period)).slice(keep(settings, period));
        for (const backup of old) {
          try {
            await this.backups.removeEverywhere(backup, AbortSignal.timeout(60_000));
          } catch (error) {
            this.log('old backup not removed', { backupId: backup.id, error: (error as Error).message });
          }
        }
      }
    }
  }
}
