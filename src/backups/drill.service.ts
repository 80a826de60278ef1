import { assertWrite, type Actor } from '../domain/access.js';
import { ENGINE_SPECS } from '../domain/database-engines.js';
import { serviceRefOf } from '../domain/events.js';
import { ChecksumMismatchError, ConflictError, NotFoundError, NotSupportedError } from '../domain/errors.js';
import type { DatabaseEndpoint } from '../domain/database-engines.js';
import type { EnvService } from '../env/env.service.js';
import type { JobLogWriter } from '../jobs/job-log-writer.js';
import type { ServiceDeps } from '../platform/deps.js';
import type { BackupScheduleRecord } from './backup-schedule.records.js';
import { type BackupView, presentBackup } from './backup-views.js';
import type { BackupRecord, DrillFrequency, DrillRecord } from './backup.records.js';
import { maskIn } from './backup-errors.js';
import type { BackupLog } from './backup-log.js';
import type { BackupRestore } from './backup-restore.js';
import { databaseFor } from './backup-targets.js';
import type { DatabaseDump } from './database-dump.port.js';
import { countMismatches } from './drill-counts.js';
import type { ScratchDatabases } from './scratch-database.port.js';
import { DAY_MS } from './cron.js';
import { PassLoop } from '../platform/pass-loop.js';
import type { VolumeArchive } from './volume-archive.port.js';

/** A drill's outcome, told to whoever listens besides the events outbox (docs/backups.md, Restore drills). */
export interface DrillEvent {
  type: 'drill.passed' | 'drill.failed';
  serviceId: string;
  projectId: string;
  backupId: string;
  reason: string | null;
}

/** What drills are made with: the scratch containers, the engines' tools and checks, the disk's fill. */
export interface DrillPorts {
  scratch: ScratchDatabases | null;
  volumes: VolumeArchive | null;
  /** The engine's own readiness check (a query over the wire), as a deployment waits for a database. */
  ready: ((endpoint: DatabaseEndpoint, signal: AbortSignal) => Promise<string>) | null;
  /** The disk the backups and Docker's volumes are on: bytes used and in all; null when unknown. */
  disk(): Promise<{ usedBytes: number; totalBytes: number } | null>;
  publish(event: DrillEvent): Promise<void>;
}

export interface DrillLimits {
  /** A drill ends `failed` past this (the restore, its start and its checks together). */
  timeoutMs: number;
  /** How long a scratch database may take to answer its engine's check. */
  readyTimeoutMs: number;
  /** How often the runner looks for queued and scheduled drills. */
  pollMs: number;
  /** How long a stop waits for the drill in flight to end (recorded, its scratch container removed). */
  stopGraceMs: number;
}

export const DEFAULT_DRILL_LIMITS: DrillLimits = { timeoutMs: 30 * 60_000, readyTimeoutMs: 180_000, pollMs: 60_000, stopGraceMs: 5_000 };

/** A drill is skipped when the disk would pass this share once the restored copy is on it. */
export const DRILL_DISK_LIMIT = 0.9;
/** What a restored copy takes on disk, against its backup's size (a dump's indexes and free space grow back). */
export const RESTORE_SIZE_FACTOR = 3;

const PERIOD_MS: Record<Exclude<DrillFrequency, 'off'>, number> = { daily: DAY_MS, weekly: 7 * DAY_MS };

/** Why a drill failed, in words the user acts on (the engine's message as is). */
class DrillFailure extends Error {}

/**
 * Restore drills (docs/backups.md, Restore drills): a backup restored into a scratch container on a
 * private network (no domain, no host port), checked with the engine's own means against the counts
 * recorded when it was made, and removed. One at a time across the platform; skipped, with the reason
 * recorded, when the disk would pass 90%. The drill columns of the backups table are the queue, so a
 * drill asked for survives a restart; one cut off by a restart ends `failed`.
 */
export class DrillService {
  private readonly loop = new PassLoop(
    () => this.drain(),
    () => this.limits.pollMs,
    (error) => this.log('drill pass failed', { error: error.message }),
  );
  private started = false;
  /** A wake that came while a pass ran: the pass looks again before it ends (a drill queued meanwhile waits for no tick). */
  private woken = false;
  private stopping = false;
  private readonly controller = new AbortController();

