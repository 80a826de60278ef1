import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { SessionRecord, UserRecord } from '../domain/accounts.js';
import { assertAdministrator, assertProcedureScope, type Actor } from '../domain/access.js';
import {
  ConflictError,
  ForbiddenError,
  InvalidCredentialsError,
  NotFoundError,
  RateLimitedError,
  RegistrationClosedError,
  UnauthorizedError,
  ValidationError,
} from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import type { Role } from '../domain/scopes.js';
import type { ServiceDeps } from '../platform/deps.js';
import { signedInUser } from './signed-in-user.js';
import type { ApiKeyService } from './api-key.service.js';
import type { SigninInput, SigninResult, SignupInput, UserView } from './account-views.js';
import { newSecretToken, normalizeEmail, PERSONAL_TOKEN_PREFIX, RESET_PREFIX, SESSION_PREFIX, sha256 } from './account-tokens.js';
import type { Mailer, SmtpSettings } from './mailer.port.js';
import { dummyPasswordHash, hashPassword, verifyPassword } from './password.js';
import type { PersonalTokenService } from './personal-token.service.js';
import { SigninBackoff } from './signin-backoff.js';
import type { TwoFactorService } from './two-factor.service.js';

export interface AccountOptions {
  /** Sliding lifetime of a session. */
  sessionTtlMs: number;
  /** Where reset links point: `<appUrl>/reset-password?token=...`. */
  appUrl: () => string;
  /** The mailer of SMTP_URL (or a test's), used unless the settings name an SMTP server. */
  mailer: Mailer | null;
  /** The SMTP server of the settings, when one is set there. */
  smtpSettings?: () => Promise<SmtpSettings | null>;
  /** Makes a mailer for the settings' server (adapters/mail). */
  mailerFor?: (smtp: SmtpSettings) => Mailer;
  /** Whether the owner opened signup (settings). */
  registrationOpen: () => Promise<boolean>;
  log?: (message: string, extra?: Record<string, unknown>) => void;
}

export const DEFAULT_SESSION_TTL_MS = 7 * 24 * 3600_000;
const RESET_TTL_MS = 3600_000;
const CHALLENGE_TTL_MS = 5 * 60_000;
const CHALLENGE_ATTEMPTS = 5;
/** A session's expiry moves forward at most this often: a write per request would cost more than it tells. */
const SLIDE_RESOLUTION_MS = 60_000;
const MAIL_TIMEOUT_MS = 15_000;

export function presentUser(user: UserRecord): UserView {
  return {
    id: user.id,
    email: user.email,
    name: user.name,
    role: user.role,
    twoFactorEnabled: user.totpEnabled,
    createdAt: user.createdAt.toISOString(),
  };
}

/** The actor of a signed-in user: every project, write access, limited by the role where it matters. */
export function userActor(user: UserRecord, credentialId: string): Actor {
  return { keyId: credentialId, access: 'write', projectIds: null, userId: user.id, role: user.role };
}

/**
 * Accounts: signup (the first becomes the owner), sign-in with sessions, the second-factor
 * challenge, password reset by mail, and the owner's management of users. Also the one place a
 * bearer token is resolved to an actor, whichever credential it is.
 */
export class AccountService {
  private readonly backoff: SigninBackoff;
  private readonly challenges = new Map<string, { userId: string; expiresAt: number; attempts: number }>();

  constructor(
    private readonly deps: ServiceDeps,
    private readonly apiKeys: ApiKeyService,
    private readonly tokens: PersonalTokenService,
    private readonly twoFactor: TwoFactorService,
    private readonly options: AccountOptions,
  ) {
    this.backoff = new SigninBackoff(
      () => this.deps.store.authLimits,
      () => this.deps.clock.now().getTime(),
    );
  }

  private get store() {
    return this.deps.store.accounts;
  }

