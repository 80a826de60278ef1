import { UniqueConstraintViolationException, type FilterQuery } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/sql';
import { ConflictError } from '../domain/errors.js';
import type {
  ApiKeyRecord,
  DeploymentLogRecord,
  DeploymentRecord,
  DomainRecord,
  EnvVarRecord,
  LogStream,
  ProjectRecord,
  ServiceRecord,
} from '../domain/types.js';
import { ApiKey, Deployment, DeploymentLog, Domain, EnvVar, Project, Service, Setting } from './entities.js';

type Patch<T> = Partial<Omit<T, 'id'>>;

/**
 * The repositories the services use. Every call runs on a fresh fork of the entity manager
 * (or on the transaction's), returns plain records and keeps no identity map between calls,
 * so nothing ORM-shaped leaks out and concurrent requests never share state.
 */
export class Store {
  constructor(
    private readonly em: EntityManager,
    private readonly inTransaction = false,
    private readonly writes: { count: number } = { count: 0 },
  ) {}

  /**
   * Changes with every write made through this store (and after every transaction, committed or
   * not): a read cached at one version is current as long as the version is. Log lines do not count.
   */
  get version(): number {
    return this.writes.count;
  }

  private written(): void {
    this.writes.count++;
  }

  /** Outside a transaction, a fresh fork per call; inside, the transaction's own manager (SQLite has one connection). */
  private fork(): EntityManager {
    return this.inTransaction ? this.em : this.em.fork({ clear: true });
  }

  /** Runs `fn` in one database transaction; a throw rolls everything back. */
  async transaction<T>(fn: (store: Store) => Promise<T>): Promise<T> {
    if (this.inTransaction) return fn(this);
    try {
      return await this.fork().transactional((em) => fn(new Store(em, true, this.writes)));
    } finally {
      this.written();
    }
  }

  /**
   * Reads go through the query builder and come back as plain rows (names and types mapped, no
   * entity instances): hydrating entities cost 0.1 ms a row, a tenth of a second for 1,000 services.
   */
  private async find<T extends object>(entity: new () => T, where: FilterQuery<T>, orderBy?: Record<string, 'asc' | 'desc'>, limit?: number): Promise<T[]> {
    const qb = this.fork().createQueryBuilder(entity).select('*').where(where as never);
    if (orderBy) qb.orderBy(orderBy as never);
    if (limit !== undefined) qb.limit(limit);
    return (await qb.execute('all', true)) as T[];
  }

  private async findOne<T extends object>(entity: new () => T, where: FilterQuery<T>): Promise<T | null> {
    return (await this.find(entity, where, undefined, 1))[0] ?? null;
  }

  private async insert<T extends object>(entity: new () => T, data: T, what: string): Promise<T> {
    try {
      this.written();
      await this.fork().insert(entity, data);
      return data;
    } catch (error) {
      throw uniqueToConflict(error, what);
    }
  }

  private async update<T extends object>(entity: new () => T, id: string, patch: Patch<T>, what: string): Promise<void> {
    if (Object.keys(patch).length === 0) return;
    try {
      this.written();
      await this.fork().nativeUpdate(entity, { id } as FilterQuery<T>, patch as never);
    } catch (error) {
      throw uniqueToConflict(error, what);
    }
  }

  // Projects
  listProjects(ids: string[] | null): Promise<ProjectRecord[]> {
    return this.find(Project, ids ? { id: { $in: ids } } : {}, { createdAt: 'asc', id: 'asc' });
  }
  getProject(id: string): Promise<ProjectRecord | null> {
    return this.findOne(Project, { id });
  }
  getProjectBySlug(slug: string): Promise<ProjectRecord | null> {
    return this.findOne(Project, { slug });
  }
  async projectSlugsLike(base: string): Promise<Set<string>> {
    const rows = await this.find(Project, { slug: { $like: `${base}%` } });
    return new Set(rows.map((r) => r.slug));
  }
  insertProject(project: ProjectRecord): Promise<ProjectRecord> {
    return this.insert(Project, project, 'project');
  }
  updateProject(id: string, patch: Patch<ProjectRecord>): Promise<void> {
    return this.update(Project, id, patch, 'project');
  }
  /** Deletes the project and everything it owns. Call inside a transaction. */
  async deleteProject(id: string): Promise<void> {
    const services = await this.find(Service, { projectId: id });
    for (const service of services) await this.deleteService(service.id);
    this.written();
    await this.fork().nativeDelete(Project, { id });
  }

