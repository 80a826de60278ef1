import type { PersonalTokenRecord } from '../domain/accounts.js';
import type { Actor } from '../domain/access.js';
import { NotFoundError, ValidationError } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import type { ServiceDeps } from '../platform/deps.js';
import { signedInUser } from './signed-in-user.js';
import { newSecretToken, PERSONAL_TOKEN_PREFIX, sha256 } from './account-tokens.js';
import type { PersonalTokenInput, PersonalTokenView } from './account-views.js';

const LAST_USED_RESOLUTION_MS = 60_000;
const MAX_TOKENS_PER_USER = 100;

export function presentToken(token: PersonalTokenRecord): PersonalTokenView {
  return {
    id: token.id,
    name: token.name,
    scopes: token.scopes,
    prefix: token.prefix,
    createdAt: token.createdAt.toISOString(),
    lastUsedAt: token.lastUsedAt ? token.lastUsedAt.toISOString() : null,
    expiresAt: token.expiresAt ? token.expiresAt.toISOString() : null,
  };
}

const tokenEvent = (token: PersonalTokenRecord) => ({
  tokenId: token.id,
  userId: token.userId,
  name: token.name,
  scopes: [...token.scopes],
});

/**
 * Personal tokens: a user's credential for scripts and CI, limited to the scopes it was made with
 * and never more than the user may do (the actor carries the user's role too). Stored as SHA-256;
 * revoked at once (no cache).
 */
export class PersonalTokenService {
  constructor(private readonly deps: ServiceDeps) {}

  async create(actor: Actor, input: PersonalTokenInput): Promise<{ token: string; personalToken: PersonalTokenView }> {
    const user = await signedInUser(this.deps.store, actor);
    const now = this.deps.clock.now();
    const expiresAt = input.expiresAt ? new Date(input.expiresAt) : null;
    if (expiresAt && expiresAt.getTime() <= now.getTime()) throw new ValidationError('expiresAt', 'expiresAt must be in the future');
    if ((await this.deps.store.accounts.listTokens(user.id)).length >= MAX_TOKENS_PER_USER)
      throw new ValidationError('name', `An account holds at most ${MAX_TOKENS_PER_USER} tokens; revoke some first`);
    const token = newSecretToken(PERSONAL_TOKEN_PREFIX);
    const record: PersonalTokenRecord = {
      id: newId(),
      userId: user.id,
      name: input.name,
      scopes: [...new Set(input.scopes)],
      prefix: token.slice(0, PERSONAL_TOKEN_PREFIX.length + 6),
      tokenHash: sha256(token),
      expiresAt,
      createdAt: now,
      lastUsedAt: null,
    };
    await this.deps.store.transaction(async (tx) => {
      await tx.accounts.insertToken(record);
      await this.deps.events.publish('token.created', tokenEvent(record), { store: tx });
    });
    return { token, personalToken: presentToken(record) };
  }

  async list(actor: Actor): Promise<PersonalTokenView[]> {
    const user = await signedInUser(this.deps.store, actor);
    return (await this.deps.store.accounts.listTokens(user.id)).map(presentToken);
  }

  async delete(actor: Actor, id: string): Promise<void> {
    const user = await signedInUser(this.deps.store, actor);
    const token = await this.deps.store.accounts.getToken(id);
    // Another user's token does not exist for this one.
    if (!token || token.userId !== user.id) throw new NotFoundError('Personal token', id);
    await this.deps.store.transaction(async (tx) => {
      await tx.accounts.deleteToken(id);
      await this.deps.events.publish('token.deleted', tokenEvent(token), { store: tx });
    });
  }

  /** The actor of a valid token: its user's rights, narrowed to its scopes; null when unknown, revoked or expired. */
  async resolve(token: string): Promise<Actor | null> {
    const record = await this.deps.store.accounts.getTokenByHash(sha256(token));
    const now = this.deps.clock.now();
    if (!record || (record.expiresAt && record.expiresAt.getTime() <= now.getTime())) return null;
    const user = await this.deps.store.accounts.getUser(record.userId);
    if (!user) return null;
    if (!record.lastUsedAt || now.getTime() - record.lastUsedAt.getTime() > LAST_USED_RESOLUTION_MS) {
      await this.deps.store.accounts.updateToken(record.id, { lastUsedAt: now });
    }
    return { keyId: record.id, access: 'write', projectIds: null, userId: user.id, role: user.role, scopes: record.scopes, via: 'token' };
  }
}
