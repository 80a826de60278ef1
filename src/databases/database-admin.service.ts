import { callSignal, type CallSignal } from '../platform/call-signal.js';
import { assertProjectVisible, assertWrite, type Actor } from '../domain/access.js';
import { databaseEngineOf, type DatabaseEngine } from '../domain/database-engines.js';
import { NotFoundError, NotRunningError, ValidationError } from '../domain/errors.js';
import type { ServiceRecord } from '../domain/types.js';
import type { EnvService } from '../env/env.service.js';
import type { ServiceDeps } from '../platform/deps.js';
import { serviceFor } from '../platform/lookup.js';
import { SERVICE_TABLES, VersionedCache } from '../platform/versioned-cache.js';
import type { CellValue, DatabaseAdmin, DatabaseEndpoint, Row, TableRef } from './database-admin.port.js';
import type { QueryResultView, RowsView, TablesView } from './database-views.js';

/** Where a database service's container answers, from the platform: null when none runs. */
export interface DatabaseLocator {
  locate(service: ServiceRecord): Promise<{ host: string } | null>;
}

export interface DatabaseQueryLimits {
  /** Statement timeout of POST query; every other call is bounded by it too. */
  timeoutMs: number;
  /** Rows of a POST query beyond this are not read; the result says `truncated`. */
  rowCap: number;
}

export const DEFAULT_QUERY_LIMITS: DatabaseQueryLimits = { timeoutMs: 30_000, rowCap: 1_000 };

/**
 * The spec's database administration: tables, rows, one statement, row edits. The same rules for
 * every engine; what differs lives in the DatabaseAdmin adapter of its family.
 */
export class DatabaseAdminService {
  /**
   * Where each database answers, with its credentials: a page of rows is many requests, and finding the
   * container, the service and its env each time cost more than the page. Any write to the store (a
   * deployment, an env change, a deletion) drops it, and it never outlives 2 s (a container stopped by
   * hand answers `not_running` from the adapter meanwhile).
   */
  private readonly endpoints = new VersionedCache<string, { admin: DatabaseAdmin; db: DatabaseEndpoint; projectId: string }>(
    () => this.deps.store.versionOf(SERVICE_TABLES),
    1000,
    2_000,
  );

  /** Calls under way per service: a deleted database ends them at once rather than when its server goes. */
  private readonly inFlight = new Map<string, Map<CallSignal, (reason: unknown) => void>>();

  constructor(
    private readonly deps: ServiceDeps,
    private readonly env: EnvService,
    private readonly admin: DatabaseAdmin | null,
    private readonly locator: DatabaseLocator | null,
    private readonly limits: DatabaseQueryLimits = DEFAULT_QUERY_LIMITS,
  ) {}

  async tables(actor: Actor, serviceId: string, options: { database?: number | undefined }, signal?: AbortSignal): Promise<TablesView> {
    const { admin, db } = await this.open(actor, serviceId, 'read');
    return this.bounded(db.serviceId, signal, async (s) => ({
      engine: db.engine,
      tables: await admin.listTables(db, { logicalDatabase: options.database ?? 0 }, s),
    }));
  }

  async rows(
    actor: Actor,
    serviceId: string,
    input: { table: string; limit: number; offset: number },
    signal?: AbortSignal,
  ): Promise<RowsView> {
    const table = parseTable(input.table);
    const { admin, db } = await this.open(actor, serviceId, 'read');
    const page = await this.bounded(db.serviceId, signal, (s) =>
      admin.readRows(db, table, { limit: input.limit, offset: input.offset }, s),
    );
    return {
      engine: db.engine,
      table: input.table,
      columns: page.columns,
      rows: page.rows,
      limit: input.limit,
      offset: input.offset,
      total: page.total,
    };
  }

  async query(actor: Actor, serviceId: string, text: string, signal?: AbortSignal): Promise<QueryResultView> {
    if (!text.trim()) throw new ValidationError('sql', 'sql must not be empty');
    const { admin, db } = await this.open(actor, serviceId, 'write');
    return this.bounded(db.serviceId, signal, (s) => admin.query(db, text, this.limits, s));
  }

  async insertRow(
    actor: Actor,
    serviceId: string,
    input: { table: string; values: Row },
    signal?: AbortSignal,
  ): Promise<{ ok: true; table: string; id: CellValue }> {
    const table = parseTable(input.table);
    const { admin, db } = await this.open(actor, serviceId, 'write');
    const { id } = await this.bounded(db.serviceId, signal, (s) => admin.insertRow(db, table, input.values, s));
    return { ok: true, table: input.table, id };
  }

