import { z } from 'zod';
import { DATABASE_ENGINES } from '../domain/database-engines.js';
import { strictInt } from '../platform/input-schemas.js';
import { iso, isoOrNull, timestamp } from '../platform/view-fields.js';
import {
  BACKUP_FORMATS,
  BACKUP_STORAGES,
  BACKUP_TRIGGERS,
  BACKUP_KINDS,
  COUNT_UNITS,
  DRILL_FREQUENCIES,
  DRILL_STATUSES,
  VOLUME_MODES,
  type BackupCounts,
  type BackupLogRecord,
  type BackupRecord,
  type BackupSettingsRecord,
} from './backup.records.js';

/** The spec's Backup, Backup settings and Object-store connection shapes, as the routers answer them. */
const storage = z.enum(BACKUP_STORAGES);

export const backupCountsView = z
  .object({
    unit: z.enum(COUNT_UNITS),
    expected: z.record(z.string(), z.object({ min: z.number().int(), max: z.number().int() })).meta({
      description:
        'Per table (collection, logical database; `files` and `bytes` of a volume): the range a restore must hold, from the counts taken before and after the dump',
    }),
  })
  .meta({ id: 'BackupCounts' });

export const drillView = z
  .object({
    status: z.enum(DRILL_STATUSES).meta({
      description:
        "`queued`, `running`, then `passed`, `failed` (the reason says why, with the engine's message) or `skipped` (the disk would pass 90%)",
    }),
    reason: z.string().nullable(),
    requestedAt: timestamp,
    startedAt: timestamp.nullable(),
    finishedAt: timestamp.nullable(),
    durationMs: z.number().int().nullable().meta({ description: 'From start to end; null until it ended' }),
    checksumOk: z.boolean().nullable().meta({ description: "The stored bytes matched the backup's checksum; null when not read" }),
    counts: z
      .record(z.string(), z.number().int())
      .nullable()
      .meta({ description: 'What the restored copy held, per table (collection, logical database); null when not counted' }),
  })
  .meta({ id: 'RestoreDrill' });
export type DrillView = z.infer<typeof drillView>;

export const backupView = z
  .object({
    id: z.string(),
    serviceId: z.string(),
    engine: z
      .enum(DATABASE_ENGINES)
      .nullable()
      .meta({ description: 'The database engine; null for a volume backup of a service that is not a database' }),
    status: z.enum(['running', 'succeeded', 'failed']).meta({ description: '`running` until it ends; `failed` says why in `error`' }),
    trigger: z.enum(BACKUP_TRIGGERS),
    storage,
    format: z.enum(BACKUP_FORMATS).meta({
      description:
        '`custom`: pg_dump -Fc; `sql`: mysqldump; `rdb`: a Redis RDB snapshot; `native`: ClickHouse tables in its Native format; `archive`: mongodump --archive',
    }),
    localPath: z.string().nullable(),
    objectKey: z.string().nullable(),
    storageId: z
      .string()
      .nullable()
      .meta({ description: 'The storage instance holding objectKey; null: the object store of the platform settings' }),
    sizeBytes: z.number().int(),
    checksum: z.string().meta({ description: '`sha256:<hex>` of the bytes stored; empty until the backup succeeded' }),
    error: z.string().nullable(),
    createdAt: timestamp,
    startedAt: timestamp.nullable(),
    finishedAt: timestamp.nullable(),
    kind: z
      .enum(BACKUP_KINDS)
      .meta({ description: "`dump`: the database's dump; `volume`: a tar of a named volume; `base`: a PostgreSQL base backup" }),
    volume: z.string().nullable().optional().meta({ description: 'A volume backup: the named volume it is a tar of' }),
    volumeMode: z
      .enum(VOLUME_MODES)
      .nullable()
      .optional()
      .meta({ description: 'A volume backup: `stopped` (the service stopped for the snapshot) or `live`' }),
    counts: backupCountsView
      .nullable()
      .meta({ description: 'What a restore must hold, counted as the backup was made; null when not counted' }),
    drill: drillView.nullable().meta({ description: 'The last restore drill of this backup; null: never drilled' }),
  })
  .meta({ id: 'Backup' });
export type BackupView = z.infer<typeof backupView>;

export const backupSettingsView = z
  .object({
    serviceId: z.string(),
    storage,
    storageId: z.string().nullable().meta({
      description: 'The storage instance backups go to with storage object or disk+object; null: the object store of the platform settings',
    }),
    automaticEnabled: z.boolean(),
    dailyEnabled: z.boolean(),
    weeklyEnabled: z.boolean(),
    monthlyEnabled: z.boolean(),
    keepDaily: z.number().int(),
    keepWeekly: z.number().int(),
    keepMonthly: z.number().int(),
    drill: z.enum(DRILL_FREQUENCIES).meta({ description: 'Restore drills of the daily, weekly and monthly backups (default weekly)' }),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'BackupSettings' });