  /** Resolves a bearer token (API key, session or personal token) to an actor, or throws 401. */
  async authenticate(token: string | undefined): Promise<Actor> {
    if (!token) throw new UnauthorizedError('Missing credentials: send Authorization: Bearer <API key or token>, or sign in');
    if (token.startsWith(SESSION_PREFIX)) {
      const resolved = await this.sessionOf(token);
      if (resolved) return { ...userActor(resolved.user, resolved.session.id), via: 'session', sessionId: resolved.session.id };
    } else if (token.startsWith(PERSONAL_TOKEN_PREFIX)) {
      const actor = await this.tokens.resolve(token);
      if (actor) return actor;
    }
    // A key whose random part happens to start like another credential is still a key.
    return this.apiKeys.authenticate(token);
  }

  async signup(input: SignupInput): Promise<UserView> {
    const email = normalizeEmail(input.email);
    // Hashed before the transaction: the transaction stays short, and the answer takes as long either way.
    const passwordHash = await hashPassword(input.password);
    const now = this.deps.clock.now();
    // Read before the transaction: SQLite has one connection, which the transaction holds.
    const open = await this.options.registrationOpen();
    const user = await this.deps.store.transaction(async (store) => {
      const first = (await store.accounts.countUsers()) === 0;
      if (!first && !open) throw new RegistrationClosedError();
      if (await store.accounts.getUserByEmail(email)) throw new ConflictError('An account with this email address already exists');
      const record: UserRecord = {
        id: newId(),
        email,
        name: input.name,
        passwordHash,
        role: first ? 'owner' : 'member',
        totpSecretEncrypted: null,
        totpEnabled: false,
        totpLastStep: null,
        recoveryCodeHashes: [],
        createdAt: now,
        updatedAt: now,
      };
      if (first) await store.accounts.claimOwnership(record.id, now);
      await store.accounts.insertUser(record);
      return record;
    });
    this.options.log?.('account created', { userId: user.id, role: user.role });
    return presentUser(user);
  }

  /** `address`: the client's, remembered per account; a sign-in from a new one is an event. */
  async signin(input: SigninInput, address?: string): Promise<SigninResult> {
    const email = normalizeEmail(input.email);
    const run = await this.backoff.assertAllowed(email);
    const user = await this.store.getUserByEmail(email);
    // The same argon2id work whether or not the account exists.
    const valid = await verifyPassword(user?.passwordHash ?? (await dummyPasswordHash()), input.password);
    if (!user || !valid) {
      await this.backoff.failed(email);
      throw new InvalidCredentialsError();
    }
    if (run) await this.backoff.clear(email);
    if (user.totpEnabled) {
      this.pruneChallenges();
      const challengeId = randomBytes(24).toString('base64url');
      this.challenges.set(challengeId, { userId: user.id, expiresAt: this.now() + CHALLENGE_TTL_MS, attempts: 0 });
      return { twoFactorRequired: true, challengeId };
    }
    return { user: presentUser(user), session: await this.openSession(user, address) };
  }

  /** The second step of a sign-in with 2FA: a code (or a recovery code) for the challenge. */
  async completeChallenge(challengeId: string, code: string, address?: string): Promise<SigninResult> {
    const challenge = this.challenges.get(challengeId);
    if (!challenge || challenge.expiresAt < this.now()) {
      this.challenges.delete(challengeId);
      throw new InvalidCredentialsError('Unknown or expired sign-in challenge; sign in again');
    }
    const user = await this.store.getUser(challenge.userId);
    if (!user?.totpEnabled) {
      this.challenges.delete(challengeId);
      throw new InvalidCredentialsError('Unknown or expired sign-in challenge; sign in again');
    }
    const key = `2fa:${user.id}`;
    const run = await this.backoff.assertAllowed(key);
    if (!(await this.twoFactor.consumeCode(user, code))) {
      await this.backoff.failed(key);
      // A challenge dies after a few wrong codes: guessing goes back through the password.
      if (++challenge.attempts >= CHALLENGE_ATTEMPTS) this.challenges.delete(challengeId);
      throw new InvalidCredentialsError('Invalid two-factor code');
    }
    if (run) await this.backoff.clear(key);
    this.challenges.delete(challengeId);
    return { user: presentUser(user), session: await this.openSession(user, address) };
  }

