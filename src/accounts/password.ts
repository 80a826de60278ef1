import { hash, verify } from '@node-rs/argon2';

export const PASSWORD_MIN_LENGTH = 10;
/** Long enough for any passphrase, short enough that hashing it costs nothing extra. */
export const PASSWORD_MAX_LENGTH = 256;

/** argon2id (the library's default algorithm) with OWASP's parameters: 19 MiB, 2 passes, 1 lane. */
const OPTIONS = { memoryCost: 19_456, timeCost: 2, parallelism: 1 };

export function hashPassword(password: string): Promise<string> {
  return hash(password, OPTIONS);
}

export async function verifyPassword(passwordHash: string, password: string): Promise<boolean> {
  try {
    return await verify(passwordHash, password);
  } catch {
    return false;
  }
}

let dummy: Promise<string> | undefined;
/**
 * A hash of nothing anyone knows, verified against when the email is unknown: both sign-in paths
 * then cost one argon2id verification, so the answer's timing does not tell whether an account exists.
 */
export function dummyPasswordHash(): Promise<string> {
  dummy ??= hashPassword(`no account ${Math.random()}`);
  return dummy;
}
