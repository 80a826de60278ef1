import { assertWrite, type Actor } from '../domain/access.js';
import { databaseEngineOf, type DatabaseEngine } from '../domain/database-engines.js';
import { storageOf } from '../domain/storage-server.js';
import {
  ChecksumMismatchError,
  ConflictError,
  NotFoundError,
  NotRunningError,
  NotSupportedError,
  UpstreamError,
  ValidationError,
} from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import type { ServiceRecord } from '../domain/types.js';
import type { EnvService } from '../env/env.service.js';
import type { ServiceDeps } from '../platform/deps.js';
import { serviceFor, serviceOfKind } from '../platform/lookup.js';
import type { BackupFiles } from './backup-files.port.js';
import { hashOf } from './backup-streams.js';
import {
  type BackupListView,
  type BackupLogLineView,
  type BackupSettingsInput,
  type BackupSettingsView,
  type BackupView,
  presentBackup,
  presentBackupLog,
  presentBackupSettings,
  type RestoreResultView,
} from './backup-views.js';
import {
  BACKUP_FILE_EXTENSIONS,
  type BackupFormat,
  type BackupRecord,
  type BackupSettingsRecord,
  type BackupStorage,
  type BackupTrigger,
  DEFAULT_DRILL,
} from './backup.records.js';
import type { DatabaseDump, DumpTarget } from './database-dump.port.js';
import type { ObjectStore, ObjectStoreConfig, ObjectStoreFactory } from './object-store.port.js';
import { syncManagedSchedules } from './managed-schedules.js';
import { JobLogWriter } from '../jobs/job-log-writer.js';
import type { Readable } from 'node:stream';

/** What backups are made with: the engine's dump tools, the platform's disk, the object store, and where a database runs. */
export interface BackupPorts {
  dump: DatabaseDump | null;
  files: BackupFiles;
  objectStores: ObjectStoreFactory;
  /** The container of a database service's current deployment (and its address); null when none runs. */
  locate(service: ServiceRecord): Promise<{ containerId: string; host?: string | null } | null>;
  /**
   * A backup's object store, its secret decrypted: the storage instance `storageId` names, or with
   * null the one set in the platform settings; null when there is none.
   */
  objectStoreConfig(storageId: string | null): Promise<ObjectStoreConfig | null>;
  /**
   * Points host ports and routes at the services' current containers again at once: a restore may restart
   * the database's container (Redis), and a reconcile pass meanwhile found no address and closed its host port.
   */
  repoint?(): Promise<void>;
}

export const DEFAULT_RETENTION = { keepDaily: 7, keepWeekly: 4, keepMonthly: 12 } as const;

const CONNECTED_CACHE_MS = 5_000;
const LOG_LINES_MAX = 5_000;

/** A backup's download: its size and name, and its bytes when asked. */
export interface BackupDownload {
  fileName: string;
  sizeBytes: number;
  open(signal: AbortSignal): Promise<Readable>;
}

/**
 * The spec's backups of a database service: list, create (queued for the BackupJobs kind), restore
 * (checksum first), download, delete, settings and logs. Where the bytes go is the ports' business.
 */
export class BackupService {
  /** The last check of each object store (databases may use different ones), for CONNECTED_CACHE_MS. */
  private readonly connected = new Map<string, { at: number; value: { connected: boolean; error?: string } }>();
  /** Services with a restore under way: a second restore or a backup waits for it to end. */
  private readonly restoring = new Set<string>();
  private readonly createdListeners: Array<() => void> = [];

  constructor(
    private readonly deps: ServiceDeps,
    private readonly env: EnvService,
    readonly ports: BackupPorts,
  ) {}

  /** Called when a backup is queued: the runner looks at once instead of at its next poll. */
  onCreated(listener: () => void): void {
    this.createdListeners.push(listener);
  }

  async list(actor: Actor, serviceId: string, signal?: AbortSignal): Promise<BackupListView> {
    const { service } = await this.databaseOf(actor, serviceId);
    const [backups, drills, [settings, objectStore]] = await Promise.all([
      this.deps.store.backups.listOf(service.id, 'dump', null, 500),
      this.deps.store.backups.drillSummary(service.id, 'dump'),
      // The store this database's backups go to: its storage instance, or the platform's.
      this.settingsOf(service.id).then(async (s) => [s, await this.objectStoreConnection(s.storageId, signal)] as const),
    ]);
    return { backups: backups.map(presentBackup), settings: presentBackupSettings(settings), objectStore, drills };
  }

  async create(actor: Actor, serviceId: string, storage: BackupStorage): Promise<BackupView> {
    assertWrite(actor);
    const { service, engine } = await this.databaseOf(actor, serviceId);
    return presentBackup(await this.queue(service, engine, storage, 'manual'));
  }

