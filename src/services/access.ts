import { ForbiddenError } from '../domain/errors.js';
import type { Access } from '../domain/types.js';

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

export function assertProjectVisible(actor: Actor, projectId: string): void {
  if (!canSeeProject(actor, projectId)) {
    throw new ForbiddenError('This API key is not allowed to access this project', { projectId });
  }
}

export function assertWrite(actor: Actor): void {
  if (actor.access !== 'write') throw new ForbiddenError('This API key is read-only; this operation needs a write key');
}

export function assertAllProjects(actor: Actor, what: string): void {
  if (actor.projectIds !== null) throw new ForbiddenError(`Only a key with access to all projects can ${what}`);
}
