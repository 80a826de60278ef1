import { z } from 'zod';
import { DATABASE_ENGINES } from '../domain/database-engines.js';
import { strictInt } from '../platform/input-schemas.js';
import { iso, isoOrNull, timestamp } from '../platform/view-fields.js';
import {
  BACKUP_FORMATS,
  BACKUP_STORAGES,
  BACKUP_TRIGGERS,
  type BackupLogRecord,
  type BackupRecord,
  type BackupSettingsRecord,
} from './backup.records.js';

/** The spec's Backup, Backup settings and Object-store connection shapes, as the routers answer them. */
const storage = z.enum(BACKUP_STORAGES);

export const backupView = z
  .object({
    id: z.string(),
    serviceId: z.string(),
    engine: z.enum(DATABASE_ENGINES),
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

export const backupListView = z.object({
  backups: z.array(backupView),
  settings: backupSettingsView,
  objectStore: objectStoreConnectionView,
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
  };
}

export function presentBackupSettings(s: BackupSettingsRecord): BackupSettingsView {
  const { createdAt, updatedAt, ...rest } = s;
  return { ...rest, createdAt: iso(createdAt), updatedAt: iso(updatedAt) };
}

export function presentBackupLog(l: BackupLogRecord): BackupLogLineView {
  return { id: l.id, backupId: l.backupId, line: l.line, stream: l.stream, createdAt: iso(l.createdAt) };
}
