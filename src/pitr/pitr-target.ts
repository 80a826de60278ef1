import type { Actor } from '../domain/access.js';
import { ENGINE_SPECS, databaseEngineOf, isEnginePassword } from '../domain/database-engines.js';
import type { ServiceRecord } from '../domain/types.js';
import type { EnvService } from '../env/env.service.js';
import type { ServiceDeps } from '../platform/deps.js';
import type { ServiceCreation } from '../projects/service-creation.js';

/** `2026-11-28T04:02:55Z` as `20261128-040255`: the restored service's name says the second asked for. */
function stamp(at: Date): string {
  return at.toISOString().slice(0, 19).replace(/[-:]/g, '').replace('T', '-');
}

/**
 * The new database service a point-in-time restore fills: the original's engine, in its environment,
 * named `<original>-pitr-<time>`, with the original's engine env (user, password, database) so the
 * recovered data directory's roles answer to the service's own credentials. Created with the caller's
 * rights (project:write and db:manage); deployed by the restore once its volume holds the data.
 */
export async function createPitrTarget(
  deps: ServiceDeps,
  env: EnvService,
  creation: ServiceCreation,
  actor: Actor,
  original: ServiceRecord,
  at: Date,
): Promise<ServiceRecord> {
  const engine = databaseEngineOf(original);
  if (!engine) throw new Error(`${original.name} is no database`);
  const resolved = (await env.resolvedFor(original)).env;
  const carried = ENGINE_SPECS[engine].initialEnv
    .filter((e) => resolved[e.key] !== undefined)
    .map((e) => ({ key: e.key, value: resolved[e.key]!, secret: isEnginePassword(engine, e.key) }));
  const name = `${original.name.slice(0, 70)}-pitr-${stamp(at)}`;
  const view = await creation.createInEnvironment(actor, original.environmentId, {
    name,
    repoUrl: 'database',
    repoFullName: `database:${engine}`,
    env: carried,
  });
  const created = await deps.store.projects.getService(view.id);
  if (!created) throw new Error(`${name} was removed as it was made`);
  return created;
}
