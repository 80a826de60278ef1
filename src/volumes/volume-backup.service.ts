import { assertWrite, type Actor } from '../domain/access.js';
import { ConflictError, NotFoundError, NotRunningError } from '../domain/errors.js';
import { serviceRefOf } from '../domain/events.js';
import type { ServiceRecord } from '../domain/types.js';
import type { ServiceDeps } from '../platform/deps.js';
import { serviceFor } from '../platform/lookup.js';
import type { BackupLog } from '../backups/backup-log.js';
import type { BackupQueue } from '../backups/backup-queue.js';
import type { BackupRestore } from '../backups/backup-restore.js';
import type { BackupDownload, BackupService } from '../backups/backup.service.js';
import {
  presentBackup,
  presentBackupLog,
  type BackupLogLineView,
  type BackupView,
  type RestoreResultView,
} from '../backups/backup-views.js';
import type { BackupRecord } from '../backups/backup.records.js';
import type { DrillService } from '../backups/drill.service.js';
import type { VolumeArchive } from '../backups/volume-archive.port.js';
import { dockerVolumeName } from '../domain/volume-names.js';
import { quiesce } from './volume-quiesce.js';
import type { VolumeRuntime } from './volume-runtime.port.js';
import type { ServiceVolumeRecord } from './volume.records.js';
import { presentVolume, type VolumeBackupInput, type VolumeBackupListView, type VolumeView } from './volume-views.js';

const LISTED_BACKUPS = 500;
const LOG_LINES_MAX = 5_000;

/**
 * Backups of a service's named volumes, the database backups' surface under `/volumes/:name`: the same
 * queue, job runner, destinations, checksum check, retention and drills (the `volume` kind of backup);
 * only where the bytes come from and go to differs (the volume archive instead of an engine's dump).
 */
export class VolumeBackupService {
  /** Services with a volume restore under way: a second one waits for it to end. */
  private readonly restoring = new Set<string>();

  constructor(
    private readonly deps: ServiceDeps,
    private readonly queue: BackupQueue,
    private readonly backups: Pick<BackupService, 'downloadOf' | 'deleteOf'>,
    private readonly restores: Pick<BackupRestore, 'verifiedSource'>,
    private readonly drills: Pick<DrillService, 'requestOf'>,
    private readonly log: BackupLog,
    private readonly archive: VolumeArchive | null,
    private readonly runtime: VolumeRuntime | null,
  ) {}

  async volumes(actor: Actor, serviceId: string): Promise<VolumeView[]> {
    const service = await serviceFor(this.deps.store, actor, serviceId);
    return (await this.deps.store.volumes.listOf(service.id)).map(presentVolume);
  }

  async list(actor: Actor, serviceId: string, name: string): Promise<VolumeBackupListView> {
    const { service, volume } = await this.volumeFor(actor, serviceId, name);
    const [backups, drills] = await Promise.all([
      this.deps.store.backups.listOf(service.id, 'volume', volume.name, LISTED_BACKUPS),
      this.deps.store.backups.drillSummary(service.id, 'volume', volume.name),
    ]);
    return { volume: presentVolume(volume), backups: backups.map(presentBackup), drills };
  }

  async create(actor: Actor, serviceId: string, name: string, input: VolumeBackupInput): Promise<BackupView> {
    assertWrite(actor);
    const { service, volume } = await this.volumeFor(actor, serviceId, name);
    return presentBackup(await this.queue.queueVolume(service, { name: volume.name, mode: input.mode }, input.storage, 'manual'));
  }

  async download(actor: Actor, serviceId: string, name: string, backupId: string): Promise<BackupDownload> {
    const { service, backup } = await this.backupFor(actor, serviceId, name, backupId);
    return this.backups.downloadOf(service, backup);
  }

  async delete(actor: Actor, serviceId: string, name: string, backupId: string, signal?: AbortSignal): Promise<void> {
    assertWrite(actor);
    const { backup } = await this.backupFor(actor, serviceId, name, backupId);
    await this.backups.deleteOf(backup, signal);
  }

  async logs(actor: Actor, serviceId: string, name: string, backupId: string): Promise<BackupLogLineView[]> {
    const { backup } = await this.backupFor(actor, serviceId, name, backupId);
    return (await this.deps.store.backups.listLogs(backup.id, 0, LOG_LINES_MAX)).map(presentBackupLog);
  }

