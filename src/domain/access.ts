import { ForbiddenError, NotFoundError } from './errors.js';
import type { Access } from './types.js';

/** Who is asking: the API key behind a request, as every service method receives it. */
export interface Actor {
  keyId: string;
  access: Access;
  /** null: every project. */
  projectIds: readonly string[] | null;
}

export function canSeeProject(actor: Actor, projectId: string): boolean {
  return actor.projectIds === null || actor.projectIds.includes(projectId);
}

/**
 * What a key may not see does not exist for it: 404 for the resource as the caller addressed it
 * (never naming the project it lives in), exactly as for an id that exists nowhere.
 */
export function assertProjectVisible(actor: Actor, projectId: string, resource: string, addressedAs: string): void {
  if (!canSeeProject(actor, projectId)) throw new NotFoundError(resource, addressedAs);
}

export function assertWrite(actor: Actor): void {
  if (actor.access !== 'write') throw new ForbiddenError('This API key is read-only; this operation needs a write key');
}

export function assertAllProjects(actor: Actor, what: string): void {
  if (actor.projectIds !== null) throw new ForbiddenError(`Only a key with access to all projects can ${what}`);
}
