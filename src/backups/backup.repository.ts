import type { LogStream } from '../domain/types.js';
import { Backup, BackupLog, BackupSettings, type BackupLogRow, type BackupSettingsRow } from '../persistence/entities.js';
import { Repository, type Patch } from '../persistence/repository.js';
import type { BackupLogRecord, BackupRecord, BackupSettingsRecord, BackupStatus } from './backup.records.js';

/** Backups (the table is their job queue), their log lines and each service's backup settings. */
export class BackupRepository extends Repository {
  insert(backup: BackupRecord): Promise<BackupRecord> {
    return this.insertRow(Backup, backup, 'backup');
  }
  get(id: string): Promise<BackupRecord | null> {
    return this.row(Backup, { id });
  }
  /** Newest first. */
  list(serviceId: string, limit?: number): Promise<BackupRecord[]> {
    return this.rows(Backup, { serviceId }, { createdAt: 'desc', id: 'desc' }, limit);
  }
  listByStatus(statuses: BackupStatus[]): Promise<BackupRecord[]> {
    return this.rows(Backup, { status: { $in: statuses } }, { createdAt: 'asc', id: 'asc' });
  }
  update(id: string, patch: Patch<BackupRecord>): Promise<void> {
    return this.updateRow(Backup, id, patch, 'backup');
  }
  /** The compare-and-set of the job queue: moves the row only if it is still in `from`. */
  async transition(id: string, from: BackupStatus[], patch: Patch<BackupRecord>): Promise<boolean> {
    this.written(Backup);
    return (await this.fork().nativeUpdate(Backup, { id, status: { $in: from } }, patch as never)) > 0;
  }
  async listAbortRequested(ids: string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    return (await this.rows(Backup, { id: { $in: ids }, abortRequested: true })).map((b) => b.id);
  }
  async delete(id: string): Promise<void> {
    await this.deleteRows(BackupLog, { backupId: id });
    await this.deleteRows(Backup, { id });
  }
  async deleteOfServices(serviceIds: string[]): Promise<void> {
    if (serviceIds.length === 0) return;
    const backups = await this.rows(Backup, { serviceId: { $in: serviceIds } });
    if (backups.length > 0) await this.deleteRows(BackupLog, { backupId: { $in: backups.map((b) => b.id) } });
    await this.deleteRows(Backup, { serviceId: { $in: serviceIds } });
    await this.deleteRows(BackupSettings, { serviceId: { $in: serviceIds } });
  }

  /** Backups whose object is in one of these storage instances. */
  async listStoredIn(storageIds: string[]): Promise<BackupRecord[]> {
    if (storageIds.length === 0) return [];
    return this.rows(Backup, { storageId: { $in: storageIds } });
  }
  /** The databases whose backups go to one of these storage instances. */
  async listSettingsUsing(storageIds: string[]): Promise<BackupSettingsRecord[]> {
    if (storageIds.length === 0) return [];
    return this.rows(BackupSettings, { storageId: { $in: storageIds } });
  }

  getSettings(serviceId: string): Promise<BackupSettingsRecord | null> {
    return this.row(BackupSettings, { serviceId });
  }
  async putSettings(settings: BackupSettingsRecord): Promise<void> {
    this.written(BackupSettings);
    await this.fork().upsert(BackupSettings, settings as BackupSettingsRow);
  }

  // Log lines: appending them does not change the store's version.
  async appendLogs(backupId: string, lines: Array<{ line: string; stream: LogStream; createdAt: Date }>): Promise<BackupLogRecord[]> {
    const records: BackupLogRecord[] = [];
    await this.fork().transactional(async (tx) => {
      for (const line of lines) {
        const id = await tx.insert(BackupLog, { backupId, ...line } as BackupLogRow);
        records.push({ id: Number(id), backupId, ...line });
      }
    });
    return records;
  }
  listLogs(backupId: string, afterId = 0, limit?: number): Promise<BackupLogRecord[]> {
    return this.rows(BackupLog, { backupId, id: { $gt: afterId } }, { id: 'asc' }, limit);
  }
}
