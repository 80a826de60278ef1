import { createHash, randomBytes } from 'node:crypto';

/**
 * The prefixes of the credentials users hold. Each tells a reader (and a secret scanner) what a
 * leaked string is; every one is stored as its SHA-256 only, which is enough for 256 random bits.
 */
export const SESSION_PREFIX = 'slw_ses_';
export const PERSONAL_TOKEN_PREFIX = 'slw_pat_';
export const RESET_PREFIX = 'slw_rst_';

export function newSecretToken(prefix: string): string {
  return prefix + randomBytes(32).toString('base64url');
}

export function sha256(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex');
}

/** Recovery codes: `xxxxx-xxxxx` from an unambiguous alphabet, 50 bits each. */
export function newRecoveryCode(): string {
  const alphabet = 'abcdefghjkmnpqrstuvwxyz23456789';
  const bytes = randomBytes(20);
  let code = '';
  for (let i = 0; i < 10; i++) code += alphabet[bytes[i]! % alphabet.length];
  return `${code.slice(0, 5)}-${code.slice(5)}`;
}

export function recoveryCodeHash(code: string): string {
  return sha256(`recovery:${code.trim().toLowerCase().replace(/[\s-]/g, '')}`);
}

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}
