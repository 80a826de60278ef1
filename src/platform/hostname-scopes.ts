import { hostnameScope } from '../domain/environments.js';
import type { Store } from '../persistence/store.js';

/**
 * Each environment's hostname scope (see hostnameScope), by environment id: two queries whatever
 * the number of services. `null`: every project's.
 */
export async function hostnameScopes(store: Store, projectIds: string[] | null): Promise<Map<string, string>> {
  const [projects, environments] = await Promise.all([store.projects.list(projectIds), store.environments.list(projectIds)]);
  const slugOf = new Map(projects.map((p) => [p.id, p.slug]));
  return new Map(environments.map((e) => [e.id, hostnameScope(slugOf.get(e.projectId) ?? '', e)]));
}
