import type { BackupQueue } from '../backups/backup-queue.js';
import { BackupFailure, type BackupSource, type Locate } from '../backups/backup-sources.js';
import { parseCron } from '../backups/cron.js';
import { databaseEngineOf } from '../domain/database-engines.js';
import type { ServiceRecord } from '../domain/types.js';
import type { ServiceDeps } from '../platform/deps.js';
import { PassLoop } from '../platform/pass-loop.js';
import type { BackupRecord } from '../backups/backup.records.js';
import { beyondRetention } from './pitr-window.js';
import type { PitrSettingsRecord } from './pitr.records.js';
import type { WalSpool } from './wal-archive.port.js';
import { type WalDestination, WalShipper } from './wal-shipper.js';

export interface PitrArchiverLimits {
  /** How often the spools are shipped: the archive's lag is at most this plus archive_timeout while all is well. */
  intervalMs: number;
  /** One database's shipping pass may take this long before it is cut off (the next pass resumes it). */
  passTimeoutMs: number;
}

export const DEFAULT_PITR_ARCHIVER_LIMITS: PitrArchiverLimits = { intervalMs: 10_000, passTimeoutMs: 120_000 };

/** How often a database's archive is pruned to its retention: days are its unit, so every few minutes is plenty. */
const PRUNE_EVERY_MS = 10 * 60_000;

export interface PitrArchiverPorts {
  spool: WalSpool;
  destinationOf(settings: PitrSettingsRecord): Promise<WalDestination>;
  locate: Locate;
  /** The service's resolved env (the base backup runs as its user). */
  envOf(service: ServiceRecord): Promise<Record<string, string>>;
  /** A base backup past the retention: its file or object, then its row (the backups' own removal). */
  removeBase(backup: BackupRecord, signal: AbortSignal): Promise<void>;
}

/**
 * The background half of point-in-time recovery (docs/backups.md, Point-in-time recovery): on a timer,
 * every database with it on has its WAL spool shipped (WalShipper) and, when its slot has come or it
 * has none yet, a base backup queued as a backup of kind `base` (the backup jobs run it, with their
 * logs, checksum and destinations). A base backup is queued only once the server archives: before
 * that its WAL would never reach the archive and it would open no window.
 */
export class PitrArchiver {
  private readonly shipper: WalShipper;
  private readonly loop: PassLoop;
  /** When each database's archive was last pruned (in this process: a restart prunes once more, which is harmless). */
  private readonly prunedAt = new Map<string, number>();

