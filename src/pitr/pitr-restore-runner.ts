import type { BackupDestinations } from '../backups/backup-destinations.js';
import type { BackupRestore } from '../backups/backup-restore.js';
import { ENGINE_SPECS, databaseEngineOf } from '../domain/database-engines.js';
import type { ServiceRecord } from '../domain/types.js';
import type { EnvService } from '../env/env.service.js';
import { JobLogWriter } from '../jobs/job-log-writer.js';
import type { ServiceDeps } from '../platform/deps.js';
import { PassLoop } from '../platform/pass-loop.js';
import { dataVolumeOf, restoredVolume } from '../domain/wal-spool.js';
import type { PitrRestoreRecord, WalSegmentRecord } from './pitr.records.js';
import type { ArchivedFile, PointInTimeRecovery, RecoveryResult } from './wal-archive.port.js';

export interface PitrRestoreRunnerPorts {
  recovery: PointInTimeRecovery;
  /** Checks a base backup's bytes against its checksum before anything is restored from it. */
  backups: Pick<BackupRestore, 'verifiedSource'>;
  destinations: BackupDestinations;
  env: EnvService;
  /**
   * Queues a deployment of the restored service once its volume holds the recovered data (the new
   * service's first, or the original's on the swapped volume); resolves with the deployment's id.
   */
  deploy(service: ServiceRecord, firstLine: string): Promise<string>;
  /** The platform's log too gets a restore's lines (each naming the restore); its own log is in the store. */
  log(restoreId: string, line: string, stream: 'stdout' | 'stderr'): void;
}

export interface PitrRestoreLimits {
  /** A restore taking longer is cut off and ends `failed`. */
  timeoutMs: number;
  /** How often the queue is looked at without a wake. */
  intervalMs: number;
  /** How often an in-place restore looks at the deployment that swaps the database onto its data (500 ms unless set). */
  pollMs?: number;
}

export const DEFAULT_PITR_RESTORE_LIMITS: PitrRestoreLimits = { timeoutMs: 6 * 3_600_000, intervalMs: 30_000 };

