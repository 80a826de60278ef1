import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';

/**
 * Opaque ids: lowercase alphanumerics only, because they end up inside Docker image
 * tags and container names (`<prefix>-<serviceId>-<deploymentId>`), which reject upper case.
 */
export function newId(length = 16): string {
  const bytes = randomBytes(length);
  let id = '';
  for (const byte of bytes) id += ALPHABET[byte % ALPHABET.length];
  return id;
}
