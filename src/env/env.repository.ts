import type { EnvVarRecord } from '../domain/types.js';
import { EnvVar } from '../persistence/entities.js';
import { Repository, type Patch } from '../persistence/repository.js';

/** Environment variables of services. */
export class EnvRepository extends Repository {
  list(serviceIds: string[]): Promise<EnvVarRecord[]> {
    if (serviceIds.length === 0) return Promise.resolve([]);
    return this.rows(EnvVar, { serviceId: { $in: serviceIds } }, { key: 'asc' });
  }
  get(id: string): Promise<EnvVarRecord | null> {
    return this.row(EnvVar, { id });
  }
  getByKey(serviceId: string, key: string): Promise<EnvVarRecord | null> {
    return this.row(EnvVar, { serviceId, key });
  }
  insert(envVar: EnvVarRecord): Promise<EnvVarRecord> {
    return this.insertRow(EnvVar, envVar, 'environment variable');
  }
  update(id: string, patch: Patch<EnvVarRecord>): Promise<void> {
    return this.updateRow(EnvVar, id, patch, 'environment variable');
  }
  delete(id: string): Promise<void> {
    return this.deleteRows(EnvVar, { id });
  }
  async deleteOfServices(serviceIds: string[]): Promise<void> {
    if (serviceIds.length === 0) return;
    await this.deleteRows(EnvVar, { serviceId: { $in: serviceIds } });
  }
}