  constructor(
    private readonly deps: ServiceDeps,
    private readonly ports: PitrArchiverPorts,
    private readonly queue: BackupQueue,
    private readonly limits: PitrArchiverLimits = DEFAULT_PITR_ARCHIVER_LIMITS,
    private readonly log: (message: string, fields?: Record<string, unknown>) => void = () => undefined,
  ) {
    this.shipper = new WalShipper(deps, ports.spool, ports.destinationOf, async (serviceId) => {
      const service = await deps.store.projects.getService(serviceId);
      return service ? ((await ports.locate(service))?.containerId ?? null) : null;
    });
    this.loop = new PassLoop(
      () => this.pass(),
      () => this.limits.intervalMs,
      (error) => this.log('point-in-time recovery pass failed', { error: error.message }),
    );
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** Runs a pass now (or lets the one under way finish). */
  wake(): void {
    this.loop.wake();
  }

  /** One pass over every database with point-in-time recovery on; one database's failure does not stop the others. */
  async pass(): Promise<void> {
    for (const settings of await this.deps.store.pitr.enabledSettings()) {
      const signal = AbortSignal.timeout(this.limits.passTimeoutMs);
      const service = await this.deps.store.projects.getService(settings.serviceId);
      if (!service) continue;
      // The shipper records its own failures in the lag (lastError); a base backup that could not be queued is logged.
      await this.shipper
        .ship(settings, signal)
        .catch((error: Error) => this.log('WAL shipping failed', { serviceId: service.id, error: error.message }));
      await this.baseIfDue(service, settings, signal).catch((error: Error) =>
        this.log('base backup not queued', { serviceId: service.id, error: error.message }),
      );
      await this.pruneIfDue(settings, signal).catch((error: Error) =>
        this.log('WAL archive not pruned', { serviceId: service.id, error: error.message }),
      );
    }
  }

  /**
   * `retentionDays`: base backups and WAL segments older than the retention go, from the destination and
   * then from the archive's rows, but never what the oldest second inside it needs (the newest base at or
   * before the cutoff, and every segment from its start). A file the destination cannot remove now stays
   * listed and is tried again at the next prune.
   */
  async pruneIfDue(settings: PitrSettingsRecord, signal: AbortSignal): Promise<{ bases: number; segments: number }> {
    const now = this.deps.clock.now();
    const last = this.prunedAt.get(settings.serviceId);
    if (last !== undefined && now.getTime() - last < PRUNE_EVERY_MS) return { bases: 0, segments: 0 };
    this.prunedAt.set(settings.serviceId, now.getTime());
    const bases = await this.deps.store.backups.listOf(settings.serviceId, 'base');
    const segments = await this.deps.store.pitr.segments(settings.serviceId);
    const old = beyondRetention(bases, segments, settings.retentionDays, now);
    const destination = await this.ports.destinationOf(settings);
    const removed: string[] = [];
    for (const segment of old.segments) {
      try {
        await destination.remove(segment, signal);
        removed.push(segment.id);
      } catch (error) {
        this.log('WAL segment past the retention not removed', {
          serviceId: settings.serviceId,
          name: segment.name,
          error: (error as Error).message,
        });
        break;
      }
    }
    await this.deps.store.pitr.deleteSegments(removed);
    let basesRemoved = 0;
    for (const backup of old.bases) {
      await this.ports.removeBase(backup, signal).then(
        () => basesRemoved++,
        (error: Error) => this.log('base backup past the retention not removed', { backupId: backup.id, error: error.message }),
      );
    }
    if (removed.length > 0 || basesRemoved > 0)
      this.log('WAL archive pruned to its retention', {
        serviceId: settings.serviceId,
        retentionDays: settings.retentionDays,
        segments: removed.length,
        bases: basesRemoved,
      });
    return { bases: basesRemoved, segments: removed.length };
  }

  private async baseIfDue(service: ServiceRecord, settings: PitrSettingsRecord, signal: AbortSignal): Promise<void> {
    const now = this.deps.clock.now();
    const bases = await this.deps.store.backups.listOf(service.id, 'base');
    if (bases.some((b) => b.status === 'queued' || b.status === 'running')) return;
    const due = settings.nextBaseAt.getTime() <= now.getTime() || !bases.some((b) => b.status === 'succeeded');
    if (!due) return;
    const engine = databaseEngineOf(service);
    const container = await this.ports.locate(service);
    if (!engine || !container) return;
    const env = await this.ports.envOf(service);
    const status = await this.ports.spool.status({ engine, containerId: container.containerId, env }, signal);
    if (!status.archiving) {
      const current = (await this.deps.store.pitr.getSettings(service.id)) ?? settings;
      await this.deps.store.pitr.putSettings({
        ...current,
        lastError: `${service.name} does not archive its WAL yet: redeploy it to start it with archiving on`,
        checkedAt: now,
      });
      return;
    }
    await this.queue.queueBase(service, engine, settings.storage, settings.storageId);
    const current = (await this.deps.store.pitr.getSettings(service.id)) ?? settings;
    await this.deps.store.pitr.putSettings({ ...current, nextBaseAt: parseCron(current.baseSchedule).next(now) ?? now });
  }
}

/** A base backup's bytes: pg_basebackup in the database's container; its first WAL file recorded once stored. */
export function baseBackupSource(spool: WalSpool | null, locate: Locate): BackupSource {
  return {
    async open({ backup, service, env, signal, log }) {
      if (!spool) throw new BackupFailure('This platform has no container engine to run pg_basebackup in');
      const container = await locate(service);
      if (!container) throw new BackupFailure(`${service.name} is not running: a base backup is taken of a running database`);
      if (!backup.engine) throw new BackupFailure('This backup names no database engine');
      log.write('pg_basebackup: one tar, WAL left to the archive');
      const running = await spool.baseBackup({ engine: backup.engine, containerId: container.containerId, env }, signal, (line) =>
        log.write(line, 'stderr'),
      );
      return {
        stream: running.stream,
        done: running.done,
        async finish() {
          const walStart = await running.walStart;
          log.write(`The base backup starts at WAL ${walStart}`);
          return { walStart };
        },
      };
    },
  };
}