  constructor(
    private readonly deps: ServiceDeps,
    private readonly dump: DatabaseDump | null,
    private readonly backupLog: BackupLog,
    /** Its checksum check: a drill restores exactly the bytes a restore would. */
    private readonly restores: Pick<BackupRestore, 'verifiedSource'>,
    private readonly env: EnvService,
    private readonly ports: DrillPorts,
    private readonly limits: DrillLimits = DEFAULT_DRILL_LIMITS,
    private readonly log: (message: string, extra?: Record<string, unknown>) => void = () => {},
  ) {}

  /** `POST .../backups/:backupId/drill`: queued now, run by the runner (one at a time); its report is on the backup. */
  async request(actor: Actor, serviceId: string, backupId: string): Promise<BackupView> {
    assertWrite(actor);
    const { service } = await databaseFor(this.deps.store, actor, serviceId);
    const backup = await this.deps.store.backups.get(backupId);
    if (!backup || backup.serviceId !== service.id || backup.kind !== 'dump') throw new NotFoundError('Backup', backupId);
    return this.requestOf(backup);
  }

  /** A drill of a backup its caller found and checked the access to (a volume's: VolumeBackupService). */
  async requestOf(backup: BackupRecord): Promise<BackupView> {
    this.assertDrillable(backup);
    const queued = await this.queue(backup);
    if (!queued)
      throw new ConflictError(`A drill of backup ${backup.id} is already under way; its report will be on the backup`, {
        drill: backup.drill?.status ?? 'queued',
      });
    return presentBackup(queued);
  }

  /** 409 for a backup with no file to drill, 422 for an engine the platform cannot restore and count. */
  assertDrillable(backup: BackupRecord): void {
    if (backup.status !== 'succeeded')
      throw new ConflictError(`Backup ${backup.id} is ${presentBackup(backup).status}; only a succeeded backup can be drilled`, {
        status: presentBackup(backup).status,
      });
    if (backup.kind === 'dump' && (!backup.engine || !this.dump?.formatOf(backup.engine)))
      throw new NotSupportedError(`Drills of ${backup.engine} databases are not supported`, { engine: backup.engine });
  }

  /** Queues a drill of the backup unless one is queued or running; null when one is. */
  private async queue(backup: BackupRecord): Promise<BackupRecord | null> {
    const drill: DrillRecord = {
      status: 'queued',
      reason: null,
      requestedAt: this.deps.clock.now(),
      startedAt: null,
      finishedAt: null,
      counts: null,
      checksumOk: null,
    };
    const moved = await this.deps.store.backups.queueDrill(backup.id, drill);
    if (!moved) return null;
    await this.backupLog.append(backup.id, 'stdout', 'Restore drill queued');
    this.wake();
    return { ...backup, drill };
  }

  start(): void {
    if (this.started || this.stopping) return;
    this.started = true;
    this.loop.start();
    this.wake();
  }

  /**
   * Aborts the drill in flight and waits for it to record `failed` and remove its scratch container, but
   * never longer than `stopGraceMs`: a drill must not hold up a platform stop. One still going then is
   * left to recover(), which fails it and sweeps its container at the next start.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    this.controller.abort(new Error('The platform is stopping'));
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, this.limits.stopGraceMs);
      timer.unref();
    });
    await Promise.race([this.loop.stop(), grace]).finally(() => clearTimeout(timer));
  }

  /** Drills a stopped platform left running end `failed`; their scratch containers go. */
  async recover(): Promise<void> {
    const now = this.deps.clock.now();
    for (const backup of await this.deps.store.backups.listByDrill(['running'])) {
      const drill = backup.drill!;
      const reason = 'The drill was cut off by a platform restart';
      if (await this.deps.store.backups.transitionDrill(backup.id, ['running'], { ...drill, status: 'failed', reason, finishedAt: now })) {
        await this.backupLog.append(backup.id, 'stderr', `Restore drill failed: ${reason}`);
        await this.announce(backup, 'drill.failed', reason);
      }
    }
    for (const removed of [...((await this.ports.scratch?.sweep()) ?? []), ...((await this.ports.volumes?.sweep()) ?? [])])
      this.log('drill leftover removed', { name: removed });
  }

