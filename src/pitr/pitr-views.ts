import { z } from 'zod';
import { type BackupView, backupView, presentBackup } from '../backups/backup-views.js';
import type { BackupRecord } from '../backups/backup.records.js';
import { iso, isoOrNull, timestamp } from '../platform/view-fields.js';
import type { ArchiveLag, RecoveryWindow } from './pitr-window.js';
import {
  DEFAULT_BASE_SCHEDULE,
  DEFAULT_RETENTION_DAYS,
  PITR_RESTORE_STATUSES,
  type PitrRestoreRecord,
  type PitrSettingsRecord,
} from './pitr.records.js';

/** The seconds a restore can reach, both ends included; the body of a 422 `outside_window` too. */
export const recoveryWindowView = z
  .object({ earliest: timestamp, latest: timestamp })
  .meta({ description: 'The earliest and latest second a point-in-time restore can reach (both included)' });
export type RecoveryWindowView = z.output<typeof recoveryWindowView>;

export const archiveLagView = z.object({
  pendingSegments: z.number().int().meta({ description: "WAL segments waiting in the database's spool" }),
  pendingBytes: z.number().int(),
  seconds: z.number().int().meta({ description: 'How long the oldest waiting segment has waited (0: none waits)' }),
  lagging: z.boolean().meta({ description: 'Segments waited past the lag limit, or the last pass could not ship them' }),
  lastShippedAt: timestamp.nullable(),
  lastError: z.string().nullable().meta({ description: 'Why the last pass shipped nothing (the destination down...); null when it did' }),
});

export const pitrRestoreView = z
  .object({
    id: z.string(),
    serviceId: z.string(),
    targetServiceId: z.string().nullable().meta({ description: 'The new database service (the original with `replace`)' }),
    at: timestamp,
    replace: z.boolean(),
    status: z.enum(PITR_RESTORE_STATUSES),
    baseBackupId: z.string().nullable(),
    reachedAt: timestamp.nullable().meta({ description: 'The exact second reached: the commit time of the last transaction applied' }),
    error: z.string().nullable(),
    createdAt: timestamp,
    startedAt: timestamp.nullable(),
    finishedAt: timestamp.nullable(),
  })
  .meta({ id: 'PointInTimeRestore' });
export type PitrRestoreView = z.output<typeof pitrRestoreView>;

export const pitrRestoreLogLineView = z
  .object({ id: z.number().int(), restoreId: z.string(), line: z.string(), stream: z.string(), createdAt: timestamp })
  .meta({ id: 'PointInTimeRestoreLogLine' });
export type PitrRestoreLogLineView = z.output<typeof pitrRestoreLogLineView>;

export const pitrView = z
  .object({
    serviceId: z.string(),
    enabled: z.boolean(),
    storage: z.string().meta({ description: '`disk`, `object` (the install’s object store) or a storage instance id' }),
    retentionDays: z.number().int(),
    baseSchedule: z.string().meta({ description: 'Cron (UTC) of the base backups' }),
    nextBaseAt: timestamp.nullable(),
    window: recoveryWindowView.nullable().meta({ description: 'null: nothing can be reached yet (no base backup with its WAL archived)' }),
    lag: archiveLagView,
    lastBaseBackup: backupView.nullable(),
    archivedSegments: z.number().int(),
    archivedBytes: z.number().int(),
    restores: z.array(z.lazy(() => pitrRestoreView)).meta({
      description: 'The newest point-in-time restores from this database (up to 10), newest first: status and the second reached',
    }),
    updatedAt: timestamp.nullable(),
  })
  .meta({ id: 'PointInTimeRecovery' });
export type PitrView = z.output<typeof pitrView>;

export function presentWindow(w: RecoveryWindow): RecoveryWindowView {
  return { earliest: iso(w.earliest), latest: iso(w.latest) };
}

export function presentPitr(
  serviceId: string,
  settings: PitrSettingsRecord | null,
  facts: {
    window: RecoveryWindow | null;
    lag: ArchiveLag;
    lastBase: BackupRecord | null;
    segments: number;
    bytes: number;
    restores: PitrRestoreRecord[];
  },
): PitrView {
  const lastBaseBackup: BackupView | null = facts.lastBase ? presentBackup(facts.lastBase) : null;
  return {
    serviceId,
    enabled: settings?.enabled ?? false,
    storage: settings ? (settings.storageId ?? settings.storage) : 'disk',
    retentionDays: settings?.retentionDays ?? DEFAULT_RETENTION_DAYS,
    baseSchedule: settings?.baseSchedule ?? DEFAULT_BASE_SCHEDULE,
    nextBaseAt: settings?.enabled ? iso(settings.nextBaseAt) : null,
    window: facts.window ? presentWindow(facts.window) : null,
    lag: { ...facts.lag, lastShippedAt: isoOrNull(facts.lag.lastShippedAt) },
    lastBaseBackup,
    archivedSegments: facts.segments,
    archivedBytes: facts.bytes,
    restores: facts.restores.map(presentPitrRestore),
    updatedAt: settings ? iso(settings.updatedAt) : null,
  };
}

export function presentPitrRestore(r: PitrRestoreRecord): PitrRestoreView {
  return {
    id: r.id,
    serviceId: r.serviceId,
    targetServiceId: r.targetServiceId,
    at: iso(r.at),
    replace: r.replace,
    status: r.status,
    baseBackupId: r.baseBackupId,
    reachedAt: isoOrNull(r.reachedAt),
    error: r.error,
    createdAt: iso(r.createdAt),
    startedAt: isoOrNull(r.startedAt),
    finishedAt: isoOrNull(r.finishedAt),
  };
}

export function presentPitrRestoreLog(
  restoreId: string,
  l: { id: number; line: string; stream: string; createdAt: Date },
): PitrRestoreLogLineView {
  return { id: l.id, restoreId, line: l.line, stream: l.stream, createdAt: iso(l.createdAt) };
}