export type BackupSettingsView = z.infer<typeof backupSettingsView>;

export const objectStoreConnectionView = z
  .object({
    connected: z.boolean().meta({ description: 'The bucket answered a HeadBucket just now' }),
    error: z.string().optional().meta({ description: 'Why not, when a store is set but did not answer' }),
  })
  .meta({ id: 'ObjectStoreConnection' });

export const drillSummaryView = z
  .object({
    neverDrilled: z.number().int().meta({ description: 'Succeeded backups never drilled' }),
    failed: z.number().int().meta({ description: 'Backups whose last drill failed' }),
  })
  .meta({ id: 'DrillSummary' });

export const backupListView = z.object({
  backups: z.array(backupView),
  settings: backupSettingsView,
  objectStore: objectStoreConnectionView,
  drills: drillSummaryView,
});
export type BackupListView = z.infer<typeof backupListView>;

export const restoreResultView = z.object({
  ok: z.literal(true),
  restoredAt: timestamp,
  backup: z.object({ id: z.string(), status: z.enum(['running', 'succeeded', 'failed']) }),
});
export type RestoreResultView = z.infer<typeof restoreResultView>;

export const backupLogLineView = z
  .object({ id: z.number().int(), backupId: z.string(), line: z.string(), stream: z.string(), createdAt: timestamp })
  .meta({ id: 'BackupLogLine' });
export type BackupLogLineView = z.infer<typeof backupLogLineView>;

export const backupSettingsInput = z.strictObject({
  storage: storage.optional(),
  storageId: z.string().min(1).max(64).nullable().optional().meta({
    description: 'A storage instance (GET /api/storage) to use as the object store; null: the object store of the platform settings',
  }),
  automaticEnabled: z.boolean().optional(),
  dailyEnabled: z.boolean().optional(),
  weeklyEnabled: z.boolean().optional(),
  monthlyEnabled: z.boolean().optional(),
  keepDaily: strictInt(1, 366).optional().meta({ description: 'Daily backups kept (default 7)' }),
  keepWeekly: strictInt(1, 520).optional().meta({ description: 'Weekly backups kept (default 4)' }),
  keepMonthly: strictInt(1, 240).optional().meta({ description: 'Monthly backups kept (default 12)' }),
  drill: z
    .enum(DRILL_FREQUENCIES)
    .optional()
    .meta({ description: 'Restore drills of the daily, weekly and monthly backups: daily, weekly (default) or off' }),
});
export type BackupSettingsInput = z.output<typeof backupSettingsInput>;

export function presentBackup(b: BackupRecord): BackupView {
  return {
    id: b.id,
    serviceId: b.serviceId,
    engine: b.engine,
    status: b.status === 'queued' ? 'running' : b.status,
    trigger: b.trigger,
    storage: b.storage,
    format: b.format,
    localPath: b.localPath,
    objectKey: b.objectKey,
    storageId: b.storageId,
    sizeBytes: b.sizeBytes,
    checksum: b.checksum,
    error: b.error,
    createdAt: iso(b.createdAt),
    startedAt: isoOrNull(b.startedAt),
    finishedAt: isoOrNull(b.finishedAt),
    kind: b.kind,
    ...(b.kind === 'volume' ? { volume: b.volume, volumeMode: b.volumeMode } : {}),
    counts: b.counts,
    drill: b.drill ? presentDrill(b.drill) : null,
  };
}

export function presentDrill(d: NonNullable<BackupRecord['drill']>): DrillView {
  return {
    status: d.status,
    reason: d.reason,
    requestedAt: iso(d.requestedAt),
    startedAt: isoOrNull(d.startedAt),
    finishedAt: isoOrNull(d.finishedAt),
    durationMs: d.startedAt && d.finishedAt ? d.finishedAt.getTime() - d.startedAt.getTime() : null,
    checksumOk: d.checksumOk,
    counts: d.counts,
  };
}

export type { BackupCounts };

export function presentBackupSettings(s: BackupSettingsRecord): BackupSettingsView {
  const { createdAt, updatedAt, ...rest } = s;
  return { ...rest, createdAt: iso(createdAt), updatedAt: iso(updatedAt) };
}

export function presentBackupLog(l: BackupLogRecord): BackupLogLineView {
  return { id: l.id, backupId: l.backupId, line: l.line, stream: l.stream, createdAt: iso(l.createdAt) };
}
