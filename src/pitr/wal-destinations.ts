import { PassThrough, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { BackupDestinations } from '../backups/backup-destinations.js';
import { missingObjectStore } from '../backups/backup-errors.js';
import { HashingStream } from '../backups/backup-streams.js';
import type { PitrSettingsRecord } from './pitr.records.js';
import type { WalDestination } from './wal-shipper.js';

/** Where a database's WAL files go inside its backups: `<dir>/<serviceId>/wal/<name>` on disk, `pitr/<serviceId>/wal/<name>` in a bucket. */
const walName = (name: string) => `wal/${name}`;
export const walObjectKey = (serviceId: string, name: string) => `pitr/${serviceId}/wal/${name}`;

/**
 * The WAL archive's destination of a database's settings: the platform's disk (the backups directory),
 * or the object store of the install or of a storage instance, through the backups' own adapters. Each
 * file is hashed as it is stored (the checksum a restore checks); an object store call that fails or
 * passes `timeoutMs` rejects, and the file stays in the spool.
 */
export function walDestinationOf(destinations: BackupDestinations, timeoutMs: number) {
  return async (settings: PitrSettingsRecord): Promise<WalDestination> => ({
    async store(serviceId: string, name: string, bytes: Readable, signal: AbortSignal) {
      const hasher = new HashingStream();
      if (settings.storage === 'disk') {
        const localPath = destinations.files.pathOf(serviceId, walName(name));
        const file = await destinations.files.create(localPath);
        await pipeline(bytes, hasher, file, { signal });
        await destinations.files.commit(localPath);
        return { localPath, objectKey: null, storageId: null, sizeBytes: hasher.bytes, checksum: hasher.checksum() };
      }
      const config = await destinations.configOf(settings.storageId);
      if (!config) throw new Error(missingObjectStore(settings.storageId));
      const objectKey = walObjectKey(serviceId, name);
      const body = new PassThrough({ highWaterMark: 1 << 20 });
      const bounded = AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]);
      await Promise.all([pipeline(bytes, hasher, body, { signal: bounded }), destinations.open(config).upload(objectKey, body, bounded)]);
      return { localPath: null, objectKey, storageId: settings.storageId, sizeBytes: hasher.bytes, checksum: hasher.checksum() };
    },
    async remove(stored, signal) {
      if (stored.localPath) await destinations.files.remove(stored.localPath);
      if (!stored.objectKey) return;
      const config = await destinations.configOf(stored.storageId);
      if (!config) throw new Error(missingObjectStore(stored.storageId));
      await destinations.open(config).remove(stored.objectKey, AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]));
    },
  });
}
