import { assertProjectVisible, assertScope, assertWrite, type Actor } from '../domain/access.js';

/**
 * The personal-token scope a terminal needs, besides `admin`: a shell in a container can do what a
 * deployment can. The ticket procedure and the socket both check through assertTerminalAccess.
 */
export const TERMINAL_SCOPE = 'deploy:write';

/**
 * The one permission rule of terminals, over the Actor. Called twice per request, in the order the
 * API checks everything: without `target` for the access level (403), then with the addressed
 * container's project for the scope (404, as for any resource outside the key's projects).
 */
export function assertTerminalAccess(actor: Actor, target?: { projectId: string; resource: string; addressedAs: string }): void {
  if (!target) {
    assertWrite(actor);
    // `admin` holds every scope (hasScope), so this is "admin or deploy:write".
    assertScope(actor, TERMINAL_SCOPE);
    return;
  }
  assertProjectVisible(actor, target.projectId, target.resource, target.addressedAs);
}
