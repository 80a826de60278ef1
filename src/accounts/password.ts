/** argon2 (a native module) loads on the first password hashed or checked: an API-key-only install never needs it. */
const argon2 = () => import('@node-rs/argon2');

export const PASSWORD_MIN_LENGTH = 10;
/** Long enough for any passphrase, short enough that hashing it costs nothing extra. */
export const PASSWORD_MAX_LENGTH = 256;

/** argon2id (the library's default algorithm) with OWASP's parameters: 19 MiB, 2 passes, 1 lane. */
const OPTIONS = { memoryCost: 19_456, timeCost: 2, parallelism: 1 };

export async function hashPassword(password: string): Promise<string> {
  return (await argon2()).hash(password, OPTIONS);
}

export async function verifyPassword(passwordHash: string, password: string): Promise<boolean> {
  try {
    return await (await argon2()).verify(passwordHash, password);
  } catch {
    return false;
  }
}

/**
 * A hash of nothing anyone knows (a random password, made once with OPTIONS and thrown away), verified
 * against when the email is unknown: both sign-in paths then cost one argon2id verification, so the
 * answer's timing does not tell whether an account exists. A constant rather than made at start, so
 * a start loads no argon2 and spends no 19 MiB hashing.
 */
const DUMMY_HASH = '$argon2id$v=19$m=19456,t=2,p=1$AwQuDwc9mn0TBONROSWl5A$lmKY7nfCt/CpfRoIiO/ybuqoFOYfpm0TcmOg6zMzDQ8';

export function dummyPasswordHash(): Promise<string> {
  return Promise.resolve(DUMMY_HASH);
}
