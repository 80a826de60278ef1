import type { ApiKeyRecord } from '../domain/types.js';
import { ApiKey } from '../persistence/entities.js';
import { Repository, type Patch } from '../persistence/repository.js';

/** API keys, by id and by token hash. */
export class ApiKeyRepository extends Repository {
  count(): Promise<number> {
    return this.fork().count(ApiKey, {});
  }
  async list(): Promise<ApiKeyRecord[]> {
    return (await this.rows(ApiKey, {}, { createdAt: 'asc', id: 'asc' })).map(withParsedJson);
  }
  async getByHash(tokenHash: string): Promise<ApiKeyRecord | null> {
    const key = await this.row(ApiKey, { tokenHash });
    return key && withParsedJson(key);
  }
  async get(id: string): Promise<ApiKeyRecord | null> {
    const key = await this.row(ApiKey, { id });
    return key && withParsedJson(key);
  }
  insert(key: ApiKeyRecord): Promise<ApiKeyRecord> {
    return this.insertRow(ApiKey, key, 'API key');
  }
  update(id: string, patch: Patch<ApiKeyRecord>): Promise<void> {
    return this.updateRow(ApiKey, id, patch, 'API key');
  }
  delete(id: string): Promise<void> {
    return this.deleteRows(ApiKey, { id });
  }
}

/** SQLite hands JSON columns back as text through the query builder; PostgreSQL as values. */
function withParsedJson(key: ApiKeyRecord): ApiKeyRecord {
  return typeof key.projectIds === 'string' ? { ...key, projectIds: JSON.parse(key.projectIds) as string[] | null } : key;
}
