import type { ObjectStoreConfig, ObjectStoreConfigs } from '../backups/object-store.port.js';
import { STORAGE_SERVER, storageOf } from '../domain/storage-server.js';
import type { ServiceDeps } from '../platform/deps.js';
import type { SettingsService } from '../settings/settings.service.js';

/**
 * The object stores database backups go to: a storage instance of the platform, reached through its
 * host port (which forwards to its current container on the loopback address), or with no storage
 * instance named the one set in the platform settings.
 */
export class StorageObjectStores implements ObjectStoreConfigs {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly settings: Pick<SettingsService, 'objectStore'>,
  ) {}

  /** Its secret decrypted; null for anything that is not a storage instance, or when the settings name none. */
  async configOf(storageId: string | null): Promise<ObjectStoreConfig | null> {
    if (!storageId) return this.settings.objectStore();
    const service = await this.deps.store.projects.getService(storageId);
    const storage = service && storageOf(service);
    if (!service || !storage) return null;
    return {
      endpoint: `http://127.0.0.1:${service.hostPort}`,
      region: STORAGE_SERVER.region,
      bucket: storage.bucket,
      accessKeyId: storage.accessKeyId,
      secretAccessKey: this.deps.secrets.decrypt(storage.secretAccessKeyEncrypted),
      forcePathStyle: true,
    };
  }
}