  /** 2fa/verify without a challenge: a signed-in user confirms the setup with a first code. */
  async confirmTwoFactor(actor: Actor | null, code: string): Promise<void> {
    if (!actor) throw new UnauthorizedError('Send the challengeId of a sign-in, or sign in to confirm a two-factor setup');
    assertProcedureScope(actor, 'session');
    const key = `2fa:${actor.userId}`;
    const run = await this.backoff.assertAllowed(key);
    try {
      await this.twoFactor.confirm(actor, code);
    } catch (error) {
      if (error instanceof InvalidCredentialsError) await this.backoff.failed(key);
      throw error;
    }
    if (run) await this.backoff.clear(key);
  }

  async logout(actor: Actor): Promise<void> {
    if (actor.sessionId) await this.store.deleteSession(actor.sessionId);
  }

  async me(actor: Actor): Promise<UserView> {
    return presentUser(await signedInUser(this.deps.store, actor));
  }

  // Password reset

  /** Always resolves the same way; when the account exists, a link is mailed (in the background, so timing tells nothing). */
  async forgotPassword(emailInput: string): Promise<void> {
    const email = normalizeEmail(emailInput);
    const user = await this.store.getUserByEmail(email);
    if (!user) return;
    const token = newSecretToken(RESET_PREFIX);
    const now = this.deps.clock.now();
    await this.store.deleteExpiredResets(now);
    await this.store.insertReset({
      id: newId(),
      userId: user.id,
      tokenHash: sha256(token),
      expiresAt: new Date(now.getTime() + RESET_TTL_MS),
      usedAt: null,
      createdAt: now,
    });
    const fromSettings = this.options.mailerFor ? await this.options.smtpSettings?.() : null;
    const mailer = fromSettings && this.options.mailerFor ? this.options.mailerFor(fromSettings) : this.options.mailer;
    if (!mailer) {
      this.options.log?.('password reset requested but no SMTP server is configured (settings smtpUrl or SMTP_URL)', { userId: user.id });
      return;
    }
    const link = `${this.options.appUrl().replace(/\/+$/, '')}/reset-password?token=${encodeURIComponent(token)}`;
    void mailer
      .send(
        {
          to: user.email,
          subject: 'Reset your Slipway password',
          text: `Someone (hopefully you) asked to reset the password of ${user.email}.\n\nSet a new one within the hour:\n${link}\n\nThe link works once. If you did not ask, ignore this mail; your password stays as it is.\n`,
        },
        AbortSignal.timeout(MAIL_TIMEOUT_MS),
      )
      .catch((error: unknown) =>
        this.options.log?.('password reset mail failed', { userId: user.id, error: error instanceof Error ? error.message : 'unknown' }),
      )
      .finally(() => {
        if (fromSettings) mailer.close?.();
      });
  }

  /** Sets the password from a single-use reset token and ends every session of the account. */
  async resetPassword(token: string, password: string): Promise<void> {
    const invalid = () => new ValidationError('token', 'This reset link is invalid, expired or already used; ask for a new one');
    const reset = await this.store.getResetByHash(sha256(token));
    const now = this.deps.clock.now();
    if (!reset || reset.usedAt || reset.expiresAt.getTime() < now.getTime()) throw invalid();
    if (!timingSafeEqual(Buffer.from(reset.tokenHash), Buffer.from(sha256(token)))) throw invalid();
    const passwordHash = await hashPassword(password);
    const user = await this.deps.store.transaction(async (store) => {
      if (!(await store.accounts.consumeReset(reset.id, now))) throw invalid();
      const found = await store.accounts.getUser(reset.userId);
      if (!found) throw invalid();
      await store.accounts.updateUser(found.id, { passwordHash, updatedAt: now });
      await store.accounts.deleteSessionsOf(found.id);
      return found;
    });
    await this.backoff.clear(user.email);
    this.options.log?.('password reset', { userId: user.id });
  }