  async updateRow(
    actor: Actor,
    serviceId: string,
    input: { table: string; primaryKey: Row; values: Row },
    signal?: AbortSignal,
  ): Promise<void> {
    const table = parseTable(input.table);
    if (Object.keys(input.primaryKey).length === 0)
      throw new ValidationError('primaryKey', 'primaryKey must name the row by its primary key columns');
    if (Object.keys(input.values).length === 0) throw new ValidationError('values', 'values must set at least one column');
    const { admin, db } = await this.open(actor, serviceId, 'write');
    await this.bounded(db.serviceId, signal, (s) => admin.updateRow(db, table, input.primaryKey, input.values, s));
  }

  async deleteRow(actor: Actor, serviceId: string, input: { table: string; primaryKey: Row }, signal?: AbortSignal): Promise<void> {
    const table = parseTable(input.table);
    if (Object.keys(input.primaryKey).length === 0)
      throw new ValidationError('primaryKey', 'primaryKey must name the row by its primary key columns');
    const { admin, db } = await this.open(actor, serviceId, 'write');
    await this.bounded(db.serviceId, signal, (s) => admin.deleteRow(db, table, input.primaryKey, s));
  }

  /**
   * A deleted service: its calls under way end now with 409, and its pools close in the background
   * (a driver's close may wait for a statement the server is still running).
   */
  async release(serviceIds: string[]): Promise<void> {
    for (const id of serviceIds) {
      for (const release of this.inFlight.get(id)?.values() ?? [])
        release(new NotRunningError('The database was deleted while this request ran', { serviceId: id }));
      this.inFlight.delete(id);
      void this.admin?.release(id).catch(() => undefined);
    }
  }

  private async open(actor: Actor, serviceId: string, access: 'read' | 'write'): Promise<{ admin: DatabaseAdmin; db: DatabaseEndpoint }> {
    if (access === 'write') assertWrite(actor);
    const version = this.deps.store.versionOf(SERVICE_TABLES);
    const cached = this.endpoints.get(serviceId);
    if (cached) {
      // The same 404 as serviceFor for a key that may not see the project.
      assertProjectVisible(actor, cached.projectId, 'Service', serviceId);
      return { admin: cached.admin, db: cached.db };
    }
    const service = await serviceFor(this.deps.store, actor, serviceId);
    const engine = databaseEngineOf(service);
    if (!engine) throw new NotFoundError('Database of service', serviceId);
    if (service.status === 'stopped')
      throw new NotRunningError(`The ${engine} database "${service.name}" is stopped: start it first`, { serviceId: service.id });
    const location = this.admin && this.locator ? await this.locator.locate(service) : null;
    if (!this.admin || !location) throw notRunning(service, engine);
    const { env } = await this.env.resolvedFor(service);
    const opened = { admin: this.admin, db: { serviceId: service.id, engine, host: location.host, port: service.internalPort, env } };
    this.endpoints.set(serviceId, { ...opened, projectId: service.projectId }, version);
    return opened;
  }

  /** Every call ends by the statement timeout (plus a margin for the engine to cancel), with the request, or when its database is deleted. */
  private async bounded<T>(serviceId: string, signal: AbortSignal | undefined, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
    // One signal per call, its timer and listener dropped when the call ends: AbortSignal.timeout and
    // AbortSignal.any would keep a timer and a signal per page of rows alive for the whole timeout.
    const call = callSignal(signal, this.limits.timeoutMs + 5_000);
    let released = false;
    const calls = this.inFlight.get(serviceId) ?? new Map<CallSignal, (reason: unknown) => void>();
    calls.set(call, (reason) => {
      released = true;
      call.abort(reason);
    });
    this.inFlight.set(serviceId, calls);
    try {
      return await work(call.signal);
    } catch (error) {
      // However the adapter reports its abort, a deleted database reads as one.
      if (released) throw call.signal.reason;
      throw error;
    } finally {
      call.release();
      calls.delete(call);
      if (calls.size === 0 && this.inFlight.get(serviceId) === calls) this.inFlight.delete(serviceId);
    }
  }
}

function notRunning(service: ServiceRecord, engine: DatabaseEngine): NotRunningError {
  return new NotRunningError(`The ${engine} database "${service.name}" is not running: deploy it first`, { serviceId: service.id });
}

/** `<schema>.<name>`, split at the first dot (names may hold dots: Redis keys, MongoDB collections). */
export function parseTable(id: string): TableRef {
  const dot = id.indexOf('.');
  if (dot <= 0 || dot === id.length - 1)
    throw new ValidationError('table', 'table must be "<schema>.<name>", as the tables endpoint lists it');
  return { schema: id.slice(0, dot), name: id.slice(dot + 1) };
}
