import { createPublicKey, verify } from 'node:crypto';
import { z } from 'zod';
import { ValidationError } from '../domain/errors.js';

/**
 * A license key is `base64url(JSON payload) "." base64url(Ed25519 signature of the payload bytes)`,
 * verified offline against the public key built into the release. The payload names the licensee,
 * the plan and when it expires.
 */
const payloadSchema = z.object({
  licensee: z.string().min(1).max(200),
  plan: z.string().min(1).max(64),
  expiresAt: z.iso.datetime({ offset: true }),
});
export type LicensePayload = z.infer<typeof payloadSchema>;

const PART = /^[A-Za-z0-9_-]+$/;

/** The payload of a key whose signature the public key verifies and which has not expired; else a 400 on `key`. */
export function verifyLicense(key: string, publicKeyBase64: string, now: Date): LicensePayload {
  const parts = key.trim().split('.');
  if (parts.length !== 2 || !parts.every((p) => PART.test(p))) throw new ValidationError('key', 'Not a license key');
  const [payloadPart, signaturePart] = parts as [string, string];
  const payloadBytes = Buffer.from(payloadPart, 'base64url');
  const publicKey = createPublicKey({ key: Buffer.from(publicKeyBase64, 'base64'), format: 'der', type: 'spki' });
  if (!verify(null, payloadBytes, publicKey, Buffer.from(signaturePart, 'base64url')))
    throw new ValidationError('key', 'The license signature is not valid');
  let payload: LicensePayload;
  try {
    payload = payloadSchema.parse(JSON.parse(payloadBytes.toString('utf8')));
  } catch {
    throw new ValidationError('key', 'The license payload is not readable');
  }
  if (new Date(payload.expiresAt).getTime() <= now.getTime())
    throw new ValidationError('key', `The license expired at ${payload.expiresAt}`);
  return payload;
}
