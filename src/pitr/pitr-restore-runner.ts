import type { BackupDestinations } from '../backups/backup-destinations.js';
import type { BackupRestore } from '../backups/backup-restore.js';
import { ENGINE_SPECS, databaseEngineOf } from '../domain/database-engines.js';
import type { ServiceRecord } from '../domain/types.js';
import type { EnvService } from '../env/env.service.js';
import { JobLogWriter } from '../jobs/job-log-writer.js';
import type { ServiceDeps } from '../platform/deps.js';
import { PassLoop } from '../platform/pass-loop.js';
import { resourceNames } from '../deployments/runtime-deps.js';
import type { PitrRestoreRecord, WalSegmentRecord } from './pitr.records.js';
import type { ArchivedFile, PointInTimeRecovery } from './wal-archive.port.js';

export interface PitrRestoreRunnerPorts {
  recovery: PointInTimeRecovery;
  /** Checks a base backup's bytes against its checksum before anything is restored from it. */
  backups: Pick<BackupRestore, 'verifiedSource'>;
  destinations: BackupDestinations;
  env: EnvService;
  /** Queues the first deployment of the restored service, once its volume holds the recovered data. */
  deploy(service: ServiceRecord, firstLine: string): Promise<void>;
  /** Where a restore's lines go (the platform's log; the lines name the restore). */
  log(restoreId: string, line: string, stream: 'stdout' | 'stderr'): void;
}

export interface PitrRestoreLimits {
  /** A restore taking longer is cut off and ends `failed`. */
  timeoutMs: number;
  /** How often the queue is looked at without a wake. */
  intervalMs: number;
}

export const DEFAULT_PITR_RESTORE_LIMITS: PitrRestoreLimits = { timeoutMs: 6 * 3_600_000, intervalMs: 30_000 };

/**
 * Runs queued point-in-time restores one at a time (docs/backups.md, Point-in-time recovery): the base
 * backup, checked against its checksum, and the archived WAL from its first segment, each checked too,
 * go through PostgreSQL's own recovery (PointInTimeRecovery) into the data volume of the new service
 * made when the restore was queued; the restore records the second reached and the new service is
 * deployed on that volume. The original's container, volume and archive are only read.
 */
export class PitrRestoreJobs {
  private readonly loop: PassLoop;

  constructor(
    private readonly deps: ServiceDeps,
    private readonly ports: PitrRestoreRunnerPorts,
    private readonly limits: PitrRestoreLimits = DEFAULT_PITR_RESTORE_LIMITS,
    private readonly onError: (message: string, fields?: Record<string, unknown>) => void = () => undefined,
  ) {
    this.loop = new PassLoop(
      () => this.pass(),
      () => this.limits.intervalMs,
      (error) => this.onError('point-in-time restore pass failed', { error: error.message }),
    );
  }

  start(): void {
    this.loop.start();
  }

