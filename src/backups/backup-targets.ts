import type { Actor } from '../domain/access.js';
import { databaseEngineOf, type DatabaseEngine } from '../domain/database-engines.js';
import { NotFoundError, NotSupportedError } from '../domain/errors.js';
import type { ServiceRecord } from '../domain/types.js';
import type { Store } from '../persistence/store.js';
import { serviceFor } from '../platform/lookup.js';
import type { BackupFormat, BackupRecord } from './backup.records.js';
import type { DatabaseDump } from './database-dump.port.js';

/*
 * What can be backed up: a database service, of an engine whose image has a dump tool the platform
 * runs; and a backup of it.
 */

/** The database service addressed (404 for another kind of service) and its engine. */
export async function databaseFor(
  store: Store,
  actor: Actor,
  serviceId: string,
): Promise<{ service: ServiceRecord; engine: DatabaseEngine }> {
  const service = await serviceFor(store, actor, serviceId);
  const engine = databaseEngineOf(service);
  if (!engine) throw new NotFoundError('Database of service', serviceId);
  return { service, engine };
}

/** The dump format of an engine the platform can back up; 422 `not_supported` for the others. */
export function backupFormat(dump: DatabaseDump | null, engine: DatabaseEngine, what: string): BackupFormat {
  const format = dump?.formatOf(engine) ?? null;
  if (!format)
    throw new NotSupportedError(
      `${what} of ${engine} databases are not supported: its image has no dump tool the platform can run (see docs/backups.md)`,
      { engine },
    );
  return format;
}

/** A backup of the service; 404 for an unknown one and for another service's. */
export async function backupFor(store: Store, serviceId: string, backupId: string): Promise<BackupRecord> {
  const backup = await store.backups.get(backupId);
  if (!backup || backup.serviceId !== serviceId) throw new NotFoundError('Backup', backupId);
  return backup;
}
