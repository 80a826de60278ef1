import { serviceRefOf } from '../domain/events.js';
import { PassThrough, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { JobAborted, JobInterrupted, type JobContext, type JobKind } from '../jobs/job-kind.js';
import type { JobLogWriter } from '../jobs/job-log-writer.js';
import type { JobOutcome, JobQueue } from '../jobs/job-queue.port.js';
import type { EnvService } from '../env/env.service.js';
import type { ServiceDeps } from '../platform/deps.js';
import { FanOut, HashingStream } from './backup-streams.js';
import { BACKUP_FILE_EXTENSIONS, type BackupRecord } from './backup.records.js';
import type { BackupDestinations } from './backup-destinations.js';
import { errorText, maskIn, missingObjectStore } from './backup-errors.js';
import type { BackupLog } from './backup-log.js';
import type { RestoreRuntime } from './backup-restore.js';
import type { DatabaseDump } from './database-dump.port.js';
import type { ObjectStore } from './object-store.port.js';
import { BackupFailure, dumpSource, type BackupSources, type OpenedSource } from './backup-sources.js';

/**
 * Backups as a kind of durable job: the backups table is the queue, one backup runs at a time per
 * database service, and the work is the engine's dump streamed through a hash to every place asked
 * for. A backup that did not reach each of them is `failed`, and what it left is removed.
 */
export class BackupJobs implements JobKind<BackupRecord, JobLogWriter>, JobQueue<BackupRecord> {
  private readonly sources: BackupSources;

  constructor(
    private readonly deps: ServiceDeps,
    private readonly env: EnvService,
    dump: DatabaseDump | null,
    private readonly destinations: BackupDestinations,
    private readonly log: BackupLog,
    private readonly runtime: Pick<RestoreRuntime, 'locate'>,
    /** Volumes' tars and base backups; a database's dump is the dump port's. */
    sources: BackupSources = {},
  ) {
    this.sources = { dump: dumpSource(dump, (service) => runtime.locate(service)), ...sources };
  }

  get queue(): JobQueue<BackupRecord> {
    return this;
  }

  keyOf(backup: BackupRecord): string {
    return backup.serviceId;
  }

  openLog(backup: BackupRecord): JobLogWriter {
    return this.log.open(backup.id);
  }

  listQueued(): Promise<BackupRecord[]> {
    return this.deps.store.backups.listByStatus(['queued']);
  }

  async claim(backup: BackupRecord): Promise<BackupRecord | null> {
    const startedAt = this.deps.clock.now();
    return (await this.deps.store.backups.transition(backup.id, ['queued'], { status: 'running', startedAt }))
      ? { ...backup, status: 'running', startedAt }
      : null;
  }

  listRunning(): Promise<BackupRecord[]> {
    return this.deps.store.backups.listByStatus(['running']);
  }

  abortRequested(ids: string[]): Promise<string[]> {
    return this.deps.store.backups.listAbortRequested(ids);
  }

  async finish(backup: BackupRecord, outcome: JobOutcome): Promise<void> {
    await this.deps.store.transaction(async (tx) => {
      const moved = await tx.backups.transition(backup.id, ['running'], {
        status: outcome === 'succeeded' ? 'succeeded' : 'failed',
        finishedAt: this.deps.clock.now(),
      });
      const ended = moved ? await tx.backups.get(backup.id) : null;
      const service = ended ? await tx.projects.getService(ended.serviceId) : null;
      if (ended && service)
        await this.deps.events.publish(
          outcome === 'succeeded' ? 'backup.succeeded' : 'backup.failed',
          {
            ...serviceRefOf(service),
            backupId: ended.id,
            storage: ended.storage,
            sizeBytes: outcome === 'succeeded' ? ended.sizeBytes : null,
            error: outcome === 'succeeded' ? null : (ended.error ?? `The backup was ${outcome}`),
          },
          { store: tx },
        );
    });
  }

  /** The process that ran it stopped: never `running` forever, and its partial file goes. */
  async interrupted(backup: BackupRecord, log: JobLogWriter): Promise<JobOutcome> {
    const reason = 'The platform stopped while this backup was running; it was not finished. Back up again.';
    log.write(reason, 'stderr');
    await this.cleanUp(backup, log);
    await this.deps.store.backups.update(backup.id, { error: reason });
    return 'failed';
  }

  async run(backup: BackupRecord, { signal, log }: JobContext<JobLogWriter>): Promise<JobOutcome> {
    const files = this.destinations.files;
    const work = new AbortController();
    const stop = () => work.abort(signal.reason);
    signal.addEventListener('abort', stop, { once: true });
    let secrets: Record<string, string> = {};
    const name = `${backup.id}.${BACKUP_FILE_EXTENSIONS[backup.format]}`;
    const wantsDisk = backup.storage !== 'object';
    const wantsObject = backup.storage !== 'disk';
    const placed: BackupRecord = {
      ...backup,
      localPath: wantsDisk ? files.pathOf(backup.serviceId, name) : null,
      objectKey: wantsObject ? `backups/${backup.serviceId}/${name}` : null,
    };
    let opened: OpenedSource | null = null;
    try {
      const service = await this.deps.store.projects.getService(backup.serviceId);
      if (!service) throw new BackupFailure('The service was deleted');
      const source = this.sources[backup.kind];
      if (!source) throw new BackupFailure(`This platform cannot make ${backup.kind} backups`);
      let store: ObjectStore | null = null;
      if (wantsObject) {
        const config = await this.destinations.configOf(backup.storageId);
        if (!config) throw new BackupFailure(`No backup to the object store: ${missingObjectStore(backup.storageId)}`);
        secrets.objectStoreSecret = config.secretAccessKey;
        log.mask(config.secretAccessKey);
        store = this.destinations.open(config);
      }
      const { env } = await this.env.resolvedFor(service);
      secrets = { ...secrets, ...env };
      log.mask(...Object.values(env));
      await this.deps.store.backups.update(backup.id, { localPath: placed.localPath, objectKey: placed.objectKey });
      log.write(
        backup.kind === 'volume'
          ? `Backup ${backup.id} started: volume ${backup.volume} (${backup.volumeMode}), format ${backup.format}, to ${backup.storage}`
          : `Backup ${backup.id} started: ${backup.engine}${backup.kind === 'base' ? ' base backup' : ''}, format ${backup.format}, to ${backup.storage}`,
      );

      // Every destination is open before the dump starts: a dump nobody reads would hold its server.
      const targets: Writable[] = [];
      const uploads: Array<Promise<unknown>> = [];
      if (placed.localPath) {
        targets.push(await files.create(placed.localPath));
        log.write(`Writing ${placed.localPath}`);
      }
      if (store && placed.objectKey) {
        const body = new PassThrough({ highWaterMark: 1 << 20 });
        targets.push(body);
        const upload = store.upload(placed.objectKey, body, work.signal);
        // Handled below, with the dump; until then a store that refused at once must not be an unhandled rejection.
        upload.catch(() => undefined);
        uploads.push(upload);
        log.write(`Uploading to the object store as ${placed.objectKey}`);
      }
      opened = await source.open({ backup, service, env, signal: work.signal, log });
      const dump = opened;
      const hasher = new HashingStream();
      const tasks: Array<Promise<unknown>> = [dump.done, ...uploads];
      tasks.push(pipeline(dump.stream, hasher, new FanOut(targets), { signal: work.signal }));
      // The first failure stops the rest: a dump that failed must not finish an upload, nor the reverse.
      const settled = await Promise.allSettled(
        tasks.map((task) =>
          task.catch((error: unknown) => {
            if (!work.signal.aborted) work.abort(error);
            throw error;
          }),
        ),
      );
      if (work.signal.aborted) throw work.signal.reason;
      const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
      if (failed) throw failed.reason;
      if (placed.localPath) await files.commit(placed.localPath);
      const checksum = hasher.checksum();
      const recorded = await opened.finish();
      await this.deps.store.backups.update(backup.id, { sizeBytes: hasher.bytes, checksum, error: null, ...recorded });
      log.write(`Backup succeeded: ${hasher.bytes} bytes, ${checksum}`);
      return 'succeeded';
    } catch (error) {
      // Whatever still runs (the dump, an upload) stops now.
      if (!work.signal.aborted) work.abort(error);
      const cause = signal.aborted ? signal.reason : error;
      const reason =
        cause instanceof JobInterrupted
          ? 'The platform stopped while this backup was running; it was not finished. Back up again.'
          : cause instanceof JobAborted
            ? 'The backup was stopped'
            : maskIn(errorText(cause), secrets);
      log.write(`Backup failed: ${reason}`, 'stderr');
      await this.cleanUp(placed, log);
      await this.deps.store.backups.update(backup.id, { error: reason, sizeBytes: 0, checksum: '' });
      return 'failed';
    } finally {
      signal.removeEventListener('abort', stop);
      await opened?.release?.().catch((error: Error) => log.write(`After the backup: ${error.message}`, 'stderr'));
    }
  }

  /** What a failed backup left: its partial file and any object it uploaded. */
  private async cleanUp(backup: BackupRecord, log: JobLogWriter): Promise<void> {
    if (backup.localPath) await this.destinations.files.remove(backup.localPath).catch(() => undefined);
    if (backup.objectKey) {
      try {
        const config = await this.destinations.configOf(backup.storageId);
        if (config) await this.destinations.open(config).remove(backup.objectKey, AbortSignal.timeout(30_000));
      } catch (error) {
        log.write(`Could not remove ${backup.objectKey} from the object store: ${errorText(error)}`, 'stderr');
      }
    }
  }
}