  /** Runs a pass now (or has the one under way look again before it ends); nothing before start(). */
  wake(): void {
    if (this.stopping || !this.started) return;
    this.woken = true;
    this.loop.wake();
  }

  /** One pass of the loop (a tick or a wake), then again for each wake that came while it ran. */
  private async drain(): Promise<void> {
    do {
      this.woken = false;
      await this.runPass();
    } while (this.woken && !this.stopping);
  }

  /** Queues the drills the configurations are due for, then runs the queued ones, one at a time, oldest first. */
  async runPass(): Promise<void> {
    await this.scheduleDue(this.deps.clock.now());
    for (;;) {
      if (this.stopping) return;
      const [next] = await this.deps.store.backups.listByDrill(['queued']);
      if (!next) return;
      await this.run(next);
    }
  }

  /**
   * Each configuration with drills on and due (its last drill a period ago, or never): a drill of its
   * newest succeeded backup, unless that one is queued or running already.
   */
  async scheduleDue(now: Date): Promise<void> {
    if (!this.deps.config.backups.scheduledDrills) return;
    for (const schedule of await this.deps.store.backupSchedules.list(null)) {
      if (schedule.drill === 'off') continue;
      if (schedule.lastDrillAt && now.getTime() - schedule.lastDrillAt.getTime() < PERIOD_MS[schedule.drill]) continue;
      try {
        await this.drillNewest(schedule, now);
      } catch (error) {
        this.log('scheduled drill not queued', { scheduleId: schedule.id, error: (error as Error).message });
      }
    }
  }

  private async drillNewest(schedule: BackupScheduleRecord, now: Date): Promise<void> {
    const records = await this.deps.store.backupSchedules.records(schedule, { limit: 20 });
    const newest = records.find((b) => b.status === 'succeeded');
    if (!newest) return;
    if (newest.drill?.status === 'queued' || newest.drill?.status === 'running') return;
    if (await this.queue(newest)) await this.deps.store.backupSchedules.update(schedule.id, { lastDrillAt: now });
  }

  /** One drill, start to end: its report is recorded on the backup whatever happens. */
  async run(queued: BackupRecord): Promise<void> {
    const startedAt = this.deps.clock.now();
    const running: DrillRecord = { ...queued.drill!, status: 'running', startedAt, finishedAt: null, reason: null };
    if (!(await this.deps.store.backups.transitionDrill(queued.id, ['queued'], running))) return;
    const log = this.backupLog.open(queued.id);
    const signal = AbortSignal.any([this.controller.signal, AbortSignal.timeout(this.limits.timeoutMs)]);
    let outcome: Pick<DrillRecord, 'status' | 'reason' | 'counts' | 'checksumOk'>;
    const progress: { checksumOk: boolean | null } = { checksumOk: null };
    try {
      outcome = await this.drill(queued, signal, log, progress);
    } catch (error) {
      const reason = signal.aborted
        ? this.controller.signal.aborted
          ? 'The drill was cut off: the platform is stopping'
          : `The drill took longer than ${Math.round(this.limits.timeoutMs / 60_000)} minutes`
        : (error as Error).message;
      outcome = {
        status: 'failed',
        reason,
        counts: null,
        checksumOk: error instanceof ChecksumMismatchError ? false : progress.checksumOk,
      };
    }
    const finishedAt = this.deps.clock.now();
    const seconds = ((finishedAt.getTime() - startedAt.getTime()) / 1000).toFixed(1);
    if (outcome.status === 'passed') log.write(`Restore drill passed in ${seconds} s${outcome.reason ? `: ${outcome.reason}` : ''}`);
    else log.write(`Restore drill ${outcome.status} after ${seconds} s: ${outcome.reason}`, 'stderr');
    await log.flush();
    const moved = await this.deps.store.backups.transitionDrill(queued.id, ['running'], { ...running, ...outcome, finishedAt });
    if (moved && outcome.status !== 'skipped')
      await this.announce(queued, outcome.status === 'passed' ? 'drill.passed' : 'drill.failed', outcome.reason);
  }

