import { ForbiddenError, InsufficientScopeError, NotFoundError } from './errors.js';
import type { ProcedureScope, Role, Scope } from './scopes.js';
import type { Access } from './types.js';

/**
 * Who is asking, as every service method receives it: an API key, a user's session or a user's
 * personal token. The same three fields limit all of them; the optional ones say which user.
 */
export interface Actor {
  /** The credential's id (API key, session or token): what request budgets are counted by. */
  keyId: string;
  access: Access;
  /** null: every project. */
  projectIds: readonly string[] | null;
  /** Set for sessions and personal tokens. */
  userId?: string;
  role?: Role;
  /** A personal token's scopes; absent for keys and sessions, which hold every scope. */
  scopes?: readonly Scope[];
  /** `session` for a signed-in user, `token` for a personal token, absent for an API key. */
  via?: 'session' | 'token';
  /** The session's id, for logout. */
  sessionId?: string;
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

/** `admin` holds every scope; keys and sessions carry no list and hold them all. */
export function hasScope(actor: Actor, scope: Scope): boolean {
  return !actor.scopes || actor.scopes.includes('admin') || actor.scopes.includes(scope);
}

export function assertScope(actor: Actor, scope: Scope): void {
  if (!hasScope(actor, scope)) throw new InsufficientScopeError(scope);
}

/**
 * Settings, API keys and users: an all-project write key, or an owner or admin user (members use
 * projects only), and a token only with the admin scope.
 */
export function assertAdministrator(actor: Actor, what: string): void {
  assertWrite(actor);
  assertAllProjects(actor, what);
  if (actor.role === 'member') throw new ForbiddenError(`Members cannot ${what}; ask the owner or an admin`);
  assertScope(actor, 'admin');
}

/** The check of a procedure's declared scope (routers/trpc.ts applies it to every authenticated procedure). */
export function assertProcedureScope(actor: Actor, scope: ProcedureScope | undefined): void {
  if (scope === 'public') return;
  if (scope === 'session') {
    if (actor.via !== 'session')
      throw new ForbiddenError('This operation needs a signed-in session; personal tokens and API keys cannot call it');
    return;
  }
  if (scope === undefined) {
    if (actor.scopes) throw new ForbiddenError('This operation declares no scope; personal tokens cannot call it');
    return;
  }
  assertScope(actor, scope);
}
