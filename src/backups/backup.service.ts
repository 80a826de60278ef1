import type { Readable } from 'node:stream';
import { assertWrite, type Actor } from '../domain/access.js';
import { ConflictError } from '../domain/errors.js';
import type { Table } from '../persistence/store.js';
import type { ServiceDeps } from '../platform/deps.js';
import { VersionedCache } from '../platform/versioned-cache.js';
import type { BackupDestinations } from './backup-destinations.js';
import { upstream } from './backup-errors.js';
import type { BackupQueue } from './backup-queue.js';
import type { BackupSettingsService } from './backup-settings.service.js';
import { backupFor, databaseFor } from './backup-targets.js';
import {
  type BackupListView,
  type BackupLogLineView,
  type BackupView,
  presentBackup,
  presentBackupLog,
  presentBackupSettings,
} from './backup-views.js';
import { BACKUP_FILE_EXTENSIONS, type BackupRecord, type BackupStorage } from './backup.records.js';
import type { ServiceRecord } from '../domain/types.js';

const LOG_LINES_MAX = 5_000;
const DRILL_TABLES: readonly Table[] = ['Backup'];

/** A backup's download: its size and name, and its bytes when asked. */
export interface BackupDownload {
  fileName: string;
  sizeBytes: number;
  open(signal: AbortSignal): Promise<Readable>;
}

/**
 * The spec's backups of a database service: list, create (queued for the BackupJobs kind), download,
 * delete and logs. Restores are BackupRestore's, settings BackupSettingsService's; where the bytes go
 * is BackupDestinations'.
 */
export class BackupService {
  /** Every overview read asks: counted once per service until a backup changes. */
  private readonly drillCounts = new VersionedCache<string, { neverDrilled: number; failed: number }>(
    () => this.deps.store.versionOf(DRILL_TABLES),
    1000,
    5_000,
  );

  constructor(
    private readonly deps: ServiceDeps,
    private readonly queue: BackupQueue,
    private readonly settings: BackupSettingsService,
    private readonly destinations: BackupDestinations,
  ) {}

  async list(actor: Actor, serviceId: string, signal?: AbortSignal): Promise<BackupListView> {
    const { service } = await databaseFor(this.deps.store, actor, serviceId);
    const [backups, drills, [settings, objectStore]] = await Promise.all([
      this.deps.store.backups.listOf(service.id, 'dump', null, 500),
      this.deps.store.backups.drillSummary(service.id, 'dump'),
      // The store this database's backups go to: its storage instance, or the platform's.
      this.settings.settingsOf(service.id).then(async (s) => [s, await this.destinations.connection(s.storageId, signal)] as const),
    ]);
    return { backups: backups.map(presentBackup), settings: presentBackupSettings(settings), objectStore, drills };
  }

  /**
   * For the service's overview (its caller checked the access): its succeeded database dumps and volume
   * backups never drilled, and those whose last drill failed.
   */
  async drillCountsOf(serviceId: string): Promise<{ neverDrilled: number; failed: number }> {
    const cached = this.drillCounts.get(serviceId);
    if (cached) return cached;
    const version = this.deps.store.versionOf(DRILL_TABLES);
    const counts = await this.deps.store.backups.drillSummaryOfService(serviceId);
    this.drillCounts.set(serviceId, counts, version);
    return counts;
  }

  async create(actor: Actor, serviceId: string, storage: BackupStorage): Promise<BackupView> {
    assertWrite(actor);
    const { service, engine } = await databaseFor(this.deps.store, actor, serviceId);
    return presentBackup(await this.queue.queue(service, engine, storage, 'manual'));
  }

  async download(actor: Actor, serviceId: string, backupId: string): Promise<BackupDownload> {
    const { service } = await databaseFor(this.deps.store, actor, serviceId);
    return this.downloadOf(service, await backupFor(this.deps.store, service.id, backupId));
  }

  /** The file of a backup its caller found (a database's here, a volume's in VolumeBackupService). */
  downloadOf(service: ServiceRecord, backup: BackupRecord): BackupDownload {
    if (backup.status !== 'succeeded') throw new ConflictError(`Backup ${backup.id} has no file: it is ${presentBackup(backup).status}`);
    const files = this.destinations.files;
    return {
      fileName: `${service.slug}-${backup.createdAt.toISOString().replace(/[:.]/g, '-')}-${backup.id}.${BACKUP_FILE_EXTENSIONS[backup.format]}`,
      sizeBytes: backup.sizeBytes,
      open: async (signal) => {
        if (backup.localPath && (await files.size(backup.localPath)) !== null) return files.read(backup.localPath);
        const store = await this.destinations.storeOf(backup);
        return upstream(store.download(backup.objectKey!, signal));
      },
    };
  }

  async delete(actor: Actor, serviceId: string, backupId: string, signal?: AbortSignal): Promise<void> {
    assertWrite(actor);
    const { service } = await databaseFor(this.deps.store, actor, serviceId);
    await this.deleteOf(await backupFor(this.deps.store, service.id, backupId), signal);
  }

  /** A backup its caller found goes from every place it is stored, then its row; 409 while it runs. */
  async deleteOf(backup: BackupRecord, signal?: AbortSignal): Promise<void> {
    if (backup.status === 'queued' || backup.status === 'running')
      throw new ConflictError(`Backup ${backup.id} is still running; delete it once it ended`, { status: 'running' });
    await this.destinations.removeEverywhere(backup, signal ?? AbortSignal.timeout(60_000));
  }

  async logs(actor: Actor, serviceId: string, backupId: string): Promise<BackupLogLineView[]> {
    const { service } = await databaseFor(this.deps.store, actor, serviceId);
    const backup = await backupFor(this.deps.store, service.id, backupId);
    return (await this.deps.store.backups.listLogs(backup.id, 0, LOG_LINES_MAX)).map(presentBackupLog);
  }
}
