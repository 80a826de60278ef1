import { UpstreamError, ValidationError } from '../domain/errors.js';
import type { BackupStorage } from './backup.records.js';

/*
 * How backup failures read: an error's text, the secrets masked out of it, and the object store's
 * refusals as the 502 they are.
 */

export function errorText(error: unknown): string {
  if (error instanceof Error) {
    const name = (error as { name?: string }).name;
    return error.message || name || 'unknown error';
  }
  return String(error);
}

/** Secret values (passwords in env, the object store's key) never reach a message. */
export function maskIn(text: string, values: Record<string, string>): string {
  let out = text;
  for (const value of Object.values(values)) if (value && value.length >= 4) out = out.split(value).join('********');
  return out;
}

/** Why a backup's object store cannot be reached: the storage instance it names is gone, or none is set. */
export function missingObjectStore(storageId: string | null): string {
  return storageId ? `its storage instance ${storageId} no longer exists` : 'no object store is set (PUT /api/settings objectStore)';
}

export function noObjectStore(storage: BackupStorage): ValidationError {
  return new ValidationError(
    'storage',
    `storage ${storage} needs an object store: name a storage instance with storageId, or set objectStore with PUT /api/settings`,
  );
}

/** The object store failed or refused: a 502 with its reason, never a 500. */
export async function upstream<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (error) {
    throw new UpstreamError(`The object store failed: ${errorText(error)}`);
  }
}
