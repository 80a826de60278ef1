import type { ServiceRecord } from '../domain/types.js';
import type { Store } from '../persistence/store.js';

/**
 * What a preview environment resolves `${slug.KEY}` with besides its own services: the parent's databases
 * it shares (previews.databases `shared`), and for a fork's pull request, no shared project secret
 * (a pull request runs code its author wrote). Null for an environment that is no preview.
 */
export async function previewLinks(store: Store, environmentId: string): Promise<{ fromFork: boolean; shared: ServiceRecord[] } | null> {
  const preview = await store.previews.getByEnvironment(environmentId);
  if (!preview) return null;
  const sharedIds = preview.databases.filter((d) => d.previewServiceId === null).map((d) => d.parentServiceId);
  const shared =
    sharedIds.length === 0
      ? []
      : (await store.projects.listServicesIn([preview.sourceEnvironmentId])).filter((s) => sharedIds.includes(s.id));
  return { fromFork: preview.fromFork, shared };
}
