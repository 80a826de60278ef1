import { Readable } from 'node:stream';
import type { BackupRecord } from '../../src/backups/backup.records.js';
import type { SpooledFile, WalSpool } from '../../src/pitr/wal-archive.port.js';

/** The name of WAL segment `n` of timeline 1, as PostgreSQL writes it into the spool. */
export const walSegment = (n: number) => `0000000100000000000000${n.toString(16).toUpperCase().padStart(2, '0')}`;

/** A database's WAL spool in memory: segments added by the test, a base backup of fixed bytes, the archiver's status. */
export class FakeSpool implements WalSpool {
  files = new Map<string, SpooledFile>();
  archiving = true;
  bases = 0;
  add(n: number, completedAt: Date) {
    this.files.set(walSegment(n), { name: walSegment(n), bytes: 16 << 20, completedAt });
  }
  async list() {
    return [...this.files.values()].sort((a, b) => a.name.localeCompare(b.name));
  }
  async read(_c: string, name: string) {
    return { stream: Readable.from([Buffer.from(`wal ${name}`)]), done: Promise.resolve() };
  }
  async remove(_c: string, names: string[]) {
    for (const n of names) this.files.delete(n);
  }
  async baseBackup() {
    this.bases++;
    return { stream: Readable.from([Buffer.alloc(4096, 7)]), done: Promise.resolve(), walStart: Promise.resolve(walSegment(3)) };
  }
  async status() {
    return { archiving: this.archiving, failedCount: 0, lastFailure: null };
  }
}

/** A base backup row of a PostgreSQL database (kind `base`, on disk), finished at `finishedAt` and starting at WAL `walStart`. */
export function baseBackupRecord(
  serviceId: string,
  id: string,
  walStart: string,
  finishedAt: Date,
  status: BackupRecord['status'] = 'succeeded',
): BackupRecord {
  const startedAt = new Date(finishedAt.getTime() - 5_000);
  return {
    id,
    serviceId,
    engine: 'postgres',
    status,
    trigger: 'pitr',
    storage: 'disk',
    format: 'basebackup',
    localPath: `/b/${id}.tar`,
    objectKey: null,
    storageId: null,
    sizeBytes: 1000,
    checksum: 'sha256:00',
    error: null,
    abortRequested: false,
    createdAt: startedAt,
    startedAt,
    finishedAt,
    scheduleId: null,
    kind: 'base',
    volume: null,
    volumeMode: null,
    walStart,
    counts: null,
    drill: null,
  };
}
