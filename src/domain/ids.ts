import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';

/**
 * Opaque ids: lowercase alphanumerics only, because they end up inside Docker image
 * tags and container names (`<prefix>-<serviceId>-<deploymentId>`), which reject upper case.
 */
export function newId(length = 16): string {
  return idFromBytes(randomBytes(length));
}

/** An id in newId's alphabet, one character per byte: the same bytes give the same id. */
export function idFromBytes(bytes: Uint8Array): string {
  let id = '';
  for (const byte of bytes) id += ALPHABET[byte % ALPHABET.length];
  return id;
}