  // Services
  listServicesOfProjects(projectIds: string[]): Promise<ServiceRecord[]> {
    if (projectIds.length === 0) return Promise.resolve([]);
    return this.find(Service, { projectId: { $in: projectIds } }, { createdAt: 'asc', id: 'asc' });
  }
  listAllServices(): Promise<ServiceRecord[]> {
    return this.find(Service, {}, { createdAt: 'asc', id: 'asc' });
  }
  getService(id: string): Promise<ServiceRecord | null> {
    return this.findOne(Service, { id });
  }
  async serviceSlugsInProject(projectId: string): Promise<Set<string>> {
    const rows = await this.find(Service, { projectId });
    return new Set(rows.map((r) => r.slug));
  }
  async hostPortsTaken(from: number, to: number): Promise<Set<number>> {
    const rows = (await this.fork().createQueryBuilder(Service).select('hostPort').where({ hostPort: { $gte: from, $lte: to } }).execute('all', true)) as Array<{ hostPort: number }>;
    return new Set(rows.map((r) => r.hostPort));
  }
  insertService(service: ServiceRecord): Promise<ServiceRecord> {
    return this.insert(Service, service, 'service');
  }
  updateService(id: string, patch: Patch<ServiceRecord>): Promise<void> {
    return this.update(Service, id, patch, 'service');
  }
  /** Deletes the service with its variables, domains, deployments and their logs. Call inside a transaction. */
  async deleteService(id: string): Promise<void> {
    this.written();
    const em = this.fork();
    const deployments = await this.find(Deployment, { serviceId: id });
    if (deployments.length > 0) await em.nativeDelete(DeploymentLog, { deploymentId: { $in: deployments.map((d) => d.id) } });
    await em.nativeDelete(Deployment, { serviceId: id });
    await em.nativeDelete(EnvVar, { serviceId: id });
    await em.nativeDelete(Domain, { serviceId: id });
    await em.nativeDelete(Service, { id });
  }

  // Environment variables
  listEnv(serviceIds: string[]): Promise<EnvVarRecord[]> {
    if (serviceIds.length === 0) return Promise.resolve([]);
    return this.find(EnvVar, { serviceId: { $in: serviceIds } }, { key: 'asc' });
  }
  getEnvVar(id: string): Promise<EnvVarRecord | null> {
    return this.findOne(EnvVar, { id });
  }
  getEnvVarByKey(serviceId: string, key: string): Promise<EnvVarRecord | null> {
    return this.findOne(EnvVar, { serviceId, key });
  }
  insertEnvVar(envVar: EnvVarRecord): Promise<EnvVarRecord> {
    return this.insert(EnvVar, envVar, 'environment variable');
  }
  updateEnvVar(id: string, patch: Patch<EnvVarRecord>): Promise<void> {
    return this.update(EnvVar, id, patch, 'environment variable');
  }
  async deleteEnvVar(id: string): Promise<void> {
    this.written();
    await this.fork().nativeDelete(EnvVar, { id });
  }

  // Domains
  listDomains(serviceIds: string[] | null): Promise<DomainRecord[]> {
    if (serviceIds && serviceIds.length === 0) return Promise.resolve([]);
    return this.find(Domain, serviceIds ? { serviceId: { $in: serviceIds } } : {}, { createdAt: 'asc', id: 'asc' });
  }
  getDomain(id: string): Promise<DomainRecord | null> {
    return this.findOne(Domain, { id });
  }
  getDomainByHostname(hostname: string): Promise<DomainRecord | null> {
    return this.findOne(Domain, { hostname });
  }
  insertDomain(domain: DomainRecord): Promise<DomainRecord> {
    return this.insert(Domain, domain, 'domain');
  }
  updateDomain(id: string, patch: Patch<DomainRecord>): Promise<void> {
    return this.update(Domain, id, patch, 'domain');
  }
  async deleteDomain(id: string): Promise<void> {
    this.written();
    await this.fork().nativeDelete(Domain, { id });
  }

