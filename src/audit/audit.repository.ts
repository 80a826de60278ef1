import { AuditEntry } from '../persistence/event-entities.js';
import { Repository } from '../persistence/repository.js';
import type { AuditRecord, NewAuditRecord } from './audit.records.js';

export interface AuditFilter {
  projectId?: string;
  actorId?: string;
  operation?: string;
  from?: Date;
  to?: Date;
  /** Entries older than this id (the cursor of the previous page). */
  before?: number;
}

/** The audit log: append and read, and the retention's delete. There is no update. */
export class AuditRepository extends Repository {
  async append(entry: NewAuditRecord): Promise<void> {
    await this.fork().insert(AuditEntry, entry as AuditRecord);
  }
  /** Newest first. */
  async list(filter: AuditFilter, limit: number): Promise<AuditRecord[]> {
    const where: Record<string, unknown> = {};
    if (filter.projectId) where.projectId = filter.projectId;
    if (filter.actorId) where.actorId = filter.actorId;
    if (filter.operation) where.operation = filter.operation;
    if (filter.from || filter.to) where.at = { ...(filter.from ? { $gte: filter.from } : {}), ...(filter.to ? { $lt: filter.to } : {}) };
    if (filter.before !== undefined) where.id = { $lt: filter.before };
    const rows = await this.rows(AuditEntry, where, { id: 'desc' }, limit);
    // SQLite hands JSON columns back as text through the query builder.
    return rows.map((row) => (typeof row.targetIds === 'string' ? { ...row, targetIds: JSON.parse(row.targetIds) as string[] } : row));
  }
  async deleteBefore(cutoff: Date): Promise<number> {
    return this.fork().nativeDelete(AuditEntry, { at: { $lt: cutoff } });
  }
}