  /** `POST .../backups/:backupId/drill`: the drill runner restores it into a scratch volume and counts it. */
  async drill(actor: Actor, serviceId: string, name: string, backupId: string): Promise<BackupView> {
    assertWrite(actor);
    const { backup } = await this.backupFor(actor, serviceId, name, backupId);
    return this.drills.requestOf(backup);
  }

  /**
   * Replaces the volume's contents with the backup's: the checksum is checked first (a changed file is
   * refused before anything is touched), then the service is stopped, the tar is extracted beside the old
   * files and swapped in, and the service is started again, whatever the outcome.
   */
  async restore(actor: Actor, serviceId: string, name: string, backupId: string, signal?: AbortSignal): Promise<RestoreResultView> {
    assertWrite(actor);
    const { service, volume, backup } = await this.backupFor(actor, serviceId, name, backupId);
    if (backup.status !== 'succeeded')
      throw new ConflictError(`Backup ${backup.id} is ${presentBackup(backup).status}; only a succeeded backup can be restored`, {
        status: presentBackup(backup).status,
      });
    const archive = this.archive;
    const runtime = this.runtime;
    if (!archive || !runtime) throw new NotRunningError('No container engine is connected', { serviceId: service.id });
    const busy = await this.deps.store.backups.listByStatus(['queued', 'running']);
    if (busy.some((b) => b.serviceId === service.id) || this.restoring.has(service.id))
      throw new ConflictError('A backup or restore of this service is under way; restore once it ended');
    this.restoring.add(service.id);
    const log = this.log.open(backup.id);
    const work = signal ?? new AbortController().signal;
    try {
      log.write(`Restore of backup ${backup.id} into volume ${volume.name} requested`);
      const source = await this.restores.verifiedSource(backup, work, log);
      log.write(`Checksum verified (${backup.checksum}, ${backup.sizeBytes} bytes, from ${source.from})`);
      try {
        const held = await quiesce(this.deps, runtime, service);
        log.write(`Service stopped for the restore (${held.stopped} container${held.stopped === 1 ? '' : 's'})`);
        try {
          await archive.restore(
            dockerVolumeName(this.deps.config.resourcePrefix, service.id, volume.name),
            await source.open(),
            work,
            (line) => log.write(line),
          );
        } finally {
          const downMs = await held.resume();
          log.write(`Service started again: ${(downMs / 1000).toFixed(1)} s of downtime for the restore`);
        }
      } catch (error) {
        log.write(`Restore failed: ${(error as Error).message}`, 'stderr');
        const failure =
          error instanceof ConflictError || error instanceof NotRunningError
            ? error
            : new ConflictError(`The restore failed: ${(error as Error).message}`, { backupId: backup.id });
        await this.restoreEvent('restore.failed', service, backup, failure.message);
        throw failure;
      } finally {
        await source.cleanup();
      }
      const restoredAt = this.deps.clock.now();
      log.write('Restore finished');
      await this.restoreEvent('restore.succeeded', service, backup, null);
      return { ok: true, restoredAt: restoredAt.toISOString(), backup: { id: backup.id, status: 'succeeded' } };
    } finally {
      this.restoring.delete(service.id);
      await log.flush();
    }
  }

  private restoreEvent(type: 'restore.succeeded' | 'restore.failed', service: ServiceRecord, backup: BackupRecord, error: string | null) {
    return this.deps.events.publishQuietly(type, {
      ...serviceRefOf(service),
      backupId: backup.id,
      storage: backup.storage,
      sizeBytes: backup.sizeBytes,
      error,
    });
  }

  /** The service (any kind) and its named volume; 404 for either unknown. */
  private async volumeFor(actor: Actor, serviceId: string, name: string): Promise<{ service: ServiceRecord; volume: ServiceVolumeRecord }> {
    const service = await serviceFor(this.deps.store, actor, serviceId);
    const volume = await this.deps.store.volumes.get(service.id, name);
    if (!volume) throw new NotFoundError('Volume', name);
    return { service, volume };
  }

  /** A backup of this volume; 404 for an unknown one, another volume's and a database's. */
  private async backupFor(actor: Actor, serviceId: string, name: string, backupId: string) {
    const { service, volume } = await this.volumeFor(actor, serviceId, name);
    const backup = await this.deps.store.backups.get(backupId);
    if (!backup || backup.serviceId !== service.id || backup.kind !== 'volume' || backup.volume !== volume.name)
      throw new NotFoundError('Backup', backupId);
    return { service, volume, backup };
  }
}
