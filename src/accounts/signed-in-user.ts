import type { UserRecord } from '../domain/accounts.js';
import type { Actor } from '../domain/access.js';
import { ForbiddenError, UnauthorizedError } from '../domain/errors.js';
import type { Store } from '../persistence/store.js';

/** The user behind a session or personal token, for the account's own operations; 403 for an API key, which has none. */
export async function signedInUser(store: Store, actor: Actor): Promise<UserRecord> {
  if (!actor.userId) throw new ForbiddenError('This operation needs a signed-in user; an API key has no account');
  const user = await store.accounts.getUser(actor.userId);
  if (!user) throw new UnauthorizedError('The account of this session no longer exists');
  return user;
}
