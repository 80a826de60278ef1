import type { PasswordResetRecord, PersonalTokenRecord, SessionRecord, UserRecord } from '../domain/accounts.js';
import { PasswordReset, PersonalToken, Setting, User, UserSession } from '../persistence/entities.js';
import { Repository, type Patch } from '../persistence/repository.js';

/** Users, their sessions, personal tokens and password-reset tokens; every token by its SHA-256 only. */
export class AccountRepository extends Repository {
  countUsers(): Promise<number> {
    return this.fork().count(User, {});
  }
  async listUsers(): Promise<UserRecord[]> {
    return (await this.rows(User, {}, { createdAt: 'asc', id: 'asc' })).map(parsedUser);
  }
  async getUser(id: string): Promise<UserRecord | null> {
    const user = await this.row(User, { id });
    return user && parsedUser(user);
  }
  async getUserByEmail(email: string): Promise<UserRecord | null> {
    const user = await this.row(User, { email });
    return user && parsedUser(user);
  }
  /**
   * Marks the installation as owned, once: a plain insert of one settings key, so of two first
   * signups racing (PostgreSQL runs their transactions side by side) exactly one wins; the other gets 409.
   */
  async claimOwnership(userId: string, now: Date): Promise<void> {
    await this.insertRow(
      Setting,
      { key: 'owner', value: JSON.stringify(userId), updatedAt: now },
      'owner (the installation already has one)',
    );
  }
  insertUser(user: UserRecord): Promise<UserRecord> {
    return this.insertRow(User, user, 'account (email address)');
  }
  updateUser(id: string, patch: Patch<UserRecord>): Promise<void> {
    return this.updateRow(User, id, patch, 'account (email address)');
  }
  async deleteUser(id: string): Promise<void> {
    await this.deleteRows(UserSession, { userId: id });
    await this.deleteRows(PersonalToken, { userId: id });
    await this.deleteRows(PasswordReset, { userId: id });
    await this.deleteRows(User, { id });
  }

  insertSession(session: SessionRecord): Promise<SessionRecord> {
    return this.insertRow(UserSession, session, 'session');
  }
  getSessionByHash(tokenHash: string): Promise<SessionRecord | null> {
    return this.row(UserSession, { tokenHash });
  }
  updateSession(id: string, patch: Patch<SessionRecord>): Promise<void> {
    return this.updateRow(UserSession, id, patch, 'session');
  }
  deleteSession(id: string): Promise<void> {
    return this.deleteRows(UserSession, { id });
  }
  deleteSessionsOf(userId: string): Promise<void> {
    return this.deleteRows(UserSession, { userId });
  }
  deleteExpiredSessions(now: Date): Promise<void> {
    return this.deleteRows(UserSession, { expiresAt: { $lt: now } });
  }
  /** Reset tokens past their hour, used or not: nothing reads them again. */
  deleteExpiredResets(now: Date): Promise<void> {
    return this.deleteRows(PasswordReset, { expiresAt: { $lt: now } });
  }

  insertToken(token: PersonalTokenRecord): Promise<PersonalTokenRecord> {
    return this.insertRow(PersonalToken, token, 'personal token');
  }
  async getTokenByHash(tokenHash: string): Promise<PersonalTokenRecord | null> {
    const token = await this.row(PersonalToken, { tokenHash });
    return token && parsedToken(token);
  }
  async getToken(id: string): Promise<PersonalTokenRecord | null> {
    const token = await this.row(PersonalToken, { id });
    return token && parsedToken(token);
  }
  async listTokens(userId: string): Promise<PersonalTokenRecord[]> {
    return (await this.rows(PersonalToken, { userId }, { createdAt: 'asc', id: 'asc' })).map(parsedToken);
  }
  updateToken(id: string, patch: Patch<PersonalTokenRecord>): Promise<void> {
    return this.updateRow(PersonalToken, id, patch, 'personal token');
  }
  deleteToken(id: string): Promise<void> {
    return this.deleteRows(PersonalToken, { id });
  }

  insertReset(reset: PasswordResetRecord): Promise<PasswordResetRecord> {
    return this.insertRow(PasswordReset, reset, 'password reset');
  }
  getResetByHash(tokenHash: string): Promise<PasswordResetRecord | null> {
    return this.row(PasswordReset, { tokenHash });
  }
  updateReset(id: string, patch: Patch<PasswordResetRecord>): Promise<void> {
    return this.updateRow(PasswordReset, id, patch, 'password reset');
  }
  /** Marks a reset used only if it still was not: two concurrent resets with one token, one wins. */
  async consumeReset(id: string, now: Date): Promise<boolean> {
    this.written(PasswordReset);
    const changed = await this.fork().nativeUpdate(PasswordReset, { id, usedAt: null } as never, { usedAt: now } as never);
    return changed === 1;
  }
}

/** SQLite hands JSON columns back as text through the query builder; PostgreSQL as values. */
function json<T>(value: T | string): T {
  return typeof value === 'string' ? (JSON.parse(value) as T) : value;
}
function parsedUser(user: UserRecord): UserRecord {
  return { ...user, recoveryCodeHashes: json(user.recoveryCodeHashes), totpEnabled: Boolean(user.totpEnabled) };
}
function parsedToken(token: PersonalTokenRecord): PersonalTokenRecord {
  return { ...token, scopes: json(token.scopes) };
}
