import type { DatabaseSource, ProjectRecord, ServiceRecord, ServiceSource } from '../domain/types.js';
import {
  Project,
  Service,
  ServiceDatabase,
  ServiceStorage,
  type ServiceDatabaseRow,
  type ServiceRow,
  type ServiceStorageRow,
} from '../persistence/entities.js';
import { fromJson, Repository, type Patch } from '../persistence/repository.js';

/** Projects and their services. A database's own settings live in service_databases, a storage instance's in service_storages. */
export class ProjectRepository extends Repository {
  list(ids: string[] | null): Promise<ProjectRecord[]> {
    return this.rows(Project, ids ? { id: { $in: ids } } : {}, { createdAt: 'asc', id: 'asc' });
  }
  get(id: string): Promise<ProjectRecord | null> {
    return this.row(Project, { id });
  }
  getBySlug(slug: string): Promise<ProjectRecord | null> {
    return this.row(Project, { slug });
  }
  async slugsLike(base: string): Promise<Set<string>> {
    const rows = await this.rows(Project, { slug: { $like: `${base}%` } });
    return new Set(rows.map((r) => r.slug));
  }
  insert(project: ProjectRecord): Promise<ProjectRecord> {
    return this.insertRow(Project, project, 'project');
  }
  update(id: string, patch: Patch<ProjectRecord>): Promise<void> {
    return this.updateRow(Project, id, patch, 'project');
  }
  /** The project row alone: what it owns goes first, through ServiceRemoval. */
  delete(id: string): Promise<void> {
    return this.deleteRows(Project, { id });
  }

  async listServices(projectIds: string[]): Promise<ServiceRecord[]> {
    if (projectIds.length === 0) return [];
    return this.withSources(await this.rows(Service, { projectId: { $in: projectIds } }, { createdAt: 'asc', id: 'asc' }));
  }
  async listAllServices(): Promise<ServiceRecord[]> {
    return this.withSources(await this.rows(Service, {}, { createdAt: 'asc', id: 'asc' }), true);
  }
  /** Services that poll their branch or image (pollIntervalSeconds set). */
  async listPolling(): Promise<ServiceRecord[]> {
    return this.withSources(await this.rows(Service, { pollIntervalSeconds: { $ne: null } }, { createdAt: 'asc', id: 'asc' }));
  }
  async getService(id: string): Promise<ServiceRecord | null> {
    const row = await this.row(Service, { id });
    return row && (await this.withSources([row]))[0]!;
  }
  async listServicesIn(environmentIds: string[]): Promise<ServiceRecord[]> {
    if (environmentIds.length === 0) return [];
    return this.withSources(await this.rows(Service, { environmentId: { $in: environmentIds } }, { createdAt: 'asc', id: 'asc' }));
  }
  async serviceSlugsIn(environmentId: string): Promise<Set<string>> {
    const rows = await this.rows(Service, { environmentId });
    return new Set(rows.map((r) => r.slug));
  }
  async hostPortsTaken(from: number, to: number): Promise<Set<number>> {
    const rows = (await this.fork()
      .createQueryBuilder(Service)
      .select('hostPort')
      .where({ hostPort: { $gte: from, $lte: to } })
      .execute('all', true)) as Array<{ hostPort: number }>;
    return new Set(rows.map((r) => r.hostPort));
  }
  /** Writes the service row and, for a database or a storage instance, its settings row. Call inside a transaction. */
  async insertService(service: ServiceRecord): Promise<ServiceRecord> {
    const { row, database, storage } = toRows(service);
    await this.insertRow(Service, row, 'service');
    if (database) await this.insertRow(ServiceDatabase, database, 'service');
    if (storage) await this.insertRow(ServiceStorage, storage, 'service');
    return service;
  }
  /** Everything but the source, which a service keeps for life. */
  updateService(id: string, patch: Patch<Omit<ServiceRecord, 'source'>>): Promise<void> {
    return this.updateRow(Service, id, patch, 'service');
  }
  /** A database service's own settings (engine excepted: a service keeps its source for life). */
  async updateDatabaseSource(serviceId: string, patch: Partial<Omit<DatabaseSource, 'kind' | 'engine'>>): Promise<void> {
    if (Object.keys(patch).length === 0) return;
    this.written(ServiceDatabase);
    await this.fork().nativeUpdate(ServiceDatabase, { serviceId }, patch);
  }
  /** The service rows alone: their variables, domains and deployments go first, through ServiceRemoval. */
  async deleteServices(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.deleteRows(ServiceDatabase, { serviceId: { $in: ids } });
    await this.deleteRows(ServiceStorage, { serviceId: { $in: ids } });
    await this.deleteRows(Service, { id: { $in: ids } });
  }

  /** One more query per kind with settings of its own, of the services of that kind (`all`: without an IN list). */
  private async withSources(rows: ServiceRow[], all = false): Promise<ServiceRecord[]> {
    const idsOf = (kind: ServiceRow['source']) => rows.filter((r) => r.source === kind).map((r) => r.id);
    const databaseIds = idsOf('database');
    const storageIds = idsOf('storage');
    const databases = databaseIds.length === 0 ? [] : await this.rows(ServiceDatabase, all ? {} : { serviceId: { $in: databaseIds } });
    const storages = storageIds.length === 0 ? [] : await this.rows(ServiceStorage, all ? {} : { serviceId: { $in: storageIds } });
    const databaseOf = new Map(databases.map((d) => [d.serviceId, d]));
    const storageOf = new Map(storages.map((d) => [d.serviceId, d]));
    return rows.map((row) => toRecord(row, databaseOf.get(row.id), storageOf.get(row.id)));
  }
}

function toRecord(row: ServiceRow, database: ServiceDatabaseRow | undefined, storage: ServiceStorageRow | undefined): ServiceRecord {
  const { source: kind, repoFullName, repoUrl, containerImage, ...rest } = row;
  let source: ServiceSource;
  if (kind === 'image') source = { kind, image: containerImage! };
  else if (kind === 'database') {
    if (!database) throw new Error(`Service ${row.id} is a database without its service_databases row`);
    const { serviceId: _serviceId, ...settings } = database;
    source = { kind, ...settings };
  } else if (kind === 'storage') {
    if (!storage) throw new Error(`Service ${row.id} is a storage instance without its service_storages row`);
    const { serviceId: _serviceId, ...settings } = storage;
    source = { kind, ...settings };
  } else source = { kind: 'repository', repoFullName, repoUrl };
  return { ...rest, watchPaths: fromJson(rest.watchPaths), previews: fromJson(rest.previews), placement: fromJson(rest.placement), source };
}

interface Rows {
  row: ServiceRow;
  database: ServiceDatabaseRow | null;
  storage: ServiceStorageRow | null;
}

function toRows(service: ServiceRecord): Rows {
  const { source, ...rest } = service;
  const none = { repoFullName: null, repoUrl: null, containerImage: null };
  switch (source.kind) {
    case 'repository':
      return {
        row: { ...rest, ...none, source: source.kind, repoFullName: source.repoFullName, repoUrl: source.repoUrl },
        database: null,
        storage: null,
      };
    case 'image':
      return { row: { ...rest, ...none, source: source.kind, containerImage: source.image }, database: null, storage: null };
    case 'database': {
      const { kind, ...settings } = source;
      return { row: { ...rest, ...none, source: kind }, database: { serviceId: service.id, ...settings }, storage: null };
    }
    case 'storage': {
      const { kind, ...settings } = source;
      return { row: { ...rest, ...none, source: kind }, database: null, storage: { serviceId: service.id, ...settings } };
    }
  }
}