  private async announce(backup: BackupRecord, type: DrillEvent['type'], reason: string | null): Promise<void> {
    const service = await this.deps.store.projects.getService(backup.serviceId);
    if (!service) return;
    // The event outbox (notifications and the event stream deliver it); then whoever else listens.
    await this.deps.events.publishQuietly(type, { ...serviceRefOf(service), backupId: backup.id, reason }, this.log);
    await this.ports
      .publish({ type, serviceId: service.id, projectId: service.projectId, backupId: backup.id, reason })
      .catch((error: Error) => this.log('drill event not published', { backupId: backup.id, error: error.message }));
  }

  private async drill(
    backup: BackupRecord,
    signal: AbortSignal,
    log: JobLogWriter,
    progress: { checksumOk: boolean | null },
  ): Promise<Pick<DrillRecord, 'status' | 'reason' | 'counts' | 'checksumOk'>> {
    log.write(`Restore drill of backup ${backup.id} started`);
    const skipped = await this.diskWouldFill(backup);
    if (skipped) return { status: 'skipped', reason: skipped, counts: null, checksumOk: null };
    const service = await this.deps.store.projects.getService(backup.serviceId);
    if (!service) throw new DrillFailure('The service was deleted');
    if (backup.kind === 'volume') return this.drillVolume(backup, signal, log, progress);
    const engine = backup.engine;
    if (!engine) throw new DrillFailure('This backup names no database engine');
    const dump = this.dump;
    const scratch = this.ports.scratch;
    const ready = this.ports.ready;
    if (!dump?.count || !scratch || !ready) throw new DrillFailure('This platform has no container engine to run drills in');
    // The checksum first: a changed or truncated file fails the drill before anything is started.
    const source = await this.restores.verifiedSource(backup, signal, log);
    log.write(`Checksum verified (${backup.checksum}, ${backup.sizeBytes} bytes, from ${source.from})`);
    progress.checksumOk = true;
    const { env } = await this.env.resolvedFor(service);
    log.mask(...Object.values(env));
    const spec = ENGINE_SPECS[engine];
    const id = backup.id.toLowerCase();
    try {
      const started = await scratch.start(
        {
          id,
          engine: engine,
          image: this.deps.config.databases.images[engine] ?? spec.image,
          env,
          cmd: spec.command?.({ logicalReplication: false }) ?? null,
          dataDir: spec.dataDir,
        },
        signal,
        (line) => log.write(line),
      );
      await this.waitReady(id, { serviceId: `drill-${id}`, engine: engine, host: started.host, port: spec.internalPort, env }, signal);
      log.write('Scratch database ready; restoring the backup into it');
      const target = { engine: engine, containerId: started.containerId, env };
      try {
        await dump.restore(target, await source.open(), signal, (line) => log.write(line, 'stderr'));
      } catch (error) {
        if (signal.aborted) throw error;
        throw new DrillFailure(`The restore failed: ${maskIn((error as Error).message, env)}`);
      }
      const counted = await dump.count({ ...target, host: started.host }, signal, (line) => log.write(line, 'stderr'));
      if (!backup.counts)
        return {
          status: 'passed',
          reason: 'restored without error; nothing was counted when the backup was made, so no counts were compared',
          counts: counted.counts,
          checksumOk: true,
        };
      const mismatches = countMismatches(backup.counts, counted.counts);
      const total = Object.values(counted.counts).reduce((sum, n) => sum + n, 0);
      log.write(`Counted the restored copy: ${total} ${counted.unit} in ${Object.keys(counted.counts).length}`);
      if (mismatches.length > 0)
        return {
          status: 'failed',
          reason: `The restored copy does not hold what the backup counted: ${mismatches.slice(0, 10).join('; ')}${mismatches.length > 10 ? `; and ${mismatches.length - 10} more` : ''}`,
          counts: counted.counts,
          checksumOk: true,
        };
      return { status: 'passed', reason: null, counts: counted.counts, checksumOk: true };
    } finally {
      await source.cleanup().catch(() => undefined);
      await scratch.remove(id).catch((error: Error) => log.write(`Scratch database not removed: ${error.message}`, 'stderr'));
      log.write('Scratch database removed');
    }
  }

