import { ConflictError } from '../domain/errors.js';
import type { ServiceDeps } from '../platform/deps.js';
import type { BackupFiles } from './backup-files.port.js';
import { errorText, maskIn, missingObjectStore, noObjectStore, upstream } from './backup-errors.js';
import type { BackupRecord, BackupStorage } from './backup.records.js';
import type { ObjectStore, ObjectStoreConfig, ObjectStoreConfigs, ObjectStoreFactory } from './object-store.port.js';

const CONNECTED_CACHE_MS = 5_000;

/** The places backups are written to: the platform's disk, and the object stores. */
export interface BackupPlaces {
  files: BackupFiles;
  objectStores: ObjectStoreFactory;
  configs: ObjectStoreConfigs;
}

/**
 * Where backups are and go: the object store a backup or a database's settings name (checked, with
 * the answer cached per store), and the removal of a backup from every place it is stored.
 */
export class BackupDestinations {
  /** The last check of each object store (databases may use different ones), for CONNECTED_CACHE_MS. */
  private readonly connected = new Map<string, { at: number; value: { connected: boolean; error?: string } }>();

  constructor(
    private readonly deps: ServiceDeps,
    private readonly places: BackupPlaces,
  ) {}

  get files(): BackupFiles {
    return this.places.files;
  }

  configOf(storageId: string | null): Promise<ObjectStoreConfig | null> {
    return this.places.configs.configOf(storageId);
  }

  open(config: ObjectStoreConfig): ObjectStore {
    return this.places.objectStores(config);
  }

  /** `object` and `disk+object` need an object store: the storage instance named, or the platform's. */
  async assertStorage(storage: BackupStorage, storageId: string | null): Promise<void> {
    if (storage !== 'disk' && !(await this.configOf(storageId))) throw noObjectStore(storage);
  }

  /** The object store a backup was written to; 409 when it is gone. */
  async storeOf(backup: BackupRecord): Promise<ObjectStore> {
    const config = await this.configOf(backup.storageId);
    if (!config) throw new ConflictError(`Backup ${backup.id} is in the object store, and ${missingObjectStore(backup.storageId)}`);
    return this.open(config);
  }

  async connection(storageId: string | null, signal?: AbortSignal): Promise<{ connected: boolean; error?: string }> {
    const config = await this.configOf(storageId);
    if (!config) return { connected: false };
    const key = JSON.stringify(config);
    const now = Date.now();
    const cached = this.connected.get(key);
    if (cached && now - cached.at < CONNECTED_CACHE_MS) return cached.value;
    const timeout = AbortSignal.timeout(this.deps.config.backups.objectStoreTimeoutMs);
    let value: { connected: boolean; error?: string };
    try {
      await this.open(config).check(signal ? AbortSignal.any([signal, timeout]) : timeout);
      value = { connected: true };
    } catch (error) {
      value = { connected: false, error: maskIn(errorText(error), { secret: config.secretAccessKey }) };
    }
    for (const [old, entry] of this.connected) if (now - entry.at >= CONNECTED_CACHE_MS) this.connected.delete(old);
    this.connected.set(key, { at: now, value });
    return value;
  }

  /** The file and the object, then the row: a backup that cannot be removed from a place stays listed. */
  async removeEverywhere(backup: BackupRecord, signal: AbortSignal): Promise<void> {
    await this.removeFiles(backup, signal);
    await this.deps.store.backups.delete(backup.id);
  }

  /** Deleted services: their backups go from every place they are stored, then their rows. */
  async removeOfServices(serviceIds: string[]): Promise<void> {
    for (const serviceId of serviceIds) {
      for (const backup of await this.deps.store.backups.list(serviceId)) {
        await this.removeFiles(backup, AbortSignal.timeout(60_000)).catch(() => undefined);
      }
    }
    await this.deps.store.backups.deleteOfServices(serviceIds);
    await this.deps.store.backupSchedules.deleteOfServices(serviceIds);
    // Point-in-time recovery's settings, archive rows and restores go with the service.
    await this.deps.store.pitr.deleteOfServices(serviceIds);
  }

  private async removeFiles(backup: BackupRecord, signal: AbortSignal): Promise<void> {
    if (backup.localPath) await this.files.remove(backup.localPath);
    if (backup.objectKey) await upstream((await this.storeOf(backup)).remove(backup.objectKey, signal));
  }
}
