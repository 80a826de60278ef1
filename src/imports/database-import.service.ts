import { assertWrite, type Actor } from '../domain/access.js';
import { databaseEngineOf } from '../domain/database-engines.js';
import { IMPORT_TARGETS, type DatabaseImportLogRecord, type DatabaseImportRecord, type ImportSource } from '../domain/database-imports.js';
import { ConflictError, NotFoundError, NotRunningError, ValidationError } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import type { ServiceRecord } from '../domain/types.js';
import { JobAborted } from '../jobs/job-kind.js';
import type { JobRunner } from '../jobs/job-runner.js';
import type { JobLogWriter } from '../jobs/job-log-writer.js';
import type { ServiceDeps } from '../platform/deps.js';
import { serviceFor } from '../platform/lookup.js';
import type { DatabaseImportJobs, ImportTargetLocator } from './database-import-job.js';
import { parseSourceUrl } from './source-url.js';

/** Imports listed per service: the newest this many. */
const LIST_LIMIT = 100;
/** Log lines an import's log answers with, at most. */
const LOG_LIMIT = 5_000;

/**
 * The spec's data imports: a Postgres or Redis URL copied into a database service, in the background.
 * Accepting one checks the URL, the engine and that the database runs, then answers `running` at once.
 */
export class DatabaseImportService {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly jobs: DatabaseImportJobs,
    private readonly runner: JobRunner<DatabaseImportRecord, JobLogWriter>,
    private readonly locator: ImportTargetLocator | null,
  ) {}

  async list(actor: Actor, serviceId: string): Promise<DatabaseImportRecord[]> {
    const service = await this.databaseService(actor, serviceId);
    return this.deps.store.imports.list(service.id, LIST_LIMIT);
  }

  async logs(actor: Actor, serviceId: string, importId: string): Promise<DatabaseImportLogRecord[]> {
    const service = await this.databaseService(actor, serviceId);
    const found = await this.deps.store.imports.get(importId);
    if (!found || found.serviceId !== service.id) throw new NotFoundError('Import', importId);
    return this.deps.store.imports.listLogs(found.id, LOG_LIMIT);
  }

  async start(actor: Actor, serviceId: string, source: ImportSource, sourceUrl: string): Promise<DatabaseImportRecord> {
    assertWrite(actor);
    const service = await this.databaseService(actor, serviceId);
    const engine = databaseEngineOf(service)!;
    const targets = IMPORT_TARGETS[source];
    if (!targets.includes(engine))
      throw new ValidationError('serviceId', `A ${source} import goes into a ${targets.join(' or ')} service; this one is ${engine}`);
    const parsed = parseSourceUrl(source, sourceUrl);
    if (!this.locator || !(await this.locator.locate(service)))
      throw new NotRunningError(`The ${engine} database "${service.name}" is not running: deploy it first`, { serviceId: service.id });
    const now = this.deps.clock.now();
    const record: DatabaseImportRecord = {
      id: newId(),
      serviceId: service.id,
      engine,
      source,
      sourceLabel: parsed.label,
      status: 'running',
      error: null,
      createdAt: now,
      startedAt: now,
      finishedAt: null,
    };
    // One import per database at a time: two restores into one database would undo each other.
    await this.deps.store.transaction(async (tx) => {
      if ((await tx.imports.listByStatus('running')).some((i) => i.serviceId === service.id))
        throw new ConflictError(`An import into "${service.name}" is already running; wait for it to end`);
      await tx.imports.insert(record);
    });
    this.jobs.enqueue(record, parsed);
    this.runner.wake();
    return record;
  }

  /** Claims begin once imports a previous process left running are failed. */
  async startRunner(): Promise<void> {
    this.runner.start();
    await this.runner.recover();
  }

  async stop(): Promise<void> {
    await this.runner.stop();
  }

  /** Deleted services: their imports stop now (their rows are gone already). */
  async release(serviceIds: string[]): Promise<void> {
    this.jobs.dropPending(serviceIds);
    await this.runner.abortKeys(serviceIds, new JobAborted('The service was deleted'));
  }

  private async databaseService(actor: Actor, serviceId: string): Promise<ServiceRecord> {
    const service = await serviceFor(this.deps.store, actor, serviceId);
    if (!databaseEngineOf(service)) throw new NotFoundError('Database of service', serviceId);
    return service;
  }
}
