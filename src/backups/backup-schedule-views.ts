import { z } from 'zod';
import { idParam, line, queryInt, strictInt } from '../platform/input-schemas.js';
import { iso, timestamp } from '../platform/view-fields.js';
import type { BackupScheduleRecord } from './backup-schedule.records.js';
import { VOLUME_NAME } from '../domain/volume-names.js';
import { BACKUP_STORAGES, DEFAULT_DRILL, DRILL_FREQUENCIES, SCHEDULE_PERIODS, VOLUME_MODES } from './backup.records.js';

/** The general API's backup configurations (`/api/backups`), as the routers take and answer them. */

export const MAX_KEEP_COUNT = 1_000;
export const MAX_KEEP_DAYS = 3_650;
export const RECORDS_PAGE_MAX = 500;

export const backupConfigurationView = z
  .object({
    id: z.string(),
    serviceId: z.string().meta({ description: 'The service backed up: its database, or its named volume `volume`' }),
    projectId: z.string(),
    schedule: z.string().meta({ description: 'Cron expression, 5 fields, UTC', example: '0 3 * * *' }),
    storage: z.enum(BACKUP_STORAGES),
    retention: z.object({
      count: z.number().int().nullable().meta({ description: 'Succeeded backups kept, newest first; null: no count limit' }),
      maxAgeDays: z
        .number()
        .int()
        .nullable()
        .meta({ description: 'Succeeded backups older than this go, except the newest one; null: no age limit' }),
    }),
    managed: z.enum(SCHEDULE_PERIODS).nullable().meta({
      description:
        'Set for the daily, weekly and monthly backups of the detailed API: changed through PUT /api/services/{serviceId}/database/backups/settings only',
    }),
    nextRunAt: timestamp.meta({ description: 'The next slot; a slot missed while the platform was down runs once when it is back' }),
    lastRunAt: timestamp.nullable().meta({ description: 'When it last queued a backup (fired or triggered)' }),
    lastError: z.string().nullable().meta({ description: 'Why its last slot queued no backup; null when it did' }),
    drill: z.enum(DRILL_FREQUENCIES).meta({
      description: 'How often its newest succeeded backup is restored into a scratch container and checked (default weekly)',
    }),
    lastDrillAt: timestamp.nullable().meta({ description: 'When it last queued a drill' }),
    volume: z
      .object({ name: z.string(), mode: z.enum(VOLUME_MODES) })
      .nullable()
      .meta({ description: "The service's named volume it backs up, and how the snapshot is taken; null: the database's dump" }),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'BackupConfiguration' });
export type BackupConfigurationView = z.infer<typeof backupConfigurationView>;

export const backupConfigurationInput = z.strictObject({
  serviceId: idParam.meta({ description: 'A database service; with `volume`, a service of any kind' }),
  schedule: line(120).meta({
    description:
      'Cron: minute hour day-of-month month day-of-week, UTC (`*`, lists, ranges, steps, names, @daily...); at most every 5 minutes',
    example: '0 3 * * *',
  }),
  storage: z.enum(BACKUP_STORAGES).default('disk'),
  retention: z
    .strictObject({
      count: strictInt(1, MAX_KEEP_COUNT)
        .nullable()
        .optional()
        .meta({ description: `Succeeded backups kept (1..${MAX_KEEP_COUNT})` }),
      maxAgeDays: strictInt(1, MAX_KEEP_DAYS)
        .nullable()
        .optional()
        .meta({ description: `Remove succeeded backups older than this many days (1..${MAX_KEEP_DAYS}); the newest one stays` }),
    })
    .optional()
    .meta({ description: 'Without a count or an age, 7 backups are kept' }),
  drill: z
    .enum(DRILL_FREQUENCIES)
    .default(DEFAULT_DRILL)
    .meta({ description: 'Restore drills of its newest backup: daily, weekly (default) or off' }),
  volume: z
    .strictObject({
      name: z
        .string()
        .regex(VOLUME_NAME, 'lowercase letters, digits and dashes, 1 to 32, starting and ending with a letter or digit')
        .meta({ description: "One of the service's named volumes" }),
      mode: z
        .enum(VOLUME_MODES)
        .default('stopped')
        .meta({ description: '`stopped` (default): the service is stopped for the snapshot and started again; `live`: it keeps running' }),
    })
    .optional()
    .meta({ description: "Back up this named volume of the service instead of a database's dump (see docs/backups.md)" }),
});
/** `drill` defaults to weekly (the use case's callers may leave it out). */
export type BackupConfigurationInput = Omit<z.output<typeof backupConfigurationInput>, 'drill'> & {
  drill?: z.output<typeof backupConfigurationInput>['drill'];
};

export const backupRecordsQuery = {
  limit: queryInt(1, RECORDS_PAGE_MAX)
    .default(50)
    .meta({ description: `1..${RECORDS_PAGE_MAX}, default 50` }),
};

export function presentBackupConfiguration(s: BackupScheduleRecord, projectId: string): BackupConfigurationView {
  return {
    id: s.id,
    serviceId: s.serviceId,
    projectId,
    schedule: s.schedule,
    storage: s.storage,
    retention: { count: s.keepCount, maxAgeDays: s.keepDays },
    managed: s.managed,
    nextRunAt: iso(s.nextRunAt),
    lastRunAt: s.lastRunAt ? iso(s.lastRunAt) : null,
    lastError: s.lastError,
    drill: s.drill,
    lastDrillAt: s.lastDrillAt ? iso(s.lastDrillAt) : null,
    volume: s.volume ? { name: s.volume, mode: s.volumeMode ?? 'stopped' } : null,
    createdAt: iso(s.createdAt),
    updatedAt: iso(s.updatedAt),
  };
}
