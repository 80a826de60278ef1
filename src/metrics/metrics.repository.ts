import { MetricSample, type MetricSampleRow } from '../persistence/entities.js';
import { Repository } from '../persistence/repository.js';

export type MetricRecord = Omit<MetricSampleRow, 'id'>;

/** Per-minute resource samples of services. Writes do not change the store's version (no cached read depends on them). */
export class MetricsRepository extends Repository {
  async insertMany(rows: MetricRecord[]): Promise<void> {
    if (rows.length === 0) return;
    await this.fork().insertMany(MetricSample, rows as MetricSampleRow[]);
  }
  /** Oldest first, `from` inclusive, `to` exclusive. */
  range(serviceId: string, from: Date, to: Date): Promise<MetricSampleRow[]> {
    return this.rows(MetricSample, { serviceId, at: { $gte: from, $lt: to } }, { at: 'asc' });
  }
  async latest(serviceId: string): Promise<MetricSampleRow | null> {
    return (await this.rows(MetricSample, { serviceId }, { at: 'desc' }, 1))[0] ?? null;
  }
  async deleteBefore(cutoff: Date): Promise<void> {
    await this.fork().nativeDelete(MetricSample, { at: { $lt: cutoff } });
  }
  async deleteOfServices(serviceIds: string[]): Promise<void> {
    if (serviceIds.length === 0) return;
    await this.fork().nativeDelete(MetricSample, { serviceId: { $in: serviceIds } });
  }
}
