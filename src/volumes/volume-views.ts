import { z } from 'zod';
import { backupView } from '../backups/backup-views.js';
import { BACKUP_STORAGES, VOLUME_MODES } from '../backups/backup.records.js';
import type { ServiceVolumeRecord } from './volume.records.js';

export const volumeView = z
  .object({
    name: z.string(),
    mountPath: z.string(),
    createdAt: z.string().meta({ description: 'ISO 8601' }),
  })
  .meta({ id: 'Volume' });
export type VolumeView = z.infer<typeof volumeView>;

export const volumeBackupListView = z.object({
  volume: volumeView,
  backups: z.array(backupView),
  drills: z.object({
    neverDrilled: z.number().int().meta({ description: 'Succeeded backups of this volume never drilled' }),
    failed: z.number().int().meta({ description: 'Succeeded backups of this volume whose last drill failed' }),
  }),
});
export type VolumeBackupListView = z.infer<typeof volumeBackupListView>;

/** `POST .../volumes/:name/backups`: where it goes and how the snapshot is taken. */
export const volumeBackupInput = z.strictObject({
  storage: z.enum(BACKUP_STORAGES).default('disk').meta({ description: 'disk (default), object or disk+object' }),
  mode: z
    .enum(VOLUME_MODES)
    .default('stopped')
    .meta({ description: '`stopped` (default): the service is stopped for the snapshot and started again; `live`: it keeps running' }),
});
export type VolumeBackupInput = z.output<typeof volumeBackupInput>;

export function presentVolume(v: ServiceVolumeRecord): VolumeView {
  return { name: v.name, mountPath: v.mountPath, createdAt: v.createdAt.toISOString() };
}
