import { assertWrite, type Actor } from '../domain/access.js';
import { NotFoundError, ValidationError } from '../domain/errors.js';
import { storageOf } from '../domain/storage-server.js';
import type { ServiceDeps } from '../platform/deps.js';
import { serviceOfKind } from '../platform/lookup.js';
import type { BackupDestinations } from './backup-destinations.js';
import { backupFormat, databaseFor } from './backup-targets.js';
import { presentBackupSettings, type BackupSettingsInput, type BackupSettingsView } from './backup-views.js';
import { DEFAULT_DRILL, type BackupSettingsRecord, type BackupStorage } from './backup.records.js';
import type { DatabaseDump } from './database-dump.port.js';
import { syncManagedSchedules } from './managed-schedules.js';

export const DEFAULT_RETENTION = { keepDaily: 7, keepWeekly: 4, keepMonthly: 12 } as const;

/**
 * A database's backup settings: where its backups go (disk, its storage instance or the platform's
 * object store, or both) and its automatic daily/weekly/monthly backups with their retention.
 */
export class BackupSettingsService {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly dump: DatabaseDump | null,
    private readonly destinations: BackupDestinations,
  ) {}

  /** The stored settings, or the defaults (nothing automatic, disk, the default retention). */
  async settingsOf(serviceId: string): Promise<BackupSettingsRecord> {
    const stored = await this.deps.store.backups.getSettings(serviceId);
    if (stored) return stored;
    const now = this.deps.clock.now();
    return {
      serviceId,
      storage: 'disk',
      storageId: null,
      automaticEnabled: false,
      dailyEnabled: true,
      weeklyEnabled: true,
      monthlyEnabled: true,
      ...DEFAULT_RETENTION,
      drill: DEFAULT_DRILL,
      createdAt: now,
      updatedAt: now,
    };
  }

  async update(actor: Actor, serviceId: string, input: BackupSettingsInput): Promise<BackupSettingsView> {
    assertWrite(actor);
    const { service, engine } = await databaseFor(this.deps.store, actor, serviceId);
    const current = await this.settingsOf(service.id);
    const next: BackupSettingsRecord = {
      ...current,
      ...Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)),
      updatedAt: this.deps.clock.now(),
    };
    if (next.automaticEnabled) backupFormat(this.dump, engine, 'Automatic backups');
    if (input.storageId) await this.assertStorageInstance(actor, input.storageId);
    if (input.storage !== undefined || input.storageId !== undefined) await this.destinations.assertStorage(next.storage, next.storageId);
    // The daily/weekly/monthly switches are backup configurations: both change together.
    await this.deps.store.transaction(async (tx) => {
      await tx.backups.putSettings(next);
      await syncManagedSchedules(tx, next, next.updatedAt);
    });
    return presentBackupSettings(next);
  }

  /**
   * The storage instance a backup of the database to `storage` goes to (its backup settings' storageId;
   * null: the platform's object store, or disk only); a 400 when `object` or `disk+object` has no object store.
   */
  async storageIdFor(serviceId: string, storage: BackupStorage): Promise<string | null> {
    if (storage === 'disk') return null;
    const { storageId } = await this.settingsOf(serviceId);
    await this.destinations.assertStorage(storage, storageId);
    return storageId;
  }

  /** A storage instance the caller sees (any project of its key): a 400 on `storageId` for anything else. */
  private async assertStorageInstance(actor: Actor, storageId: string): Promise<void> {
    await serviceOfKind(this.deps.store, actor, storageId, 'Storage instance', (s) => storageOf(s) !== null).catch((error: unknown) => {
      throw error instanceof NotFoundError ? new ValidationError('storageId', `There is no storage instance ${storageId}`) : error;
    });
  }
}
