import { ValidationError } from './errors.js';
import type { ServiceRecord } from './types.js';

/**
 * A project's environments: every service lives in one. Each environment has its own network,
 * generated hostnames and `${slug.KEY}` namespace, so two environments of a project never resolve
 * each other's services.
 */
export interface EnvironmentRecord {
  id: string;
  projectId: string;
  /** A DNS label (see ENVIRONMENT_NAME): it is part of the generated hostnames of its services. */
  name: string;
  createdAt: Date;
  updatedAt: Date;
}

/** The environment every project is created with (and the one the upgrade put existing services in). */
export const FIRST_ENVIRONMENT_NAME = 'production';
export const MAX_ENVIRONMENTS_PER_PROJECT = 20;
export const MAX_ENVIRONMENT_NAME_LENGTH = 32;

/** Lower-case letters, digits and single hyphens, a letter first, no hyphen last: a DNS label piece. */
const ENVIRONMENT_NAME = /^[a-z](?:-?[a-z0-9])*$/;

export function assertEnvironmentName(name: string, field = 'name'): string {
  if (name.length === 0 || name.length > MAX_ENVIRONMENT_NAME_LENGTH || !ENVIRONMENT_NAME.test(name)) {
    throw new ValidationError(
      field,
      `An environment name is 1 to ${MAX_ENVIRONMENT_NAME_LENGTH} lower-case letters, digits and single hyphens, starting with a letter and not ending with a hyphen (e.g. "staging", "pr-42")`,
    );
  }
  return name;
}

/**
 * The environment created with its project has the project's id. Its network (`<prefix>-<id>`) and
 * its generated hostnames (`<service>-<project>`) are the project's of before environments existed,
 * so the upgrade moved running services into it without touching a container or a route.
 */
export function isFirstEnvironment(environment: Pick<EnvironmentRecord, 'id' | 'projectId'>): boolean {
  return environment.id === environment.projectId;
}

/**
 * Where services are created when no environment is named (the detailed API, transfers,
 * POST /api/databases): the first environment while it exists, else the oldest.
 */
export function defaultEnvironment<E extends Pick<EnvironmentRecord, 'id' | 'projectId' | 'createdAt'>>(
  environments: readonly E[],
): E | null {
  const first = environments.find(isFirstEnvironment);
  if (first) return first;
  return [...environments].sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || (a.id < b.id ? -1 : 1))[0] ?? null;
}

/**
 * What follows `<service>-` in a generated hostname's label: the project slug in the first
 * environment, `<environment>-<project>` in the others (`web-staging-shop.<root>`).
 */
export function hostnameScope(projectSlug: string, environment: Pick<EnvironmentRecord, 'id' | 'projectId' | 'name'>): string {
  return isFirstEnvironment(environment) ? projectSlug : `${environment.name}-${projectSlug}`;
}

/**
 * `<service_slug>-<scope>.<rootDomain>`: the hostname a web service gets without asking, `scope`
 * being its environment's (`<project_slug>`, or `<environment>-<project_slug>`: see hostnameScope);
 * none when the label would pass DNS's 63 characters (no certificate could be issued for it).
 */
export function generatedHostname(service: Pick<ServiceRecord, 'slug'>, scope: string, rootDomain: string | null): string | null {
  const label = generatedLabel(service, scope);
  if (!rootDomain || label === null) return null;
  return `${label}.${rootDomain}`;
}

/** The first label of a generated hostname, or null when it would pass 63 characters. */
export function generatedLabel(service: Pick<ServiceRecord, 'slug'>, scope: string): string | null {
  const label = `${service.slug}-${scope}`;
  return label.length > 63 ? null : label;
}
