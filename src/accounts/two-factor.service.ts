import type { UserRecord } from '../domain/accounts.js';
import type { Actor } from '../domain/access.js';
import { ConflictError, InvalidCredentialsError, ValidationError } from '../domain/errors.js';
import type { ServiceDeps } from '../platform/deps.js';
import { signedInUser } from './signed-in-user.js';
import { newRecoveryCode, recoveryCodeHash } from './account-tokens.js';
import type { TwoFactorSetupView } from './account-views.js';
import { matchTotp, newTotpSecret, otpauthUri } from './totp.js';

const RECOVERY_CODES = 10;
const ISSUER = 'Slipway';

/**
 * TOTP second factor: setup hands out the secret (sealed at rest with the install's key) and 10
 * recovery codes (stored as hashes) once; a first code confirms it; from then on sign-in asks for a
 * code, each accepted once.
 */
export class TwoFactorService {
  /** Per user, the tail of the code checks in flight: two requests with one code are checked one after the other. */
  private readonly locks = new Map<string, Promise<unknown>>();

  constructor(private readonly deps: ServiceDeps) {}

  async setup(actor: Actor): Promise<TwoFactorSetupView> {
    const user = await signedInUser(this.deps.store, actor);
    if (user.totpEnabled) throw new ConflictError('Two-factor authentication is already on; disable it first to set it up again');
    const secret = newTotpSecret();
    const recoveryCodes = Array.from({ length: RECOVERY_CODES }, newRecoveryCode);
    await this.deps.store.accounts.updateUser(user.id, {
      totpSecretEncrypted: this.deps.secrets.encrypt(secret),
      totpLastStep: null,
      recoveryCodeHashes: recoveryCodes.map(recoveryCodeHash),
      updatedAt: this.deps.clock.now(),
    });
    const uri = otpauthUri(secret, user.email, ISSUER);
    return {
      secret,
      otpauthUri: uri,
      qrCode: await (await import('qrcode')).default.toDataURL(uri, { errorCorrectionLevel: 'M' }),
      recoveryCodes,
    };
  }

  /** Confirms a setup with its first code: from now on, sign-in asks for one. */
  async confirm(actor: Actor, code: string): Promise<void> {
    const user = await signedInUser(this.deps.store, actor);
    if (user.totpEnabled) throw new ConflictError('Two-factor authentication is already on');
    if (!user.totpSecretEncrypted) throw new ValidationError('code', 'Set up two-factor authentication first (POST /api/auth/2fa/setup)');
    await this.serialized(user.id, async () => {
      const fresh = await this.deps.store.accounts.getUser(user.id);
      const step = fresh && !fresh.totpEnabled ? this.totpStep(fresh, code) : null;
      if (step === null) throw new InvalidCredentialsError('Invalid two-factor code');
      await this.deps.store.accounts.updateUser(user.id, { totpEnabled: true, totpLastStep: step, updatedAt: this.deps.clock.now() });
    });
  }

  async disable(actor: Actor, code: string): Promise<void> {
    const user = await signedInUser(this.deps.store, actor);
    if (!user.totpEnabled) throw new ConflictError('Two-factor authentication is not on');
    if (!(await this.consumeCode(user, code))) throw new InvalidCredentialsError('Invalid two-factor code');
    await this.deps.store.accounts.updateUser(user.id, {
      totpEnabled: false,
      totpSecretEncrypted: null,
      totpLastStep: null,
      recoveryCodeHashes: [],
      updatedAt: this.deps.clock.now(),
    });
  }

  /**
   * A current code not used before, or an unused recovery code: true and spent, else false. Read and
   * spent under the user's lock, so a code sent twice at once is accepted once.
   */
  consumeCode(user: UserRecord, code: string): Promise<boolean> {
    return this.serialized(user.id, async () => {
      const fresh = await this.deps.store.accounts.getUser(user.id);
      if (!fresh) return false;
      const step = this.totpStep(fresh, code);
      if (step !== null) {
        await this.deps.store.accounts.updateUser(fresh.id, { totpLastStep: step });
        return true;
      }
      const hash = recoveryCodeHash(code);
      if (!fresh.recoveryCodeHashes.includes(hash)) return false;
      await this.deps.store.accounts.updateUser(fresh.id, { recoveryCodeHashes: fresh.recoveryCodeHashes.filter((h) => h !== hash) });
      return true;
    });
  }

  /** Runs `fn` after every earlier call for this user has settled (one process serves the API). */
  private serialized<T>(userId: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.locks.get(userId) ?? Promise.resolve();
    const run = previous.then(fn, fn);
    const tail = run.catch(() => undefined);
    this.locks.set(userId, tail);
    void tail.then(() => {
      if (this.locks.get(userId) === tail) this.locks.delete(userId);
    });
    return run;
  }

  private totpStep(user: UserRecord, code: string): number | null {
    if (!user.totpSecretEncrypted) return null;
    const secret = this.deps.secrets.decrypt(user.totpSecretEncrypted);
    return matchTotp(secret, code.trim(), this.deps.clock.now().getTime(), user.totpLastStep);
  }
}