/**
 * Runs queued point-in-time restores one at a time (docs/backups.md, Point-in-time recovery): the base
 * backup, checked against its checksum, and the archived WAL from its first segment, each checked too,
 * go through PostgreSQL's own recovery (PointInTimeRecovery) into the data volume of the new service
 * made when the restore was queued; the restore records the second reached and the new service is
 * deployed on that volume. The original's container, volume and archive are only read. With `replace`,
 * the recovery fills a new volume of the original instead, and only once that succeeded is the original
 * swapped onto it (swap below); its own volume is kept until it ran on the new one.
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

  /**
   * After a platform start: what a stopped platform left is settled (sweep, then recover), then queued
   * restores run. The scratch containers go first: they hold the volumes recover removes.
   */
  async resume(): Promise<void> {
    await this.sweep();
    await this.recover();
    this.start();
  }

  /** Removes the scratch containers and networks of restores a stopped platform left (before start). */
  async sweep(): Promise<void> {
    const removed = await this.ports.recovery.sweep();
    if (removed.length > 0) this.onError('point-in-time restore scratch left by a stop removed', { removed });
  }

  /**
   * Restores a stopped platform left running end `failed`, the original as it was: the original is never
   * written (a restore in place fills a volume of its own), and an in-place restore cut off during its
   * swap puts the database back onto the volume it ran on (and deploys it there), then its filled volume
   * goes. Resolves with how many it ended.
   */
  async recover(): Promise<number> {
    const now = this.deps.clock.now();
    const prefix = this.deps.config.resourcePrefix;
    let failed = 0;
    for (const restore of await this.deps.store.pitr.restoresByStatus(['running'])) {
      if (
        !(await this.deps.store.pitr.transitionRestore(restore.id, ['running'], {
          status: 'failed',
          error: 'The restore was cut off by a platform restart; the original database was left untouched',
          finishedAt: now,
        }))
      )
        continue;
      failed++;
      await this.append(restore.id, 'stderr', ['Failed: cut off by a platform restart; the original database was left untouched']);
      if (!restore.replace) continue;
      const filled = restoredVolume(prefix, restore.serviceId, restore.id);
      const settings = await this.deps.store.pitr.getSettings(restore.serviceId);
      const service = await this.deps.store.projects.getService(restore.serviceId);
      if (settings && restore.previousVolume !== null && settings.dataVolume === filled) {
        const previous = restore.previousVolume === dataVolumeOf(prefix, restore.serviceId) ? null : restore.previousVolume;
        await this.deps.store.pitr.putSettings({ ...settings, dataVolume: previous });
        await this.append(restore.id, 'stderr', [`Put back on ${restore.previousVolume}, where it ran before the swap`]);
        if (service)
          await this.ports
            .deploy(
              service,
              `Deployment queued for ${service.name}: back on its own data, the in-place restore ${restore.id} was cut off by a restart`,
            )
            .catch((error: Error) => this.onError('point-in-time restore: redeploy after a cut-off swap failed', { error: error.message }));
      }
      // The database is back on its own volume (or never left it): the half-filled one goes.
      await this.ports.recovery.removeVolume(filled).catch(() => undefined);
    }
    return failed;
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
        await this.append(restore.id, 'stderr', [`Failed: ${message}`]).catch(() => undefined);
        await this.deps.store.pitr.transitionRestore(restore.id, ['running'], {
          status: 'failed',
          error: message,
          finishedAt: this.deps.clock.now(),
        });
      }
    }
  }

  private async run(restore: PitrRestoreRecord): Promise<Date | null> {
    // Every line goes through the writer: batched into the restore's log, secrets masked.
    const writer = new JobLogWriter((stream, lines) => this.append(restore.id, stream, lines));
    const say = (line: string, stream: 'stdout' | 'stderr' = 'stdout') => writer.write(line, stream);
    const original = await this.deps.store.projects.getService(restore.serviceId);
    if (!original) throw new Error('The database restored from was deleted');
    if (!restore.targetServiceId || restore.replace !== (restore.targetServiceId === original.id))
      throw new Error('The restore names no service to fill; the original was left untouched');
    const target = restore.replace ? original : await this.deps.store.projects.getService(restore.targetServiceId);
    if (!target) throw new Error('The new service the restore fills was deleted');
    const engine = databaseEngineOf(original);
    if (!engine) throw new Error(`${original.name} is no database`);
    const base = restore.baseBackupId ? await this.deps.store.backups.get(restore.baseBackupId) : null;
    if (base?.status !== 'succeeded' || !base.walStart) throw new Error('The base backup the restore starts from is gone');
    const walStart = base.walStart;
    const segments = (await this.deps.store.pitr.segments(original.id)).filter((s) => s.name >= walStart || s.name.endsWith('.history'));
    const signal = AbortSignal.timeout(this.limits.timeoutMs);
    const env = (await this.ports.env.resolvedFor(target)).env;
    writer.mask(...Object.values(env));
    const prefix = this.deps.config.resourcePrefix;
    // In place, a volume of its own beside the original's, which is only read until the swap.
    const volume = restore.replace ? restoredVolume(prefix, original.id, restore.id) : dataVolumeOf(prefix, target.id);
    say(
      restore.replace
        ? `Restoring ${original.name} in place to ${restore.at.toISOString()}: base backup ${base.id}, ${segments.length} WAL files, into the new volume ${volume}; ${original.name} keeps running on its own until that succeeded`
        : `Restoring ${original.name} to ${restore.at.toISOString()} into ${target.name}: base backup ${base.id}, ${segments.length} WAL files`,
    );
    let filled = false;
    try {
      const source = await this.ports.backups.verifiedSource(base, signal, writer);
      let result: RecoveryResult;
      try {
        result = await this.ports.recovery.recover({
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
      } finally {
        await source.cleanup();
      }
      filled = true;
      say(
        result.reachedAt
          ? `Reached ${result.reachedAt.toISOString()}: the commit time of the last transaction applied${result.endOfArchive ? ' (the archive ends there)' : ''}`
          : 'No transaction after the base backup was applied: the data is the base backup’s',
      );
      if (restore.replace) await this.swap(restore, original, volume, result.reachedAt, signal, say, () => writer.flush());
      else
        await this.ports.deploy(
          target,
          `Deployment queued for ${target.name}: restored from ${original.name} at ${restore.at.toISOString()}`,
        );
      return result.reachedAt;
    } finally {
      await writer.flush();
      // A failed fill leaves no half-made data directory: the new service starts empty or is restored again.
      if (!filled) await this.ports.recovery.removeVolume(volume).catch(() => undefined);
    }
  }

  /**
   * An in-place restore's swap, once its volume holds the recovered data: the database's settings point it
   * at that volume (the volume it ran on recorded on the restore first, for a restart to put back) and it is
   * deployed there. A deployment that does not succeed puts it back onto its own volume, deployed again, and
   * the filled one goes; one that succeeds lets the old volume go.
   */
  private async swap(
    restore: PitrRestoreRecord,
    original: ServiceRecord,
    filled: string,
    reachedAt: Date | null,
    signal: AbortSignal,
    say: (line: string, stream?: 'stdout' | 'stderr') => void,
    flush: () => Promise<void>,
  ): Promise<void> {
    const prefix = this.deps.config.resourcePrefix;
    const settings = await this.deps.store.pitr.getSettings(original.id);
    if (!settings) throw new Error(`${original.name} has no point-in-time recovery settings any more`);
    const previous = settings.dataVolume ?? dataVolumeOf(prefix, original.id);
    if (!(await this.deps.store.pitr.transitionRestore(restore.id, ['running'], { previousVolume: previous })))
      throw new Error('The restore was ended while it ran');
    await this.deps.store.pitr.putSettings({ ...settings, dataVolume: filled });
    say(`Swapping ${original.name} onto ${filled}; its data so far stays on ${previous} until it runs there`);
    // Whatever ends the deployment (it failed, the service is scaled to 0, the restore's time ran out): put back.
    const outcome = await this.deployed(
      original,
      `Deployment queued for ${original.name}: restored in place to ${restore.at.toISOString()} (volume ${filled})`,
      signal,
    ).catch((error: Error) => `without running (${error.message})`);
    if (outcome === 'succeeded') {
      // Its log holds every step up to here when it shows succeeded.
      say(`${original.name} runs on the restored data`);
      await flush();
      // The restore ends succeeded before the old volume goes: a restart from here on never puts it back onto a removed volume.
      const now = this.deps.clock.now();
      if (!(await this.deps.store.pitr.transitionRestore(restore.id, ['running'], { status: 'succeeded', reachedAt, finishedAt: now })))
        throw new Error('The restore was ended while its deployment ran; the previous volume was kept');
      // The restored data is a new timeline: a base backup of it opens the window again (the archiver's next pass).
      const after = await this.deps.store.pitr.getSettings(original.id);
      if (after) await this.deps.store.pitr.putSettings({ ...after, nextBaseAt: now });
      if (previous !== filled)
        await this.ports.recovery.removeVolume(previous).then(
          () => say(`Its previous volume ${previous} was removed`),
          (e: Error) => say(`Its previous volume ${previous} was not removed: ${e.message}`, 'stderr'),
        );
      return;
    }
    // Put back: the original's own volume was never written, so it starts as it was.
    const current = (await this.deps.store.pitr.getSettings(original.id)) ?? settings;
    await this.deps.store.pitr.putSettings({ ...current, dataVolume: previous === dataVolumeOf(prefix, original.id) ? null : previous });
    say(`The deployment on the restored data ended ${outcome}: putting ${original.name} back on ${previous}`, 'stderr');
    const back = await this.deployed(
      original,
      `Deployment queued for ${original.name}: back on its own data after a failed in-place restore`,
      signal,
    ).catch((error: Error) => `not run: ${error.message}`);
    await this.ports.recovery.removeVolume(filled).catch(() => undefined);
    throw new Error(
      `${original.name} did not start on the restored data (its deployment ended ${outcome}); it was put back on its own data (that deployment ${back})`,
    );
  }

  /** Queues a deployment of the service and waits for it to end: its final status. */
  private async deployed(service: ServiceRecord, firstLine: string, signal: AbortSignal): Promise<string> {
    const id = await this.ports.deploy(service, firstLine);
    for (;;) {
      const deployment = await this.deps.store.deployments.get(id);
      if (!deployment) return 'removed';
      if (!['queued', 'running'].includes(deployment.status)) return deployment.status;
      if (signal.aborted) throw signal.reason instanceof Error ? signal.reason : new Error('The restore timed out');
      await new Promise((resolve) => setTimeout(resolve, this.limits.pollMs ?? 500));
    }
  }

  /** Lines of a restore's log (GET .../pitr/restores/:restoreId/logs), and the platform's log (each naming the restore). */
  private async append(restoreId: string, stream: 'stdout' | 'stderr', lines: string[]): Promise<void> {
    const createdAt = this.deps.clock.now();
    for (const line of lines) this.ports.log(restoreId, line, stream);
    await this.deps.store.pitr.appendLogs(
      restoreId,
      lines.map((line) => ({ line, stream, createdAt })),
    );
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
