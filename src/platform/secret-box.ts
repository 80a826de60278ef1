import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/**
 * Encrypts values at rest (env values, git tokens, provider tokens) with AES-256-GCM.
 * The format `v1.<iv>.<tag>.<ciphertext>` (base64url) leaves room for key rotation later.
 */
export class SecretBox {
  private readonly key: Buffer;

  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error('SecretBox needs a 32-byte key');
    this.key = key;
  }

  /** Any passphrase or key material, stretched to 32 bytes. */
  static fromSecret(secret: string): SecretBox {
    return new SecretBox(createHash('sha256').update(secret, 'utf8').digest());
  }

  encrypt(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return ['v1', iv, cipher.getAuthTag(), body].map((p) => (typeof p === 'string' ? p : p.toString('base64url'))).join('.');
  }

  decrypt(sealed: string): string {
    const [version, iv, tag, body] = sealed.split('.');
    if (version !== 'v1' || !iv || !tag || body === undefined) throw new Error('Unrecognised sealed value');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
  }
}

/** A strong random password: 32 characters from an alphabet safe in URLs and shells. */
export function generatePassword(length = 32): string {
  const alphabet = 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789';
  const limit = 256 - (256 % alphabet.length);
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < limit && out.length < length) out += alphabet[byte % alphabet.length];
    }
  }
  return out;
}

/**
 * A storage instance's key pair, made at create and again for each clone. The access key id is
 * AWS-like (20 upper-case letters and digits), `SLW` first so a leaked key names where it came from.
 */
export function generateAccessKeyPair(): { accessKeyId: string; secretAccessKey: string } {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  const accessKeyId = `SLW${[...randomBytes(17)].map((b) => alphabet[b % alphabet.length]).join('')}`;
  return { accessKeyId, secretAccessKey: generatePassword(40) };
}