  /**
   * A volume backup's drill: the tar (checksum first) extracted into a scratch volume by the volume
   * archive's helper, its regular files and their bytes counted with find against what the tar held when
   * it was made. The scratch volume and helper go however it ends.
   */
  private async drillVolume(
    backup: BackupRecord,
    signal: AbortSignal,
    log: JobLogWriter,
    progress: { checksumOk: boolean | null },
  ): Promise<Pick<DrillRecord, 'status' | 'reason' | 'counts' | 'checksumOk'>> {
    const volumes = this.ports.volumes;
    if (!volumes) throw new DrillFailure('This platform has no container engine to run drills in');
    const source = await this.restores.verifiedSource(backup, signal, log);
    log.write(`Checksum verified (${backup.checksum}, ${backup.sizeBytes} bytes, from ${source.from})`);
    progress.checksumOk = true;
    let counted: Record<string, number>;
    try {
      const stats = await volumes.drill(backup.id.toLowerCase(), await source.open(), signal, (line) => log.write(line));
      counted = { files: stats.files, bytes: stats.bytes };
    } catch (error) {
      if (signal.aborted) throw error;
      throw new DrillFailure(`The restore failed: ${(error as Error).message}`);
    } finally {
      await source.cleanup().catch(() => undefined);
    }
    log.write(`Counted the scratch volume: ${counted.files} files, ${counted.bytes} bytes; scratch volume removed`);
    if (!backup.counts)
      return {
        status: 'passed',
        reason: 'restored without error; nothing was counted when the backup was made',
        counts: counted,
        checksumOk: true,
      };
    const mismatches = countMismatches(backup.counts, counted);
    if (mismatches.length > 0)
      return {
        status: 'failed',
        reason: `The restored volume does not hold what the backup counted: ${mismatches.join('; ')}`,
        counts: counted,
        checksumOk: true,
      };
    return { status: 'passed', reason: null, counts: counted, checksumOk: true };
  }

  /** The engine's own check, until it answers; a scratch container that exited fails the drill with its last lines. */
  private async waitReady(id: string, endpoint: DatabaseEndpoint, signal: AbortSignal): Promise<void> {
    const deadline = Date.now() + this.limits.readyTimeoutMs;
    let last = '';
    for (;;) {
      signal.throwIfAborted();
      try {
        await this.ports.ready!(endpoint, AbortSignal.any([signal, AbortSignal.timeout(10_000)]));
        return;
      } catch (error) {
        last = (error as Error).message;
      }
      const state = await this.ports.scratch!.alive(id);
      if (!state.running)
        throw new DrillFailure(`The scratch database exited before it was ready: ${state.lastLines.slice(-5).join(' | ') || last}`);
      if (Date.now() > deadline)
        throw new DrillFailure(`The scratch database did not answer within ${this.limits.readyTimeoutMs / 1000} s: ${last}`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }

  /** The reason to skip, when the restored copy would take the disk past 90%; null otherwise (or when unknown). */
  private async diskWouldFill(backup: BackupRecord): Promise<string | null> {
    const disk = await this.ports.disk().catch(() => null);
    if (!disk || disk.totalBytes <= 0) return null;
    const needed = backup.sizeBytes * RESTORE_SIZE_FACTOR;
    const after = (disk.usedBytes + needed) / disk.totalBytes;
    if (after <= DRILL_DISK_LIMIT) return null;
    const pct = (n: number) => `${(n * 100).toFixed(1)}%`;
    return `Skipped: the disk is ${pct(disk.usedBytes / disk.totalBytes)} full and the restored copy (about ${needed} bytes) would take it to ${pct(after)}, past ${pct(DRILL_DISK_LIMIT)}`;
  }
}
