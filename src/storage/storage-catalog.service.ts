import { assertWrite, type Actor } from '../domain/access.js';
import { ConflictError } from '../domain/errors.js';
import { slugify } from '../domain/slug.js';
import { assertBucketName, defaultBucketName, STORAGE_SERVER, storageEndpoint, storageOf } from '../domain/storage-server.js';
import type { ServiceRecord, StorageSource } from '../domain/types.js';
import type { ServicePower } from '../deployments/service-power.js';
import type { Store } from '../persistence/store.js';
import type { ServiceDeps } from '../platform/deps.js';
import { projectFor, serviceOfKind, visibleServices } from '../platform/lookup.js';
import { generateAccessKeyPair } from '../platform/secret-box.js';
import type { ProxyResultView } from '../routing/routing-views.js';
import type { ServiceView } from '../projects/project-views.js';
import type { ServiceCreation } from '../projects/service-creation.js';
import type { ServiceReader } from '../projects/service-reader.js';
import type { ServiceRemoval } from '../projects/service-removal.js';
import type { StorageCreatedView, StorageCreateInput, StorageView } from './storage-views.js';

/**
 * The general API's storage instances: S3-compatible object stores the platform runs as services
 * (source `storage`), deployed like databases (their volume kept, the previous server stopped before
 * its replacement takes it, ready once the bucket answers an S3 call), seen across the projects a
 * key may see, and stopped and started like databases (ServicePower).
 */
export class StorageCatalog {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly creation: ServiceCreation,
    private readonly reader: ServiceReader,
    private readonly removal: ServiceRemoval,
    private readonly power: ServicePower,
  ) {}

  async list(actor: Actor): Promise<StorageView[]> {
    const instances = (await visibleServices(this.deps.store, actor)).filter((s) => storageOf(s) !== null);
    const views = await this.reader.views(instances);
    return views.map((view, i) => presentStorage(view, storageOf(instances[i]!)!));
  }

  /** Makes the instance and its key pair: the secret is in this answer, and only here. */
  async create(actor: Actor, projectId: string, input: StorageCreateInput): Promise<StorageCreatedView> {
    assertWrite(actor);
    // What the key may not see does not exist for it: 404 before any complaint about the body.
    await projectFor(this.deps.store, actor, projectId);
    const bucket = input.bucket === undefined ? defaultBucketName(slugify(input.name.trim()) || 'storage') : assertBucketName(input.bucket);
    const { accessKeyId, secretAccessKey } = generateAccessKeyPair();
    const settings: Omit<StorageSource, 'kind'> = {
      bucket,
      accessKeyId,
      secretAccessKeyEncrypted: this.deps.secrets.encrypt(secretAccessKey),
      publicEnabled: input.publicEnabled ?? false,
    };
    const created = await this.creation.create(
      actor,
      projectId,
      { name: input.name, repoUrl: 'storage', repoFullName: 'storage:s3' },
      settings,
    );
    return { storage: await this.view(created.id), credentials: { accessKeyId, secretAccessKey } };
  }

  async get(actor: Actor, storageId: string): Promise<StorageView> {
    return this.view((await this.storageFor(actor, storageId)).id);
  }

  /** Its container and volume go with it; refused while a database's backups are in it (assertStorageRemovable). */
  async delete(actor: Actor, storageId: string): Promise<ProxyResultView> {
    assertWrite(actor);
    const service = await this.storageFor(actor, storageId);
    return this.removal.deleteService(actor, service.id);
  }

  async stop(actor: Actor, storageId: string): Promise<StorageView> {
    assertWrite(actor);
    const service = await this.storageFor(actor, storageId);
    await this.power.stop(service, 'storage instance');
    return this.view(service.id);
  }

  async start(actor: Actor, storageId: string): Promise<StorageView> {
    assertWrite(actor);
    const service = await this.storageFor(actor, storageId);
    await this.power.start(actor, service);
    return this.view(service.id);
  }

  private async view(serviceId: string): Promise<StorageView> {
    const [view, service] = await Promise.all([this.reader.view(serviceId), this.deps.store.projects.getService(serviceId)]);
    return presentStorage(view, storageOf(service!)!);
  }

  /** The same 404 for a service that is not a storage instance as for an unknown id. */
  private storageFor(actor: Actor, storageId: string): Promise<ServiceRecord> {
    return serviceOfKind(this.deps.store, actor, storageId, 'Storage instance', (s) => storageOf(s) !== null);
  }
}

function presentStorage(view: ServiceView, storage: StorageSource): StorageView {
  return {
    ...view,
    s3: {
      bucket: storage.bucket,
      region: STORAGE_SERVER.region,
      accessKeyId: storage.accessKeyId,
      endpoint: storageEndpoint(view),
      publicEndpoint: view.primaryUrl || null,
      publicEnabled: storage.publicEnabled,
      forcePathStyle: true,
    },
  };
}

/**
 * Deleting a storage instance deletes every object in it: refused (409) while a database that stays
 * keeps backups there or sends them there. A project deleted with its databases and their storage
 * instance together is fine: those backups go with their databases.
 */
export async function assertStorageRemovable(store: Store, removed: ServiceRecord[]): Promise<void> {
  const storageIds = removed.filter((s) => storageOf(s) !== null).map((s) => s.id);
  if (storageIds.length === 0) return;
  const gone = new Set(removed.map((s) => s.id));
  const [settings, backups] = await Promise.all([store.backups.listSettingsUsing(storageIds), store.backups.listStoredIn(storageIds)]);
  const dependents = new Set([
    ...settings.filter((s) => !gone.has(s.serviceId)).map((s) => s.serviceId),
    ...backups.filter((b) => !gone.has(b.serviceId) && b.status !== 'failed').map((b) => b.serviceId),
  ]);
  if (dependents.size === 0) return;
  const names = await Promise.all([...dependents].map(async (id) => (await store.projects.getService(id))?.name ?? id));
  throw new ConflictError(
    `This storage instance holds or receives the backups of ${names.map((n) => `"${n}"`).join(', ')}: give those databases another object store (PUT .../database/backups/settings {storageId}) and delete the backups stored here first`,
    { serviceIds: [...dependents] },
  );
}