  // Deployments
  insertDeployment(deployment: DeploymentRecord): Promise<DeploymentRecord> {
    return this.insert(Deployment, deployment, 'deployment');
  }
  getDeployment(id: string): Promise<DeploymentRecord | null> {
    return this.findOne(Deployment, { id });
  }
  listDeployments(serviceId: string, limit?: number): Promise<DeploymentRecord[]> {
    return this.find(Deployment, { serviceId }, { createdAt: 'desc', id: 'desc' }, limit);
  }
  listDeploymentsByIds(ids: string[]): Promise<DeploymentRecord[]> {
    if (ids.length === 0) return Promise.resolve([]);
    return this.find(Deployment, { id: { $in: ids } });
  }
  listDeploymentsByStatus(statuses: DeploymentRecord['status'][]): Promise<DeploymentRecord[]> {
    return this.find(Deployment, { status: { $in: statuses } }, { createdAt: 'asc', id: 'asc' });
  }
  updateDeployment(id: string, patch: Patch<DeploymentRecord>): Promise<void> {
    return this.update(Deployment, id, patch, 'deployment');
  }
  /**
   * Moves a deployment only if it is still in `from`: the compare-and-set that keeps an abort
   * and the runner from both winning. Returns whether this call made the move.
   */
  async transitionDeployment(id: string, from: DeploymentRecord['status'][], patch: Patch<DeploymentRecord>): Promise<boolean> {
    this.written();
    const changed = await this.fork().nativeUpdate(Deployment, { id, status: { $in: from } }, patch as never);
    return changed > 0;
  }

  // Deployment logs
  async appendLogs(deploymentId: string, lines: Array<{ line: string; stream: LogStream; createdAt: Date }>): Promise<DeploymentLogRecord[]> {
    const records: DeploymentLogRecord[] = [];
    await this.fork().transactional(async (tx) => {
      for (const line of lines) {
        const id = await tx.insert(DeploymentLog, { deploymentId, ...line } as DeploymentLog);
        records.push({ id: Number(id), deploymentId, ...line });
      }
    });
    return records;
  }
  listLogs(deploymentId: string, afterId = 0, limit?: number): Promise<DeploymentLogRecord[]> {
    return this.find(DeploymentLog, { deploymentId, id: { $gt: afterId } }, { id: 'asc' }, limit);
  }

  // Settings
  async getSetting(key: string): Promise<string | null> {
    return (await this.findOne(Setting, { key }))?.value ?? null;
  }
  async putSetting(key: string, value: string, now: Date): Promise<void> {
    this.written();
    await this.fork().upsert(Setting, { key, value, updatedAt: now } as Setting);
  }

  // API keys
  /** A round trip to the database, for the health check. */
  async ping(): Promise<void> {
    await this.fork().getConnection().execute('select 1');
  }

  async countApiKeys(): Promise<number> {
    return this.fork().count(ApiKey, {});
  }

  async listApiKeys(): Promise<ApiKeyRecord[]> {
    return (await this.find(ApiKey, {}, { createdAt: 'asc', id: 'asc' })).map(withParsedJson);
  }
  async getApiKeyByHash(tokenHash: string): Promise<ApiKeyRecord | null> {
    const key = await this.findOne(ApiKey, { tokenHash });
    return key && withParsedJson(key);
  }
  async getApiKey(id: string): Promise<ApiKeyRecord | null> {
    const key = await this.findOne(ApiKey, { id });
    return key && withParsedJson(key);
  }
  insertApiKey(key: ApiKeyRecord): Promise<ApiKeyRecord> {
    return this.insert(ApiKey, key, 'API key');
  }
  updateApiKey(id: string, patch: Patch<ApiKeyRecord>): Promise<void> {
    return this.update(ApiKey, id, patch, 'API key');
  }
  async deleteApiKey(id: string): Promise<void> {
    this.written();
    await this.fork().nativeDelete(ApiKey, { id });
  }
}

/** SQLite hands JSON columns back as text through the query builder; PostgreSQL as values. */
function withParsedJson(key: ApiKeyRecord): ApiKeyRecord {
  return typeof key.projectIds === 'string' ? { ...key, projectIds: JSON.parse(key.projectIds) as string[] | null } : key;
}

function uniqueToConflict(error: unknown, what: string): unknown {
  if (error instanceof UniqueConstraintViolationException) {
    return new ConflictError(`This ${what} conflicts with an existing one`);
  }
  return error;
}
