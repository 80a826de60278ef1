import { Preview } from '../persistence/entities.js';
import { fromJson, Repository, type Patch } from '../persistence/repository.js';
import type { PreviewRecord } from './preview.records.js';

/** Pull-request previews: one row per service and pull request while it is open (or refused). */
export class PreviewRepository extends Repository {
  insert(preview: PreviewRecord): Promise<PreviewRecord> {
    return this.insertRow(Preview, preview, 'preview');
  }
  async get(id: string): Promise<PreviewRecord | null> {
    const row = await this.row(Preview, { id });
    return row && parsed(row);
  }
  async getOf(projectId: string, number: number): Promise<PreviewRecord | null> {
    const row = await this.row(Preview, { projectId, number });
    return row && parsed(row);
  }
  /** A project's previews (or every one), oldest first. */
  async list(projectId: string | null): Promise<PreviewRecord[]> {
    return (await this.rows(Preview, projectId ? { projectId } : {}, { createdAt: 'asc', id: 'asc' })).map(parsed);
  }
  /** The preview whose environment this is, if any. */
  async getByEnvironment(environmentId: string): Promise<PreviewRecord | null> {
    const row = await this.row(Preview, { environmentId });
    return row && parsed(row);
  }
  update(id: string, patch: Patch<PreviewRecord>): Promise<void> {
    return this.updateRow(Preview, id, patch, 'preview');
  }
  async delete(id: string): Promise<void> {
    await this.deleteRows(Preview, { id });
  }
  async deleteOfProject(projectId: string): Promise<void> {
    await this.deleteRows(Preview, { projectId });
  }
}

function parsed(row: PreviewRecord): PreviewRecord {
  return {
    ...row,
    services: fromJson(row.services),
    databases: fromJson(row.databases),
    deploymentIds: fromJson(row.deploymentIds),
    fromFork: Boolean(row.fromFork),
  };
}