  /**
   * The operator's way back in for someone who lost both the authenticator and the recovery codes
   * (the CLI on the host, never over HTTP): second factor off, every session ended.
   */
  async resetTwoFactor(email: string): Promise<UserView> {
    const user = await this.store.getUserByEmail(normalizeEmail(email));
    if (!user) throw new NotFoundError('User', email);
    const now = this.deps.clock.now();
    await this.deps.store.transaction(async (store) => {
      await store.accounts.updateUser(user.id, {
        totpEnabled: false,
        totpSecretEncrypted: null,
        totpLastStep: null,
        recoveryCodeHashes: [],
        updatedAt: now,
      });
      await store.accounts.deleteSessionsOf(user.id);
    });
    this.options.log?.('two-factor authentication reset by the operator', { userId: user.id });
    return presentUser({ ...user, totpEnabled: false });
  }

  // Users, managed by the owner

  async listUsers(actor: Actor): Promise<UserView[]> {
    assertAdministrator(actor, 'manage users');
    return (await this.store.listUsers()).map(presentUser);
  }

  async setRole(actor: Actor, userId: string, role: Exclude<Role, 'owner'>): Promise<UserView> {
    const target = await this.manageable(actor, userId, 'change roles');
    await this.store.updateUser(target.id, { role, updatedAt: this.deps.clock.now() });
    return presentUser({ ...target, role });
  }

  async removeUser(actor: Actor, userId: string): Promise<void> {
    const target = await this.manageable(actor, userId, 'remove users');
    await this.deps.store.transaction(async (store) => {
      await store.accounts.deleteUser(target.id);
      await store.signinAddresses.deleteOfUser(target.id);
    });
  }

  /** The owner (or an all-project write key, the installation's operator) manages every user but the owner. */
  private async manageable(actor: Actor, userId: string, what: string): Promise<UserRecord> {
    assertAdministrator(actor, what);
    if (actor.role && actor.role !== 'owner') throw new ForbiddenError(`Only the owner can ${what}`);
    const target = await this.store.getUser(userId);
    if (!target) throw new NotFoundError('User', userId);
    if (target.role === 'owner') throw new ForbiddenError('The owner cannot be demoted or removed');
    return target;
  }

  // Sessions

  private async openSession(user: UserRecord, address?: string): Promise<{ token: string; expiresAt: string }> {
    const token = newSecretToken(SESSION_PREFIX);
    const now = this.deps.clock.now();
    // Sessions left to expire are swept here, at the rate people sign in: no timer needed.
    await this.store.deleteExpiredSessions(now);
    const session: SessionRecord = {
      id: newId(),
      userId: user.id,
      tokenHash: sha256(token),
      expiresAt: new Date(now.getTime() + this.options.sessionTtlMs),
      createdAt: now,
      lastUsedAt: now,
    };
    await this.deps.store.transaction(async (tx) => {
      await tx.accounts.insertSession(session);
      // The first sign-in of an account has nothing to compare with: only a later one from elsewhere is news.
      if (address && (await tx.signinAddresses.remember(user.id, address, now)))
        await this.deps.events.publish('auth.signin_new_address', { userId: user.id, email: user.email, address }, { store: tx });
    });
    return { token, expiresAt: session.expiresAt.toISOString() };
  }

  private async sessionOf(token: string): Promise<{ session: SessionRecord; user: UserRecord } | null> {
    const session = await this.store.getSessionByHash(sha256(token));
    const now = this.deps.clock.now();
    if (!session) return null;
    if (session.expiresAt.getTime() <= now.getTime()) {
      await this.store.deleteSession(session.id);
      return null;
    }
    const user = await this.store.getUser(session.userId);
    if (!user) return null;
    if (now.getTime() - session.lastUsedAt.getTime() > Math.min(SLIDE_RESOLUTION_MS, this.options.sessionTtlMs / 10)) {
      await this.store.updateSession(session.id, { lastUsedAt: now, expiresAt: new Date(now.getTime() + this.options.sessionTtlMs) });
    }
    return { session, user };
  }

  private now(): number {
    return this.deps.clock.now().getTime();
  }

  private pruneChallenges(): void {
    if (this.challenges.size < 1000) return;
    const now = this.now();
    for (const [id, challenge] of this.challenges) if (challenge.expiresAt < now) this.challenges.delete(id);
    if (this.challenges.size >= 10_000) throw new RateLimitedError('Too many sign-ins waiting for a second factor; try again shortly', 60);
  }
}
