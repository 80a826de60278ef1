import { newId } from '../domain/ids.js';
import { ServiceVolume } from '../persistence/data-safety-entities.js';
import { Repository } from '../persistence/repository.js';
import type { ServiceVolumeRecord } from './volume.records.js';

/** Services' named volumes (`service_volumes`). */
export class ServiceVolumeRepository extends Repository {
  async listOf(serviceId: string): Promise<ServiceVolumeRecord[]> {
    const rows = await this.rows(ServiceVolume, { serviceId }, { name: 'asc' });
    return rows.map(({ id: _id, ...volume }) => volume);
  }

  async get(serviceId: string, name: string): Promise<ServiceVolumeRecord | null> {
    const row = await this.row(ServiceVolume, { serviceId, name });
    if (!row) return null;
    const { id: _id, ...volume } = row;
    return volume;
  }

  /** The service's volumes become these (in a transaction: the list is replaced as a whole). */
  async replace(serviceId: string, volumes: Array<Pick<ServiceVolumeRecord, 'name' | 'mountPath'>>, now: Date): Promise<void> {
    await this.deleteRows(ServiceVolume, { serviceId });
    for (const v of volumes)
      await this.insertRow(ServiceVolume, { id: newId(), serviceId, name: v.name, mountPath: v.mountPath, createdAt: now }, 'volume');
  }

  async deleteOfServices(serviceIds: string[]): Promise<void> {
    if (serviceIds.length > 0) await this.deleteRows(ServiceVolume, { serviceId: { $in: serviceIds } });
  }
}
