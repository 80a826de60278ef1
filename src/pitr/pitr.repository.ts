import { PitrRestore, PitrSettings, WalSegment } from '../persistence/data-safety-entities.js';
import { BackupLog, type BackupLogRow } from '../persistence/entities.js';
import type { LogStream } from '../domain/types.js';
import { Repository, type Patch } from '../persistence/repository.js';
import type { PitrRestoreRecord, PitrRestoreStatus, PitrSettingsRecord, WalSegmentRecord } from './pitr.records.js';

/** Point-in-time recovery's rows: a database's settings, its WAL archive and its restores (the restores' table is their queue). */
export class PitrRepository extends Repository {
  getSettings(serviceId: string): Promise<PitrSettingsRecord | null> {
    return this.row(PitrSettings, { serviceId });
  }

  /** Inserts the settings, or replaces those of the service. */
  async putSettings(settings: PitrSettingsRecord): Promise<void> {
    this.written(PitrSettings);
    const em = this.fork();
    const updated = await em.nativeUpdate(PitrSettings, { serviceId: settings.serviceId }, settings);
    if (updated === 0) await em.insert(PitrSettings, settings);
  }

  /** The databases whose WAL is archived: the shipping pass's list. */
  enabledSettings(): Promise<PitrSettingsRecord[]> {
    return this.rows(PitrSettings, { enabled: true }, { serviceId: 'asc' });
  }

  /** The WAL archive of a service, oldest name first. */
  segments(serviceId: string): Promise<WalSegmentRecord[]> {
    return this.rows(WalSegment, { serviceId }, { name: 'asc' });
  }

  /** Segments gone from the archive (past the retention). */
  async deleteSegments(ids: string[]): Promise<void> {
    if (ids.length > 0) await this.deleteRows(WalSegment, { id: { $in: ids } });
  }

  /** A stored segment; one shipped twice is one row (409 from the unique name). */
  insertSegment(segment: WalSegmentRecord): Promise<WalSegmentRecord> {
    return this.insertRow(WalSegment, segment, 'WAL segment');
  }

  insertRestore(restore: PitrRestoreRecord): Promise<PitrRestoreRecord> {
    return this.insertRow(PitrRestore, restore, 'point-in-time restore');
  }

  getRestore(id: string): Promise<PitrRestoreRecord | null> {
    return this.row(PitrRestore, { id });
  }

  /** A service's restores, newest first. */
  restoresOf(serviceId: string, limit = 20): Promise<PitrRestoreRecord[]> {
    return this.rows(PitrRestore, { serviceId }, { createdAt: 'desc', id: 'desc' }, limit);
  }

  restoresByStatus(statuses: PitrRestoreStatus[]): Promise<PitrRestoreRecord[]> {
    return this.rows(PitrRestore, { status: { $in: statuses } }, { createdAt: 'asc', id: 'asc' });
  }

  /** Moves a restore only if it is still in one of `from` (the queue's compare-and-set); false when it was not. */
  async transitionRestore(id: string, from: PitrRestoreStatus[], patch: Patch<PitrRestoreRecord>): Promise<boolean> {
    this.written(PitrRestore);
    return (await this.fork().nativeUpdate(PitrRestore, { id, status: { $in: from } }, patch)) > 0;
  }

  /** A restore's log lines, in the backups' log table under the restore's id (ids never collide: both are newId). */
  async appendLogs(restoreId: string, lines: Array<{ line: string; stream: LogStream; createdAt: Date }>): Promise<void> {
    // Like the backups' lines: appending them does not change the store's version.
    if (lines.length === 0) return;
    await this.fork().transactional(async (tx) => {
      for (const line of lines) await tx.insert(BackupLog, { backupId: restoreId, ...line } as BackupLogRow);
    });
  }

  /** A restore's log, oldest line first. */
  async logs(restoreId: string, limit: number): Promise<Array<{ id: number; line: string; stream: LogStream; createdAt: Date }>> {
    const rows = await this.rows(BackupLog, { backupId: restoreId }, { id: 'asc' }, limit);
    return rows.map(({ id, line, stream, createdAt }) => ({ id, line, stream, createdAt }));
  }

  async deleteOfServices(serviceIds: string[]): Promise<void> {
    if (serviceIds.length === 0) return;
    // The logs of the restores from these services go with them.
    const restores = await this.rows(PitrRestore, { serviceId: { $in: serviceIds } }, { id: 'asc' });
    if (restores.length > 0) await this.deleteRows(BackupLog, { backupId: { $in: restores.map((r) => r.id) } });
    await this.deleteRows(PitrSettings, { serviceId: { $in: serviceIds } });
    await this.deleteRows(WalSegment, { serviceId: { $in: serviceIds } });
    await this.deleteRows(PitrRestore, { serviceId: { $in: serviceIds } });
  }
}
