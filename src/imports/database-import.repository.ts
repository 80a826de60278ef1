import type { DatabaseImportLogRecord, DatabaseImportRecord } from '../domain/database-imports.js';
import type { LogStream } from '../domain/types.js';
import { DatabaseImport, DatabaseImportLog, type DatabaseImportLogRow } from '../persistence/entities.js';
import { Repository, type Patch } from '../persistence/repository.js';

/** Data imports into database services, and their log lines. */
export class DatabaseImportRepository extends Repository {
  insert(record: DatabaseImportRecord): Promise<DatabaseImportRecord> {
    return this.insertRow(DatabaseImport, record, 'import');
  }
  get(id: string): Promise<DatabaseImportRecord | null> {
    return this.row(DatabaseImport, { id });
  }
  /** Newest first. */
  list(serviceId: string, limit?: number): Promise<DatabaseImportRecord[]> {
    return this.rows(DatabaseImport, { serviceId }, { createdAt: 'desc', id: 'desc' }, limit);
  }
  listByStatus(status: DatabaseImportRecord['status']): Promise<DatabaseImportRecord[]> {
    return this.rows(DatabaseImport, { status }, { createdAt: 'asc', id: 'asc' });
  }
  /** Moves an import only while it is still running: returns whether this call ended it. */
  async finish(id: string, patch: Patch<DatabaseImportRecord>): Promise<boolean> {
    this.written(DatabaseImport);
    return (await this.fork().nativeUpdate(DatabaseImport, { id, status: 'running' }, patch as never)) > 0;
  }
  update(id: string, patch: Patch<DatabaseImportRecord>): Promise<void> {
    return this.updateRow(DatabaseImport, id, patch, 'import');
  }
  async deleteOfServices(serviceIds: string[]): Promise<void> {
    if (serviceIds.length === 0) return;
    const imports = await this.rows(DatabaseImport, { serviceId: { $in: serviceIds } });
    if (imports.length > 0) await this.deleteRows(DatabaseImportLog, { importId: { $in: imports.map((i) => i.id) } });
    await this.deleteRows(DatabaseImport, { serviceId: { $in: serviceIds } });
  }

  // Log lines: appending them does not change the store's version.
  async appendLogs(importId: string, lines: Array<{ line: string; stream: LogStream; createdAt: Date }>): Promise<void> {
    await this.fork().transactional(async (tx) => {
      for (const line of lines) await tx.insert(DatabaseImportLog, { importId, ...line } as DatabaseImportLogRow);
    });
  }
  listLogs(importId: string, limit: number): Promise<DatabaseImportLogRecord[]> {
    return this.rows(DatabaseImportLog, { importId }, { id: 'asc' }, limit);
  }
}
