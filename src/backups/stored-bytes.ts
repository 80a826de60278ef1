import type { Readable } from 'node:stream';
import { ChecksumMismatchError } from '../domain/errors.js';
import type { BackupFiles } from './backup-files.port.js';
import type { ObjectStore } from './object-store.port.js';

/** Where a stored file is: on the platform's disk, in an object store, or both. */
export interface StoredPlace {
  id: string;
  localPath: string | null;
  objectKey: string | null;
}

/**
 * A stored file's bytes as they are read: the disk copy when it is there, else the object (no scratch
 * copy: the caller hashes as it reads, when it must know). `store` is asked only when the object is needed.
 */
export async function openStored(
  place: StoredPlace,
  files: BackupFiles,
  store: () => Promise<ObjectStore>,
  signal: AbortSignal,
): Promise<{ stream: Readable; from: 'disk' | 'the object store' }> {
  if (place.localPath && (await files.size(place.localPath)) !== null) return { stream: files.read(place.localPath), from: 'disk' };
  if (!place.objectKey) throw new ChecksumMismatchError(`${place.id}: its file is gone`, { id: place.id });
  return { stream: await (await store()).download(place.objectKey, signal), from: 'the object store' };
}