  /** Queues a backup (the API's, a configuration's or the scheduler's); the runner makes it. */
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
    const storageId = await this.storageIdFor(service.id, storage);
    return {
      id,
      serviceId: service.id,
      engine,
      status: 'queued',
      trigger,
      storage,
      format,
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

  /** The dump format of an engine the platform can back up; 422 `not_supported` for the others. */
  assertSupported(engine: DatabaseEngine, what: string): BackupFormat {
    const format = this.ports.dump?.formatOf(engine) ?? null;
    if (!format)
      throw new NotSupportedError(
        `${what} of ${engine} databases are not supported: its image has no dump tool the platform can run (see docs/backups.md)`,
        { engine },
      );
    return format;
  }

  /**
   * The storage instance a backup of the database to `storage` goes to (its backup settings' storageId;
   * null: the platform's object store, or disk only); a 400 when `object` or `disk+object` has no object store.
   */
  async storageIdFor(serviceId: string, storage: BackupStorage): Promise<string | null> {
    if (storage === 'disk') return null;
    const { storageId } = await this.settingsOf(serviceId);
    await this.assertStorage(storage, storageId);
    return storageId;
  }

  /** `object` and `disk+object` need an object store: the storage instance named, or the platform's. */
  private async assertStorage(storage: BackupStorage, storageId: string | null): Promise<void> {
    if (storage !== 'disk' && !(await this.ports.objectStoreConfig(storageId))) throw noObjectStore(storage);
  }

  /** A stored backup's first log line, and the runner told at once. */
  async announce(backup: BackupRecord): Promise<void> {
    await this.appendLog(backup.id, 'stdout', `Backup queued (${backup.trigger}, storage ${backup.storage})`);
    for (const listener of this.createdListeners) listener();
  }

  async restore(actor: Actor, serviceId: string, backupId: string, signal?: AbortSignal): Promise<RestoreResultView> {
    assertWrite(actor);
    const { service, engine } = await this.databaseOf(actor, serviceId);
    const backup = await this.backupOf(service.id, backupId);
    if (backup.status !== 'succeeded')
      throw new ConflictError(`Backup ${backup.id} is ${presentBackup(backup).status}; only a succeeded backup can be restored`, {
        status: presentBackup(backup).status,
      });
    const dump = this.ports.dump;
    if (!dump?.formatOf(engine)) throw new NotSupportedError(`Restoring ${engine} databases is not supported`, { engine });
    const busy = await this.deps.store.backups.listByStatus(['queued', 'running']);
    if (busy.some((b) => b.serviceId === service.id) || this.restoring.has(service.id))
      throw new ConflictError('A backup or restore of this database is under way; restore once it ended');
    this.restoring.add(service.id);
    const log = this.openLog(backup.id);
    const work = signal ?? new AbortController().signal;
    try {
      const container = await this.ports.locate(service);
      if (!container) throw new NotRunningError(`${service.name} is not running: deploy it before restoring`, { serviceId: service.id });
      const { env } = await this.env.resolvedFor(service);
      log.mask(...Object.values(env));
      log.write(`Restore of backup ${backup.id} requested`);
      // The checksum first: a changed or truncated file is refused before the database is touched.
      const source = await this.verifiedSource(backup, work, log);
      log.write(`Checksum verified (${backup.checksum}, ${backup.sizeBytes} bytes, from ${source.from})`);
      const target: DumpTarget = { engine, containerId: container.containerId, env };
      try {
        await dump.restore(target, await source.open(), work, (line) => log.write(line, 'stderr'));
      } catch (error) {
        log.write(`Restore failed: ${(error as Error).message}`, 'stderr');
        throw error instanceof NotRunningError || error instanceof ConflictError
          ? error
          : new ConflictError(`The restore failed: ${maskIn((error as Error).message, env)}`, { backupId: backup.id });
      } finally {
        await source.cleanup();
      }
      // Until then the host port of a container restarted by the restore may be closed (see BackupPorts.repoint).
      await this.ports.repoint?.().catch((error: Error) => log.write(`Host port not repointed yet: ${error.message}`, 'stderr'));
      const restoredAt = this.deps.clock.now();
      log.write('Restore finished');
      return { ok: true, restoredAt: restoredAt.toISOString(), backup: { id: backup.id, status: 'succeeded' } };
    } finally {
      this.restoring.delete(service.id);
      await log.flush();
    }
  }

  async download(actor: Actor, serviceId: string, backupId: string): Promise<BackupDownload> {
    const { service } = await this.databaseOf(actor, serviceId);
    const backup = await this.backupOf(service.id, backupId);
    if (backup.status !== 'succeeded') throw new ConflictError(`Backup ${backup.id} has no file: it is ${presentBackup(backup).status}`);
    return {
      fileName: `${service.slug}-${backup.createdAt.toISOString().replace(/[:.]/g, '-')}-${backup.id}.${BACKUP_FILE_EXTENSIONS[backup.format]}`,
      sizeBytes: backup.sizeBytes,
      open: async (signal) => {
        if (backup.localPath && (await this.ports.files.size(backup.localPath)) !== null) return this.ports.files.read(backup.localPath);
        const store = await this.objectStoreFor(backup);
        return upstream(store.download(backup.objectKey!, signal));
      },
    };
  }

  async delete(actor: Actor, serviceId: string, backupId: string, signal?: AbortSignal): Promise<void> {
    assertWrite(actor);
    const { service } = await this.databaseOf(actor, serviceId);
    const backup = await this.backupOf(service.id, backupId);
    if (backup.status === 'queued' || backup.status === 'running')
      throw new ConflictError(`Backup ${backup.id} is still running; delete it once it ended`, { status: 'running' });
    await this.removeEverywhere(backup, signal ?? AbortSignal.timeout(60_000));
  }

  async logs(actor: Actor, serviceId: string, backupId: string): Promise<BackupLogLineView[]> {
    const { service } = await this.databaseOf(actor, serviceId);
    const backup = await this.backupOf(service.id, backupId);
    return (await this.deps.store.backups.listLogs(backup.id, 0, LOG_LINES_MAX)).map(presentBackupLog);
  }

  async updateSettings(actor: Actor, serviceId: string, input: BackupSettingsInput): Promise<BackupSettingsView> {
    assertWrite(actor);
    const { service, engine } = await this.databaseOf(actor, serviceId);
    const current = await this.settingsOf(service.id);
    const next: BackupSettingsRecord = {
      ...current,
      ...Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)),
      updatedAt: this.deps.clock.now(),
    };
    if (next.automaticEnabled) this.assertSupported(engine, 'Automatic backups');
    if (input.storageId) await this.assertStorageInstance(actor, input.storageId);
    if (input.storage !== undefined || input.storageId !== undefined) await this.assertStorage(next.storage, next.storageId);
    // The daily/weekly/monthly switches are backup configurations: both change together.
    await this.deps.store.transaction(async (tx) => {
      await tx.backups.putSettings(next);
      await syncManagedSchedules(tx, next, next.updatedAt);
    });
    return presentBackupSettings(next);
  }

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

  /** Deleted services: their backups go from every place they are stored, then their rows. */
  async removeOfServices(serviceIds: string[]): Promise<void> {
    for (const serviceId of serviceIds) {
      for (const backup of await this.deps.store.backups.list(serviceId)) {
        await this.removeFiles(backup, AbortSignal.timeout(60_000)).catch(() => undefined);
      }
    }
    await this.deps.store.backups.deleteOfServices(serviceIds);
    await this.deps.store.backupSchedules.deleteOfServices(serviceIds);
  }

  /** The file and the object, then the row: a backup that cannot be removed from a place stays listed. */
  async removeEverywhere(backup: BackupRecord, signal: AbortSignal): Promise<void> {
    await this.removeFiles(backup, signal);
    await this.deps.store.backups.delete(backup.id);
  }

  async objectStoreConnection(storageId: string | null, signal?: AbortSignal): Promise<{ connected: boolean; error?: string }> {
    const config = await this.ports.objectStoreConfig(storageId);
    if (!config) return { connected: false };
    const key = JSON.stringify(config);
    const now = Date.now();
    const cached = this.connected.get(key);
    if (cached && now - cached.at < CONNECTED_CACHE_MS) return cached.value;
    const timeout = AbortSignal.timeout(this.deps.config.backups.objectStoreTimeoutMs);
    let value: { connected: boolean; error?: string };
    try {
      await this.ports.objectStores(config).check(signal ? AbortSignal.any([signal, timeout]) : timeout);
      value = { connected: true };
    } catch (error) {
      value = { connected: false, error: maskIn(errorText(error), { secret: config.secretAccessKey }) };
    }
    for (const [old, entry] of this.connected) if (now - entry.at >= CONNECTED_CACHE_MS) this.connected.delete(old);
    this.connected.set(key, { at: now, value });
    return value;
  }

  openLog(backupId: string): JobLogWriter {
    return new JobLogWriter((stream, lines) => this.appendLog(backupId, stream, ...lines));
  }

  async objectStoreFor(backup: BackupRecord): Promise<ObjectStore> {
    const config = await this.ports.objectStoreConfig(backup.storageId);
    if (!config) throw new ConflictError(`Backup ${backup.id} is in the object store, and ${missingObjectStore(backup.storageId)}`);
    return this.ports.objectStores(config);
  }

  /** A storage instance the caller sees (any project of its key): a 400 on `storageId` for anything else. */
  private async assertStorageInstance(actor: Actor, storageId: string): Promise<void> {
    await serviceOfKind(this.deps.store, actor, storageId, 'Storage instance', (s) => storageOf(s) !== null).catch((error: unknown) => {
      throw error instanceof NotFoundError ? new ValidationError('storageId', `There is no storage instance ${storageId}`) : error;
    });
  }

  private async removeFiles(backup: BackupRecord, signal: AbortSignal): Promise<void> {
    if (backup.localPath) await this.ports.files.remove(backup.localPath);
    if (backup.objectKey) await upstream((await this.objectStoreFor(backup)).remove(backup.objectKey, signal));
  }

  /**
   * The stored bytes, hashed and compared with the backup's checksum and size; an object is first
   * fetched to a scratch file, so what is restored is exactly what was checked.
   */
  async verifiedSource(
    backup: BackupRecord,
    signal: AbortSignal,
    log: JobLogWriter,
  ): Promise<{ from: string; open(): Promise<Readable>; cleanup(): Promise<void> }> {
    const files = this.ports.files;
    let path = backup.localPath && (await files.size(backup.localPath)) !== null ? backup.localPath : null;
    let scratch: string | null = null;
    if (!path) {
      if (!backup.objectKey) throw new ChecksumMismatchError(`Backup ${backup.id}: its file is gone`, { backupId: backup.id });
      log.write(`Fetching ${backup.objectKey} from the object store`);
      scratch = files.pathOf(backup.serviceId, `.restore-${backup.id}-${newId(6)}`);
      const store = await this.objectStoreFor(backup);
      const out = await files.create(scratch);
      const { pipeline } = await import('node:stream/promises');
      try {
        await upstream(pipeline(await store.download(backup.objectKey, signal), out, { signal }));
        await files.commit(scratch);
      } catch (error) {
        await files.remove(scratch);
        throw error;
      }
      path = scratch;
    }
    const cleanup = async () => {
      if (scratch) await files.remove(scratch);
    };
    const { checksum, bytes } = await hashOf(files.read(path));
    if (checksum !== backup.checksum || bytes !== backup.sizeBytes) {
      await cleanup();
      log.write(
        `Refused: the stored file is ${bytes} bytes with ${checksum}; the backup was ${backup.sizeBytes} bytes with ${backup.checksum}`,
        'stderr',
      );
      throw new ChecksumMismatchError(
        `Backup ${backup.id} was changed or truncated since it was made (${bytes} of ${backup.sizeBytes} bytes, checksum differs); nothing was restored`,
        { backupId: backup.id, expected: backup.checksum, actual: checksum },
      );
    }
    const readPath = path;
    return { from: scratch ? 'the object store' : 'disk', open: async () => files.read(readPath), cleanup };
  }

  /** The database service addressed (404 for another kind of service) and its engine. */
  async databaseOf(actor: Actor, serviceId: string): Promise<{ service: ServiceRecord; engine: DatabaseEngine }> {
    const service = await serviceFor(this.deps.store, actor, serviceId);
    const engine = databaseEngineOf(service);
    if (!engine) throw new NotFoundError('Database of service', serviceId);
    return { service, engine };
  }

  private async backupOf(serviceId: string, backupId: string): Promise<BackupRecord> {
    const backup = await this.deps.store.backups.get(backupId);
    if (!backup || backup.serviceId !== serviceId) throw new NotFoundError('Backup', backupId);
    return backup;
  }

  appendLog(backupId: string, stream: 'stdout' | 'stderr', ...lines: string[]): Promise<unknown> {
    const createdAt = this.deps.clock.now();
    return this.deps.store.backups.appendLogs(
      backupId,
      lines.map((line) => ({ line, stream, createdAt })),
    );
  }
}

/** Why a backup's object store cannot be reached: the storage instance it names is gone, or none is set. */
export function missingObjectStore(storageId: string | null): string {
  return storageId ? `its storage instance ${storageId} no longer exists` : 'no object store is set (PUT /api/settings objectStore)';
}

function noObjectStore(storage: BackupStorage): ValidationError {
  return new ValidationError(
    'storage',
    `storage ${storage} needs an object store: name a storage instance with storageId, or set objectStore with PUT /api/settings`,
  );
}

/** The object store failed or refused: a 502 with its reason, never a 500. */
async function upstream<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (error) {
    throw new UpstreamError(`The object store failed: ${errorText(error)}`);
  }
}

export function errorText(error: unknown): string {
  if (error instanceof Error) {
    const name = (error as { name?: string }).name;
    return error.message || name || 'unknown error';
  }
  return String(error);
}

/** Secret values (passwords in env, the object store's key) never reach a message. */
export function maskIn(text: string, values: Record<string, string>): string {
  let out = text;
  for (const value of Object.values(values)) if (value && value.length >= 4) out = out.split(value).join('********');
  return out;
}
