import type { LogStream } from '../domain/types.js';
import { Backup, BackupLog, BackupSettings, type BackupLogRow, type BackupRow, type BackupSettingsRow } from '../persistence/entities.js';
import { Repository, type Patch, type Where } from '../persistence/repository.js';
import type { BackupKind, BackupLogRecord, BackupRecord, BackupSettingsRecord, BackupStatus, DrillStatus } from './backup.records.js';

/** A backup as stored: the drill in columns of its own, the counts as JSON. */
export function backupOfRow(row: BackupRow): BackupRecord {
  const {
    counts,
    drillStatus,
    drillReason,
    drillRequestedAt,
    drillStartedAt,
    drillFinishedAt,
    drillCounts,
    drillChecksumOk,
    engine,
    ...rest
  } = row;
  return {
    ...rest,
    engine: engine || null,
    counts: counts ? JSON.parse(counts) : null,
    drill: drillStatus
      ? {
          status: drillStatus,
          reason: drillReason,
          requestedAt: drillRequestedAt ?? rest.createdAt,
          startedAt: drillStartedAt,
          finishedAt: drillFinishedAt,
          counts: drillCounts ? JSON.parse(drillCounts) : null,
          checksumOk: drillChecksumOk,
        }
      : null,
  };
}

/** The columns of a change to a backup (a drill replaces every drill column). */
export function backupRowPatch(patch: Patch<BackupRecord>): Patch<BackupRow> {
  const { counts, drill, engine, ...rest } = patch;
  const row: Patch<BackupRow> = { ...rest };
  if (engine !== undefined) row.engine = engine ?? '';
  if (counts !== undefined) row.counts = counts ? JSON.stringify(counts) : null;
  if (drill !== undefined) {
    row.drillStatus = drill?.status ?? null;
    row.drillReason = drill?.reason ?? null;
    row.drillRequestedAt = drill?.requestedAt ?? null;
    row.drillStartedAt = drill?.startedAt ?? null;
    row.drillFinishedAt = drill?.finishedAt ?? null;
    row.drillCounts = drill?.counts ? JSON.stringify(drill.counts) : null;
    row.drillChecksumOk = drill?.checksumOk ?? null;
  }
  return row;
}

const backupRow = (backup: BackupRecord): BackupRow => backupRowPatch(backup) as BackupRow;

/** Backups (the table is their job queue), their log lines and each service's backup settings. */
export class BackupRepository extends Repository {
  async insert(backup: BackupRecord): Promise<BackupRecord> {
    await this.insertRow(Backup, backupRow(backup), 'backup');
    return backup;
  }
  async get(id: string): Promise<BackupRecord | null> {
    const row = await this.row(Backup, { id });
    return row ? backupOfRow(row) : null;
  }
  /** Newest first: every kind (a service's whole history). */
  list(serviceId: string, limit?: number): Promise<BackupRecord[]> {
    return this.records({ serviceId }, limit);
  }
  /** Newest first: a database's dumps, a volume's tars or a database's base backups. */
  listOf(serviceId: string, kind: BackupKind, volume: string | null = null, limit?: number): Promise<BackupRecord[]> {
    return this.records({ serviceId, kind, ...(kind === 'volume' ? { volume } : {}) }, limit);
  }
  listByStatus(statuses: BackupStatus[]): Promise<BackupRecord[]> {
    return this.records({ status: { $in: statuses } }, undefined, { createdAt: 'asc', id: 'asc' });
  }
  update(id: string, patch: Patch<BackupRecord>): Promise<void> {
    return this.updateRow(Backup, id, backupRowPatch(patch), 'backup');
  }
  /** The compare-and-set of the job queue: moves the row only if it is still in `from`. */
  async transition(id: string, from: BackupStatus[], patch: Patch<BackupRecord>): Promise<boolean> {
    this.written(Backup);
    return (await this.fork().nativeUpdate(Backup, { id, status: { $in: from } }, backupRowPatch(patch) as never)) > 0;
  }
  async listAbortRequested(ids: string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    return (await this.rows(Backup, { id: { $in: ids }, abortRequested: true })).map((b) => b.id);
  }

  // Restore drills: the drill columns are their queue.
  /** Backups whose drill is in one of these states, oldest request first. */
  listByDrill(statuses: DrillStatus[]): Promise<BackupRecord[]> {
    return this.records({ drillStatus: { $in: statuses } }, undefined, { drillRequestedAt: 'asc', id: 'asc' });
  }
  /** Moves a backup's drill only if it is still in `from` (the drills' compare-and-set). */
  async transitionDrill(id: string, from: DrillStatus[], drill: NonNullable<BackupRecord['drill']>): Promise<boolean> {
    this.written(Backup);
    const patch = backupRowPatch({ drill });
    return (await this.fork().nativeUpdate(Backup, { id, drillStatus: { $in: from } }, patch as never)) > 0;
  }
  /** Queues a drill unless one is queued or running (a backup never drilled, or whose last drill ended). */
  async queueDrill(id: string, drill: NonNullable<BackupRecord['drill']>): Promise<boolean> {
    this.written(Backup);
    const patch = backupRowPatch({ drill });
    const where = { id, $or: [{ drillStatus: null }, { drillStatus: { $in: ['passed', 'failed', 'skipped'] } }] };
    return (await this.fork().nativeUpdate(Backup, where as never, patch as never)) > 0;
  }
  /** A service's database dumps and volume backups together (what drills check), as drillSummary counts them. */
  async drillSummaryOfService(serviceId: string): Promise<{ neverDrilled: number; failed: number }> {
    const of = { serviceId, kind: { $in: ['dump', 'volume'] }, status: 'succeeded' };
    const [neverDrilled, failed] = await Promise.all([
      this.fork().count(Backup, { ...of, drillStatus: null } as never),
      this.fork().count(Backup, { ...of, drillStatus: 'failed' } as never),
    ]);
    return { neverDrilled, failed };
  }
  /** Per service: backups (of `kind`) that succeeded and were never drilled, and those whose last drill failed. */
  async drillSummary(serviceId: string, kind: BackupKind, volume: string | null = null): Promise<{ neverDrilled: number; failed: number }> {
    const of: Where<BackupRow> = { serviceId, kind, status: 'succeeded', ...(kind === 'volume' ? { volume } : {}) };
    const [neverDrilled, failed] = await Promise.all([
      this.fork().count(Backup, { ...of, drillStatus: null } as never),
      this.fork().count(Backup, { ...of, drillStatus: 'failed' } as never),
    ]);
    return { neverDrilled, failed };
  }

  private async records(
    where: Where<BackupRow>,
    limit?: number,
    order: Record<string, 'asc' | 'desc'> = { createdAt: 'desc', id: 'desc' },
  ) {
    return (await this.rows(Backup, where, order, limit)).map(backupOfRow);
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
    return this.records({ storageId: { $in: storageIds } });
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
