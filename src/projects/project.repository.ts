import type { ProjectRecord, ServiceRecord } from '../domain/types.js';
import { Project, Service } from '../persistence/entities.js';
import { Repository, type Patch } from '../persistence/repository.js';

/** Projects and their services. */
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

  listServices(projectIds: string[]): Promise<ServiceRecord[]> {
    if (projectIds.length === 0) return Promise.resolve([]);
    return this.rows(Service, { projectId: { $in: projectIds } }, { createdAt: 'asc', id: 'asc' });
  }
  listAllServices(): Promise<ServiceRecord[]> {
    return this.rows(Service, {}, { createdAt: 'asc', id: 'asc' });
  }
  getService(id: string): Promise<ServiceRecord | null> {
    return this.row(Service, { id });
  }
  async serviceSlugsIn(projectId: string): Promise<Set<string>> {
    const rows = await this.rows(Service, { projectId });
    return new Set(rows.map((r) => r.slug));
  }
  async hostPortsTaken(from: number, to: number): Promise<Set<number>> {
    const rows = (await this.fork().createQueryBuilder(Service).select('hostPort').where({ hostPort: { $gte: from, $lte: to } }).execute('all', true)) as Array<{ hostPort: number }>;
    return new Set(rows.map((r) => r.hostPort));
  }
  insertService(service: ServiceRecord): Promise<ServiceRecord> {
    return this.insertRow(Service, service, 'service');
  }
  updateService(id: string, patch: Patch<ServiceRecord>): Promise<void> {
    return this.updateRow(Service, id, patch, 'service');
  }
  /** The service rows alone: their variables, domains and deployments go first, through ServiceRemoval. */
  async deleteServices(ids: string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.deleteRows(Service, { id: { $in: ids } });
  }
}
