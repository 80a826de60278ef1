import type { DomainRecord } from '../domain/types.js';
import { Domain } from '../persistence/entities.js';
import { Repository, type Patch } from '../persistence/repository.js';

/** Custom domains of services. */
export class DomainRepository extends Repository {
  /** `null`: every domain of the platform. */
  list(serviceIds: string[] | null): Promise<DomainRecord[]> {
    if (serviceIds && serviceIds.length === 0) return Promise.resolve([]);
    return this.rows(Domain, serviceIds ? { serviceId: { $in: serviceIds } } : {}, { createdAt: 'asc', id: 'asc' });
  }
  get(id: string): Promise<DomainRecord | null> {
    return this.row(Domain, { id });
  }
  getByHostname(hostname: string): Promise<DomainRecord | null> {
    return this.row(Domain, { hostname });
  }
  insert(domain: DomainRecord): Promise<DomainRecord> {
    return this.insertRow(Domain, domain, 'domain');
  }
  update(id: string, patch: Patch<DomainRecord>): Promise<void> {
    return this.updateRow(Domain, id, patch, 'domain');
  }
  delete(id: string): Promise<void> {
    return this.deleteRows(Domain, { id });
  }
  async deleteOfServices(serviceIds: string[]): Promise<void> {
    if (serviceIds.length === 0) return;
    await this.deleteRows(Domain, { serviceId: { $in: serviceIds } });
  }
}
