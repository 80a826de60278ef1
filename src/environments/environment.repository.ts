import type { EnvironmentRecord } from '../domain/environments.js';
import { Environment } from '../persistence/entities.js';
import { Repository, type Patch } from '../persistence/repository.js';

/** The environments of projects; their services are in the project repository (services.environment_id). */
export class EnvironmentRepository extends Repository {
  /** Oldest first; `null`: every project's. */
  list(projectIds: string[] | null): Promise<EnvironmentRecord[]> {
    if (projectIds && projectIds.length === 0) return Promise.resolve([]);
    return this.rows(Environment, projectIds ? { projectId: { $in: projectIds } } : {}, { createdAt: 'asc', id: 'asc' });
  }
  get(id: string): Promise<EnvironmentRecord | null> {
    return this.row(Environment, { id });
  }
  getByName(projectId: string, name: string): Promise<EnvironmentRecord | null> {
    return this.row(Environment, { projectId, name });
  }
  insert(environment: EnvironmentRecord): Promise<EnvironmentRecord> {
    return this.insertRow(Environment, environment, 'environment');
  }
  update(id: string, patch: Patch<EnvironmentRecord>): Promise<void> {
    return this.updateRow(Environment, id, patch, 'environment');
  }
  /** The environment row alone: its services go first, through ServiceRemoval. */
  delete(id: string): Promise<void> {
    return this.deleteRows(Environment, { id });
  }
  deleteOfProject(projectId: string): Promise<void> {
    return this.deleteRows(Environment, { projectId });
  }
}
