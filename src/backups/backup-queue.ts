import { databaseEngineOf, type DatabaseEngine } from '../domain/database-engines.js';
import { newId } from '../domain/ids.js';
import type { ServiceRecord } from '../domain/types.js';
import type { ServiceDeps } from '../platform/deps.js';
import type { BackupLog } from './backup-log.js';
import type { BackupSettingsService } from './backup-settings.service.js';
import { backupFormat } from './backup-targets.js';
import type { BackupFormat, BackupRecord, BackupStorage, BackupTrigger, VolumeMode } from './backup.records.js';
import type { DatabaseDump } from './database-dump.port.js';

/**
 * Backups to make: a row queued for the BackupJobs kind (the API's, a configuration's or the
 * scheduler's), its first log line, and the runner told at once.
 */
export class BackupQueue {
  private readonly queuedListeners: Array<() => void> = [];

  constructor(
    private readonly deps: ServiceDeps,
    private readonly dump: DatabaseDump | null,
    private readonly settings: BackupSettingsService,
    private readonly log: BackupLog,
  ) {}

  /** Called when a backup is queued: the runner looks at once instead of at its next poll. */
  onQueued(listener: () => void): void {
    this.queuedListeners.push(listener);
  }

  /** The dump format of an engine the platform can back up; 422 `not_supported` for the others. */
  assertSupported(engine: DatabaseEngine, what: string): BackupFormat {
    return backupFormat(this.dump, engine, what);
  }

  async queue(
    service: ServiceRecord,
    engine: DatabaseEngine,
    storage: BackupStorage,
    trigger: BackupTrigger,
    scheduleId: string | null = null,
  ): Promise<BackupRecord> {
    const backup = await this.deps.store.backups.insert(await this.prepare(service, engine, storage, trigger, scheduleId));
    await this.announce(backup);
    return backup;
  }

  /** The row of a backup to queue, not stored yet; refused when the engine or the storage cannot be backed up. */
  async prepare(
    service: ServiceRecord,
    engine: DatabaseEngine,
    storage: BackupStorage,
    trigger: BackupTrigger,
    scheduleId: string | null,
    id = newId(),
  ): Promise<BackupRecord> {
    const format = this.assertSupported(engine, 'Backups');
    const storageId = await this.settings.storageIdFor(service.id, storage);
    return { ...this.prepareRow(service, storage, trigger, scheduleId, id, storageId), engine, format };
  }

  private prepareRow(
    service: ServiceRecord,
    storage: BackupStorage,
    trigger: BackupTrigger,
    scheduleId: string | null,
    id: string,
    storageId: string | null,
  ): BackupRecord {
    return {
      id,
      serviceId: service.id,
      engine: null,
      status: 'queued',
      trigger,
      storage,
      format: 'custom',
      localPath: null,
      objectKey: null,
      storageId,
      sizeBytes: 0,
      checksum: '',
      error: null,
      abortRequested: false,
      createdAt: this.deps.clock.now(),
      startedAt: null,
      finishedAt: null,
      scheduleId,
      kind: 'dump',
      volume: null,
      volumeMode: null,
      walStart: null,
      counts: null,
      drill: null,
    };
  }

  /**
   * The row of a volume backup to queue (a tar of the named volume, `stopped` or `live`), not stored yet;
   * any kind of service may have one, so its engine is the database's or null.
   */
  async prepareVolume(
    service: ServiceRecord,
    volume: { name: string; mode: VolumeMode },
    storage: BackupStorage,
    trigger: BackupTrigger,
    scheduleId: string | null,
    id = newId(),
  ): Promise<BackupRecord> {
    const storageId = await this.settings.storageIdFor(service.id, storage);
    return {
      ...this.prepareRow(service, storage, trigger, scheduleId, id, storageId),
      engine: databaseEngineOf(service),
      format: 'tar',
      kind: 'volume',
      volume: volume.name,
      volumeMode: volume.mode,
    };
  }

  async queueVolume(
    service: ServiceRecord,
    volume: { name: string; mode: VolumeMode },
    storage: BackupStorage,
    trigger: BackupTrigger,
    scheduleId: string | null = null,
  ): Promise<BackupRecord> {
    const backup = await this.deps.store.backups.insert(await this.prepareVolume(service, volume, storage, trigger, scheduleId));
    await this.announce(backup);
    return backup;
  }

  /**
   * A PostgreSQL base backup for point-in-time recovery (kind `base`, pg_basebackup's tar), to the
   * archive's own destination: the disk, or an object store (`storageId` a storage instance, null the install's).
   */
  async queueBase(
    service: ServiceRecord,
    engine: DatabaseEngine,
    storage: 'disk' | 'object',
    storageId: string | null,
  ): Promise<BackupRecord> {
    const row = this.prepareRow(service, storage, 'pitr', null, newId(), storageId);
    const backup = await this.deps.store.backups.insert({ ...row, engine, format: 'basebackup', kind: 'base' });
    await this.announce(backup);
    return backup;
  }

  /** A stored backup's first log line, and the runner told at once. */
  async announce(backup: BackupRecord): Promise<void> {
    await this.log.append(backup.id, 'stdout', `Backup queued (${backup.trigger}, storage ${backup.storage})`);
    for (const listener of this.queuedListeners) listener();
  }
}
