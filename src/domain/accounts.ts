import type { Role, Scope } from './scopes.js';

/** A person who signs in. `email` is stored lower-cased: addresses are unique case-insensitively. */
export interface UserRecord {
  id: string;
  email: string;
  name: string;
  /** argon2id, PHC string. */
  passwordHash: string;
  role: Role;
  /** The TOTP secret sealed with the install's key; set at setup, before it is confirmed. */
  totpSecretEncrypted: string | null;
  totpEnabled: boolean;
  /** The last 30-second step a code was accepted for: a code is good once. */
  totpLastStep: number | null;
  /** SHA-256 of the unused recovery codes. */
  recoveryCodeHashes: string[];
  createdAt: Date;
  updatedAt: Date;
}

export interface SessionRecord {
  id: string;
  userId: string;
  tokenHash: string;
  expiresAt: Date;
  createdAt: Date;
  lastUsedAt: Date;
}

export interface PersonalTokenRecord {
  id: string;
  userId: string;
  name: string;
  scopes: Scope[];
  prefix: string;
  tokenHash: string;
  expiresAt: Date | null;
  createdAt: Date;
  lastUsedAt: Date | null;
}

export interface PasswordResetRecord {
  id: string;
  userId: string;
  tokenHash: string;
  expiresAt: Date;
  usedAt: Date | null;
  createdAt: Date;
}
