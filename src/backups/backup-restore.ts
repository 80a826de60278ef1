import type { Readable } from 'node:stream';
import { assertWrite, type Actor } from '../domain/access.js';
import { ChecksumMismatchError, ConflictError, NotRunningError, NotSupportedError } from '../domain/errors.js';
import { serviceRefOf } from '../domain/events.js';
import { newId } from '../domain/ids.js';
import type { ServiceRecord } from '../domain/types.js';
import type { EnvService } from '../env/env.service.js';
import type { JobLogWriter } from '../jobs/job-log-writer.js';
import type { ServiceDeps } from '../platform/deps.js';
import type { BackupDestinations } from './backup-destinations.js';
import { maskIn, upstream } from './backup-errors.js';
import type { BackupLog } from './backup-log.js';
import { hashOf } from './backup-streams.js';
import { backupFor, databaseFor } from './backup-targets.js';
import { presentBackup, type RestoreResultView } from './backup-views.js';
import type { BackupRecord } from './backup.records.js';
import type { DatabaseDump, DumpTarget } from './database-dump.port.js';

/** Where a database runs, and how traffic finds it again after a restore restarted it. */
export interface RestoreRuntime {
  /** The container of a database service's current deployment; null when none runs. */
  locate(service: ServiceRecord): Promise<{ containerId: string; host?: string | null } | null>;
  /**
   * Points host ports and routes at the services' current containers again at once: a restore may restart
   * the database's container (Redis), and a reconcile pass meanwhile found no address and closed its host port.
   */
  repoint?(): Promise<void>;
}

/** Where a restore's verified bytes go (BackupRestore.restoreWith). */
export interface RestoreSteps {
  /** The log's first line. */
  requested: string;
  /** Inside the service's restore lock, before the checksum: finds the target (throws when there is none); answers values to mask. */
  prepare?(): Promise<Record<string, string>>;
  /** Writes the verified bytes into the target. */
  apply(input: Readable, work: AbortSignal, log: JobLogWriter): Promise<void>;
  /** After a successful apply, before the result. */
  after?(log: JobLogWriter): Promise<void>;
}

/** A succeeded backup restored into its running database, once its bytes match the checksum it was made with. */
export class BackupRestore {
  /** Services with a restore under way: a second restore waits for it to end. */
  private readonly restoring = new Set<string>();

  constructor(
    private readonly deps: ServiceDeps,
    private readonly env: EnvService,
    private readonly dump: DatabaseDump | null,
    private readonly destinations: BackupDestinations,
    private readonly log: BackupLog,
    private readonly runtime: RestoreRuntime,
  ) {}

  async restore(actor: Actor, serviceId: string, backupId: string, signal?: AbortSignal): Promise<RestoreResultView> {
    assertWrite(actor);
    const { service, engine } = await databaseFor(this.deps.store, actor, serviceId);
    const backup = await backupFor(this.deps.store, service.id, backupId);
    const dump = this.dump;
    if (backup.status === 'succeeded' && !dump?.formatOf(engine))
      throw new NotSupportedError(`Restoring ${engine} databases is not supported`, { engine });
    let target: DumpTarget | null = null;
    return this.restoreWith(service, backup, signal, {
      requested: `Restore of backup ${backup.id} requested`,
      prepare: async () => {
        const container = await this.runtime.locate(service);
        if (!container) throw new NotRunningError(`${service.name} is not running: deploy it before restoring`, { serviceId: service.id });
        const { env } = await this.env.resolvedFor(service);
        target = { engine, containerId: container.containerId, env };
        return env;
      },
      apply: (input, work, log) => dump!.restore(target!, input, work, (line) => log.write(line, 'stderr')),
      // Until then the host port of a container restarted by the restore may be closed (see RestoreRuntime.repoint).
      after: async (log) => {
        await this.runtime.repoint?.().catch((error: Error) => log.write(`Host port not repointed yet: ${error.message}`, 'stderr'));
      },
    });
  }

  /**
   * Every restore's frame (a database's dump, a volume's tar): only a succeeded backup, one restore or
   * backup of a service at a time, the checksum checked before anything is touched, the log, the
   * `restore.*` event, and the result; `steps` say where the bytes go. Values `prepare` answers (the
   * database's credentials) are masked in the log and in the error.
   */
  async restoreWith(
    service: ServiceRecord,
    backup: BackupRecord,
    signal: AbortSignal | undefined,
    steps: RestoreSteps,
  ): Promise<RestoreResultView> {
    if (backup.status !== 'succeeded')
      throw new ConflictError(`Backup ${backup.id} is ${presentBackup(backup).status}; only a succeeded backup can be restored`, {
        status: presentBackup(backup).status,
      });
    const busy = await this.deps.store.backups.listByStatus(['queued', 'running']);
    if (busy.some((b) => b.serviceId === service.id) || this.restoring.has(service.id))
      throw new ConflictError(`A backup or restore of ${service.name} is under way; restore once it ended`);
    this.restoring.add(service.id);
    const log = this.log.open(backup.id);
    const work = signal ?? new AbortController().signal;
    try {
      const secrets = (await steps.prepare?.()) ?? {};
      log.mask(...Object.values(secrets));
      log.write(steps.requested);
      // The checksum first: a changed or truncated file is refused before the target is touched.
      const source = await this.verifiedSource(backup, work, log);
      log.write(`Checksum verified (${backup.checksum}, ${backup.sizeBytes} bytes, from ${source.from})`);
      try {
        await steps.apply(await source.open(), work, log);
      } catch (error) {
        log.write(`Restore failed: ${(error as Error).message}`, 'stderr');
        const failure =
          error instanceof NotRunningError || error instanceof ConflictError
            ? error
            : new ConflictError(`The restore failed: ${maskIn((error as Error).message, secrets)}`, { backupId: backup.id });
        await this.restoreEvent('restore.failed', service, backup, failure.message);
        throw failure;
      } finally {
        await source.cleanup();
      }
      await steps.after?.(log);
      const restoredAt = this.deps.clock.now();
      log.write('Restore finished');
      await this.restoreEvent('restore.succeeded', service, backup, null);
      return { ok: true, restoredAt: restoredAt.toISOString(), backup: { id: backup.id, status: 'succeeded' } };
    } finally {
      this.restoring.delete(service.id);
      await log.flush();
    }
  }

  /** A restore's end, as an event (what it changed is the user's database, not ours: no transaction to share). */
  private restoreEvent(
    type: 'restore.succeeded' | 'restore.failed',
    service: ServiceRecord,
    backup: BackupRecord,
    error: string | null,
  ): Promise<void> {
    return this.deps.events.publishQuietly(type, {
      ...serviceRefOf(service),
      backupId: backup.id,
      storage: backup.storage,
      sizeBytes: backup.sizeBytes,
      error,
    });
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
    const files = this.destinations.files;
    let path = backup.localPath && (await files.size(backup.localPath)) !== null ? backup.localPath : null;
    let scratch: string | null = null;
    if (!path) {
      if (!backup.objectKey) throw new ChecksumMismatchError(`Backup ${backup.id}: its file is gone`, { backupId: backup.id });
      log.write(`Fetching ${backup.objectKey} from the object store`);
      scratch = files.pathOf(backup.serviceId, `.restore-${backup.id}-${newId(6)}`);
      const store = await this.destinations.storeOf(backup);
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
}
