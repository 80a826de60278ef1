import { ConflictError } from '../domain/errors.js';
import { defaultEnvironment, generatedLabel, hostnameScope, type EnvironmentRecord } from '../domain/environments.js';
import type { ServiceRecord } from '../domain/types.js';
import type { Store } from '../persistence/store.js';
import { hostnameScopes } from '../platform/hostname-scopes.js';

/** Where a service goes: its project's default environment, and a slug free there whose hostnames are nobody else's. */

/**
 * The environment's own slugs, and the ones that would give a service here the generated hostname
 * label (`<service>-<scope>`) of a service elsewhere: `a-b` in project `c` and `a` in project `b-c`
 * (or in environment `b` of project `c`) would share one.
 */
export async function slugsTakenIn(store: Store, environment: EnvironmentRecord, scope: string): Promise<Set<string>> {
  const taken = await store.projects.serviceSlugsIn(environment.id);
  const suffix = `-${scope}`;
  for (const [label, owner] of await generatedLabels(store)) {
    if (owner.environmentId !== environment.id && label.endsWith(suffix) && label.length > suffix.length)
      taken.add(label.slice(0, -suffix.length));
  }
  return taken;
}

/** Every service's generated hostname label (`<service>-<scope>`, see generatedLabel), with its service. */
export async function generatedLabels(store: Store): Promise<Map<string, ServiceRecord>> {
  const [scopes, services] = await Promise.all([hostnameScopes(store, null), store.projects.listAllServices()]);
  const labels = new Map<string, ServiceRecord>();
  for (const service of services) {
    const label = generatedLabel(service, scopes.get(service.environmentId) ?? '');
    if (label) labels.set(label, service);
  }
  return labels;
}

/** Where a project's services go when no environment is named (see defaultEnvironment). */
export async function defaultEnvironmentOf(store: Store, projectId: string): Promise<EnvironmentRecord> {
  const environment = defaultEnvironment(await store.environments.list([projectId]));
  // Every project is created with one and keeps at least one (EnvironmentService.delete).
  if (!environment) throw new ConflictError('This project has no environment; create one first');
  return environment;
}

/** One service's hostname scope. */
export async function hostnameScopeOf(store: Store, service: ServiceRecord): Promise<string> {
  const [project, environment] = await Promise.all([store.projects.get(service.projectId), store.environments.get(service.environmentId)]);
  return project && environment ? hostnameScope(project.slug, environment) : '';
}
