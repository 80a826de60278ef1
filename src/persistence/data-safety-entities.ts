import { defineEntity, p } from '@mikro-orm/core';
import { type Row, type Same, same } from './row-types.js';
import type { PitrRestoreRecord, PitrRestoreStatus, PitrSettingsRecord, PitrStorage, WalSegmentRecord } from '../pitr/pitr.records.js';
import type { ServiceVolumeRecord } from '../volumes/volume.records.js';

/*
 * The tables of point-in-time recovery (src/pitr) and of services' named volumes (src/volumes), declared
 * as entities.ts declares the others and listed in ALL_ENTITIES there.
 */

const id = () => p.string().length(32).primary();
const fk = () => p.string().length(32).index();
const str = (length = 255) => p.string().length(length);
const nullableStr = (length = 255) => p.string().length(length).strictNullable();
const nullableDate = () => p.datetime().strictNullable();

/** One row per database service whose point-in-time recovery was ever set; absent: off. */
export const PitrSettings = defineEntity({
  name: 'PitrSettings',
  tableName: 'pitr_settings',
  properties: {
    serviceId: p.string().length(32).primary(),
    enabled: p.boolean(),
    storage: str(16).$type<PitrStorage>(),
    storageId: nullableStr(32),
    retentionDays: p.integer(),
    baseSchedule: str(120),
    nextBaseAt: p.datetime(),
    pendingSegments: p.integer(),
    pendingBytes: p.bigint('number'),
    oldestPendingAt: nullableDate(),
    lastShippedAt: nullableDate(),
    lastError: p.text().strictNullable(),
    checkedAt: nullableDate(),
    dataVolume: nullableStr(200),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
});

/** The WAL archive: one row per stored segment; (serviceId, name) is unique, so a segment shipped twice is one row. */
export const WalSegment = defineEntity({
  name: 'WalSegment',
  tableName: 'wal_segments',
  uniques: [{ properties: ['serviceId', 'name'] }],
  indexes: [{ properties: ['serviceId', 'completedAt'] }],
  properties: {
    id: id(),
    serviceId: p.string().length(32),
    name: str(64),
    timeline: p.integer(),
    walBytes: p.bigint('number'),
    sizeBytes: p.bigint('number'),
    checksum: str(80),
    completedAt: p.datetime(),
    storedAt: p.datetime(),
    localPath: nullableStr(1024),
    objectKey: nullableStr(1024),
    storageId: nullableStr(32),
  },
});

/** Point-in-time restores; the table is also their job queue. Their log lines are in backup_logs, under the restore's id. */
export const PitrRestore = defineEntity({
  name: 'PitrRestore',
  tableName: 'pitr_restores',
  indexes: [{ properties: ['status', 'createdAt'] }, { properties: ['serviceId', 'createdAt'] }],
  properties: {
    id: id(),
    serviceId: p.string().length(32),
    targetServiceId: nullableStr(32),
    at: p.datetime(),
    replace: p.boolean(),
    status: str(16).$type<PitrRestoreStatus>(),
    previousVolume: nullableStr(200),
    baseBackupId: nullableStr(32),
    reachedAt: nullableDate(),
    error: p.text().strictNullable(),
    abortRequested: p.boolean(),
    createdAt: p.datetime(),
    startedAt: nullableDate(),
    finishedAt: nullableDate(),
  },
});

/** Named volumes of services (`volumes: [{name, mountPath}]`). */
export const ServiceVolume = defineEntity({
  name: 'ServiceVolume',
  tableName: 'service_volumes',
  uniques: [{ properties: ['serviceId', 'name'] }],
  properties: {
    id: id(),
    serviceId: fk(),
    name: str(64),
    mountPath: str(1024),
    createdAt: p.datetime(),
  },
});

export const DATA_SAFETY_ENTITIES = [PitrSettings, WalSegment, PitrRestore, ServiceVolume];

export type PitrSettingsRow = Row<typeof PitrSettings>;
export type WalSegmentRow = Row<typeof WalSegment>;
export type PitrRestoreRow = Row<typeof PitrRestore>;
export type ServiceVolumeRow = Row<typeof ServiceVolume>;

same<Same<PitrSettingsRow, PitrSettingsRecord>>();
same<Same<WalSegmentRow, WalSegmentRecord>>();
same<Same<PitrRestoreRow, PitrRestoreRecord>>();
same<Same<ServiceVolumeRow, ServiceVolumeRecord & { id: string }>>();
