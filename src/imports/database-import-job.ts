import { serviceRefOf } from '../domain/events.js';
import type { DatabaseImportRecord } from '../domain/database-imports.js';
import type { ServiceRecord } from '../domain/types.js';
import type { EnvService } from '../env/env.service.js';
import { JobAborted, JobInterrupted, type JobContext, type JobKind } from '../jobs/job-kind.js';
import { JobLogWriter } from '../jobs/job-log-writer.js';
import type { JobOutcome, JobQueue } from '../jobs/job-queue.port.js';
import type { ServiceDeps } from '../platform/deps.js';
import { ImportFailure, type DataImporter } from './data-importer.port.js';
import { maskSecrets, type ParsedSource } from './source-url.js';

/** Where a database service's current container runs: null when none does. */
export interface ImportTargetLocator {
  locate(service: ServiceRecord): Promise<{ containerId: string; host: string } | null>;
}

export interface ImportLimits {
  /** Reaching the source gives up after this long. */
  connectTimeoutMs: number;
  /** A whole import gives up after this long. */
  timeoutMs: number;
}

/**
 * Imports as a kind of durable job. The row is written `running` when the import is accepted; its
 * source URL (with the password) only ever lives in this process's memory, so the queue the runner
 * claims from is in memory too, and an import a restart cut short can only be failed, never resumed.
 */
export class DatabaseImportJobs implements JobKind<DatabaseImportRecord, JobLogWriter>, JobQueue<DatabaseImportRecord> {
  /** Accepted, not yet claimed: the record and its source, oldest first. */
  private readonly pending = new Map<string, { job: DatabaseImportRecord; source: ParsedSource }>();
  /** Claimed: the source until the work ends. */
  private readonly sources = new Map<string, ParsedSource>();
  /** Why a job failed, for `finish` to store with its status. */
  private readonly reasons = new Map<string, string>();

  constructor(
    private readonly deps: ServiceDeps,
    private readonly env: EnvService,
    private readonly importer: DataImporter | null,
    private readonly locator: ImportTargetLocator | null,
    private readonly limits: () => ImportLimits,
  ) {}

  get queue(): JobQueue<DatabaseImportRecord> {
    return this;
  }

  /** A newly accepted import, for the runner to claim. */
  enqueue(job: DatabaseImportRecord, source: ParsedSource): void {
    this.pending.set(job.id, { job, source });
  }

  /** Forgets the accepted imports of these services that have not started (their service is gone). */
  dropPending(serviceIds: string[]): void {
    for (const [id, entry] of this.pending) if (serviceIds.includes(entry.job.serviceId)) this.pending.delete(id);
  }

  // The queue: in memory for what waits, the table for what runs.
  async listQueued(): Promise<DatabaseImportRecord[]> {
    return [...this.pending.values()].map((entry) => entry.job);
  }
  async claim(job: DatabaseImportRecord): Promise<DatabaseImportRecord | null> {
    const entry = this.pending.get(job.id);
    if (!entry) return null;
    this.pending.delete(job.id);
    this.sources.set(job.id, entry.source);
    return entry.job;
  }
  async listRunning(): Promise<DatabaseImportRecord[]> {
    return (await this.deps.store.imports.listByStatus('running')).filter((job) => !this.pending.has(job.id));
  }
  async abortRequested(): Promise<string[]> {
    return [];
  }
  async finish(job: DatabaseImportRecord, outcome: JobOutcome): Promise<void> {
    const reason = this.reasons.get(job.id) ?? (outcome === 'succeeded' ? null : 'The import stopped');
    this.reasons.delete(job.id);
    await this.deps.store.transaction(async (tx) => {
      const moved = await tx.imports.finish(job.id, {
        status: outcome === 'succeeded' ? 'succeeded' : 'failed',
        error: outcome === 'succeeded' ? null : reason,
        finishedAt: this.deps.clock.now(),
      });
      const service = moved ? await tx.projects.getService(job.serviceId) : null;
      if (service)
        await this.deps.events.publish(
          outcome === 'succeeded' ? 'import.succeeded' : 'import.failed',
          { ...serviceRefOf(service), importId: job.id, error: outcome === 'succeeded' ? null : reason },
          { store: tx },
        );
    });
  }

  keyOf(job: DatabaseImportRecord): string {
    return job.serviceId;
  }

  openLog(job: DatabaseImportRecord): JobLogWriter {
    const writer = new JobLogWriter((stream, lines) => {
      const createdAt = this.deps.clock.now();
      return this.deps.store.imports.appendLogs(
        job.id,
        lines.map((line) => ({ line, stream, createdAt })),
      );
    });
    const source = this.sources.get(job.id) ?? this.pending.get(job.id)?.source;
    if (source) writer.mask(...source.secrets);
    return writer;
  }

  async interrupted(job: DatabaseImportRecord, log: JobLogWriter): Promise<JobOutcome> {
    const reason = 'The server stopped while this import ran; it was not finished. Start the import again.';
    log.write(reason, 'stderr');
    this.reasons.set(job.id, reason);
    return 'failed';
  }

  async run(job: DatabaseImportRecord, { signal, log }: JobContext<JobLogWriter>): Promise<JobOutcome> {
    const source = this.sources.get(job.id);
    const limits = this.limits();
    const timeout = AbortSignal.timeout(limits.timeoutMs);
    const secrets = [...(source?.secrets ?? [])];
    try {
      if (!source) throw new ImportFailure('The source of this import is no longer known (the server restarted)');
      const service = await this.deps.store.projects.getService(job.serviceId);
      if (!service) throw new ImportFailure('The service was deleted');
      const where = this.importer && this.locator ? await this.locator.locate(service) : null;
      if (!this.importer || !where) throw new ImportFailure(`The database "${service.name}" is not running: deploy it first`);
      const { env } = await this.env.resolvedFor(service);
      // The target's own credentials are as secret as the source's.
      for (const value of Object.values(env)) if (value.length >= 4) secrets.push(value);
      log.mask(...secrets);
      log.write(`Importing ${job.sourceLabel} (${job.source}) into ${service.name}`);
      const target = {
        serviceId: service.id,
        engine: job.engine,
        containerId: where.containerId,
        host: where.host,
        port: service.internalPort,
        env,
      };
      const work = { log: log.write, signal: AbortSignal.any([signal, timeout]), connectTimeoutMs: limits.connectTimeoutMs };
      if (job.source === 'postgres-url') await this.importer.importPostgres(source.url, target, work);
      else await this.importer.importRedis(source.url, target, work);
      log.write('Import succeeded');
      return 'succeeded';
    } catch (error) {
      const reason = signal.aborted
        ? signal.reason instanceof JobInterrupted
          ? 'The server stopped while this import ran; it was not finished. Start the import again.'
          : signal.reason instanceof JobAborted
            ? signal.reason.message
            : 'The import was stopped'
        : timeout.aborted
          ? `The import did not finish within ${limits.timeoutMs >= 1000 ? `${Math.round(limits.timeoutMs / 1000)} s` : `${limits.timeoutMs} ms`}`
          : error instanceof ImportFailure
            ? error.message
            : `Internal error: ${(error as Error).message}`;
      const masked = maskSecrets(reason, secrets).slice(0, 4000);
      log.write(`Import failed: ${masked}`, 'stderr');
      this.reasons.set(job.id, masked);
      return 'failed';
    } finally {
      this.sources.delete(job.id);
    }
  }
}
