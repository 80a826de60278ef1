import { assertWrite, type Actor } from '../domain/access.js';
import { NotFoundError, NotRunningError } from '../domain/errors.js';
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
  constructor(
    private readonly deps: ServiceDeps,
    private readonly queue: BackupQueue,
    private readonly backups: Pick<BackupService, 'downloadOf' | 'deleteOf'>,
    private readonly restores: Pick<BackupRestore, 'restoreWith'>,
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
   * Replaces the volume's contents with the backup's, in the restores' one frame (succeeded backups only,
   * one at a time per service, the checksum first): the service is stopped, the tar is extracted beside the
   * old files and swapped in, and the service is started again, whatever the outcome.
   */
  async restore(actor: Actor, serviceId: string, name: string, backupId: string, signal?: AbortSignal): Promise<RestoreResultView> {
    assertWrite(actor);
    const { service, volume, backup } = await this.backupFor(actor, serviceId, name, backupId);
    const archive = this.archive;
    const runtime = this.runtime;
    if (!archive || !runtime) throw new NotRunningError('No container engine is connected', { serviceId: service.id });
    return this.restores.restoreWith(service, backup, signal, {
      requested: `Restore of backup ${backup.id} into volume ${volume.name} requested`,
      apply: async (input, work, log) => {
        const held = await quiesce(this.deps, runtime, service);
        log.write(`Service stopped for the restore (${held.stopped} container${held.stopped === 1 ? '' : 's'})`);
        try {
          const target = dockerVolumeName(this.deps.config.resourcePrefix, service.id, volume.name);
          await archive.restore(target, input, work, (line) => log.write(line));
        } finally {
          const downMs = await held.resume();
          log.write(`Service started again: ${(downMs / 1000).toFixed(1)} s of downtime for the restore`);
        }
      },
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
