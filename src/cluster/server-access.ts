import { assertAllProjects, assertScope, assertWrite, type Actor } from '../domain/access.js';
import { ForbiddenError } from '../domain/errors.js';

/**
 * Servers are the install's, not a project's: reading them needs an all-project key (read or write),
 * an owner or admin user, or a token with the admin scope; changing them needs write access too.
 * Project-scoped keys and members are refused (403).
 */
export function assertInstallAdmin(actor: Actor, what: string): void {
  assertAllProjects(actor, what);
  if (actor.role === 'member') throw new ForbiddenError(`Members cannot ${what}; ask the owner or an admin`);
  assertScope(actor, 'admin');
}

export function assertInstallWriter(actor: Actor, what: string): void {
  assertWrite(actor);
  assertInstallAdmin(actor, what);
}