  /** Removes the scratch containers and networks of restores a stopped platform left (before start). */
  async sweep(): Promise<void> {
    const removed = await this.ports.recovery.sweep();
    if (removed.length > 0) this.onError('point-in-time restore scratch left by a stop removed', { removed });
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  wake(): void {
    this.loop.wake();
  }

  /** Runs every queued restore, oldest first. */
  async pass(): Promise<void> {
    for (const restore of await this.deps.store.pitr.restoresByStatus(['queued'])) {
      const now = this.deps.clock.now();
      if (!(await this.deps.store.pitr.transitionRestore(restore.id, ['queued'], { status: 'running', startedAt: now }))) continue;
      const running = { ...restore, status: 'running' as const, startedAt: now };
      try {
        const reachedAt = await this.run(running);
        await this.deps.store.pitr.transitionRestore(restore.id, ['running'], {
          status: 'succeeded',
          reachedAt,
          finishedAt: this.deps.clock.now(),
        });
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        this.ports.log(restore.id, `Failed: ${message}`, 'stderr');
        await this.deps.store.pitr.transitionRestore(restore.id, ['running'], {
          status: 'failed',
          error: message,
          finishedAt: this.deps.clock.now(),
        });
      }
    }
  }

  private async run(restore: PitrRestoreRecord): Promise<Date | null> {
    const say = (line: string, stream: 'stdout' | 'stderr' = 'stdout') => this.ports.log(restore.id, line, stream);
    const original = await this.deps.store.projects.getService(restore.serviceId);
    if (!original) throw new Error('The database restored from was deleted');
    if (restore.replace || !restore.targetServiceId || restore.targetServiceId === original.id)
      throw new Error('Only a restore into a new service is run here; the original was left untouched');
    const target = await this.deps.store.projects.getService(restore.targetServiceId);
    if (!target) throw new Error('The new service the restore fills was deleted');
    const engine = databaseEngineOf(original);
    if (!engine) throw new Error(`${original.name} is no database`);
    const base = restore.baseBackupId ? await this.deps.store.backups.get(restore.baseBackupId) : null;
    if (base?.status !== 'succeeded' || !base.walStart) throw new Error('The base backup the restore starts from is gone');
    const walStart = base.walStart;
    const segments = (await this.deps.store.pitr.segments(original.id)).filter((s) => s.name >= walStart || s.name.endsWith('.history'));
    const signal = AbortSignal.timeout(this.limits.timeoutMs);
    const env = (await this.ports.env.resolvedFor(target)).env;
    const writer = new JobLogWriter(async (stream, lines) => lines.forEach((line) => say(line, stream)));
    writer.mask(...Object.values(env));
    const volume = resourceNames(this.deps.config.resourcePrefix, target.id, '', target.environmentId).volume;
    say(
      `Restoring ${original.name} to ${restore.at.toISOString()} into ${target.name}: base backup ${base.id}, ${segments.length} WAL files`,
    );
    const source = await this.ports.backups.verifiedSource(base, signal, writer);
    let filled = false;
    try {
      const result = await this.ports.recovery.recover({
        id: restore.id,
        image: this.deps.config.databases.images[engine] ?? ENGINE_SPECS[engine].image,
        env,
        volume,
        dataDir: ENGINE_SPECS[engine].dataDir,
        base: await source.open(),
        files: segments.map((s) => this.archived(s, signal)),
        at: restore.at,
        signal,
        log: (line, stream) => writer.write(line, stream ?? 'stdout'),
      });
      filled = true;
      say(
        result.reachedAt
          ? `Reached ${result.reachedAt.toISOString()}: the commit time of the last transaction applied${result.endOfArchive ? ' (the archive ends there)' : ''}`
          : 'No transaction after the base backup was applied: the data is the base backup’s',
      );
      await this.ports.deploy(
        target,
        `Deployment queued for ${target.name}: restored from ${original.name} at ${restore.at.toISOString()}`,
      );
      return result.reachedAt;
    } finally {
      await source.cleanup();
      await writer.flush();
      // A failed fill leaves no half-made data directory: the new service starts empty or is restored again.
      if (!filled) await this.ports.recovery.removeVolume(volume).catch(() => undefined);
    }
  }

  /** An archived WAL file, read from where it was stored and refused when its bytes differ from its checksum. */
  private archived(segment: WalSegmentRecord, signal: AbortSignal): ArchivedFile {
    const { files } = this.ports.destinations;
    return {
      name: segment.name,
      open: async () => {
        const read = async () => {
          if (segment.localPath) return files.read(segment.localPath);
          if (!segment.objectKey) throw new Error(`WAL ${segment.name}: its file is gone`);
          const config = await this.ports.destinations.configOf(segment.storageId);
          if (!config) throw new Error(`WAL ${segment.name}: its object store is no longer set`);
          return this.ports.destinations.open(config).download(segment.objectKey, signal);
        };
        const chunks: Buffer[] = [];
        for await (const chunk of await read()) chunks.push(chunk as Buffer);
        const bytes = Buffer.concat(chunks);
        const { createHash } = await import('node:crypto');
        const checksum = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
        if (checksum !== segment.checksum) throw new Error(`WAL ${segment.name} was changed since it was archived (checksum differs)`);
        const { Readable } = await import('node:stream');
        return Readable.from([bytes]);
      },
    };
  }
}
