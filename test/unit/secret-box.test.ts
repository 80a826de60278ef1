import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { generatePassword, SecretBox } from '../../src/platform/secret-box.js';

const PASSWORD_ALPHABET = 'ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789';

/** Replaces one character of `part` (0 iv, 1 tag, 2 body of the `v1.` format) by another base64url one. */
function tamper(sealed: string, part: 0 | 1 | 2): string {
  const pieces = sealed.split('.');
  const target = pieces[part + 1]!;
  const i = Math.floor(target.length / 2);
  const replacement = target[i] === 'A' ? 'B' : 'A';
  pieces[part + 1] = target.slice(0, i) + replacement + target.slice(i + 1);
  return pieces.join('.');
}

describe('SecretBox', () => {
  const box = SecretBox.fromSecret('unit-test-secret-unit-test-secret');

  it.each(['hello', '', 'p@ss w0rd:with/odd?chars&=', 'ünïcødé ✓ 日本語 🎉', 'x'.repeat(64 * 1024), 'line1\nline2\0end'])(
    'round-trips %j',
    (plain) => {
      expect(box.decrypt(box.encrypt(plain))).toBe(plain);
    },
  );

  it('uses the versioned v1.<iv>.<tag>.<ciphertext> format', () => {
    const sealed = box.encrypt('value');
    const parts = sealed.split('.');
    expect(parts).toHaveLength(4);
    expect(parts[0]).toBe('v1');
    for (const part of parts.slice(1)) expect(part).toMatch(/^[A-Za-z0-9_-]*$/);
    expect(Buffer.from(parts[1]!, 'base64url')).toHaveLength(12);
    expect(Buffer.from(parts[2]!, 'base64url')).toHaveLength(16);
  });

  it('produces a different ciphertext each time for the same plaintext', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 50; i++) seen.add(box.encrypt('same value'));
    expect(seen.size).toBe(50);
    const ivs = new Set([...seen].map((s) => s.split('.')[1]));
    expect(ivs.size).toBe(50);
  });

  it('does not contain the plaintext, in clear or base64 form', () => {
    const plain = 'SuperSecretPassword-1234567890';
    const sealed = box.encrypt(plain);
    expect(sealed).not.toContain(plain);
    expect(sealed).not.toContain(Buffer.from(plain).toString('base64url').slice(0, 16));
    expect(sealed).not.toContain(Buffer.from(plain).toString('base64').slice(0, 16));
    expect(sealed).not.toContain(Buffer.from(plain).toString('hex').slice(0, 16));
  });

  it.each([
    ['the iv', 0],
    ['the auth tag', 1],
    ['the ciphertext', 2],
  ] as const)('refuses a value whose %s was tampered with', (_what, part) => {
    const sealed = box.encrypt('a value worth protecting');
    const tampered = tamper(sealed, part);
    expect(tampered).not.toBe(sealed);
    expect(() => box.decrypt(tampered)).toThrow();
  });

  it('refuses a truncated ciphertext and swapped parts', () => {
    const sealed = box.encrypt('a value worth protecting');
    const [v, iv, tag, body] = sealed.split('.') as [string, string, string, string];
    expect(() => box.decrypt([v, iv, tag, body.slice(0, -2)].join('.'))).toThrow();
    expect(() => box.decrypt([v, iv, tag, ''].join('.'))).toThrow();
    const other = box.encrypt('another value of the same length!!').split('.');
    expect(() => box.decrypt([v, iv, other[2], body].join('.'))).toThrow();
  });

  it.each(['', 'garbage', 'v2.a.b.c', 'v1.only-two', 'v1..', `v1.${'A'.repeat(16)}`])('refuses a malformed value %j', (sealed) => {
    expect(() => box.decrypt(sealed)).toThrow();
  });

  it('refuses to decrypt with another key', () => {
    const sealed = box.encrypt('for the right key only');
    expect(() => SecretBox.fromSecret('another-secret-another-secret-xx').decrypt(sealed)).toThrow();
    expect(() => new SecretBox(randomBytes(32)).decrypt(sealed)).toThrow();
  });

  it('derives the same key from the same secret', () => {
    const sealed = box.encrypt('portable');
    expect(SecretBox.fromSecret('unit-test-secret-unit-test-secret').decrypt(sealed)).toBe('portable');
  });

  it('needs a 32-byte key', () => {
    expect(() => new SecretBox(Buffer.alloc(16))).toThrow();
    expect(() => new SecretBox(Buffer.alloc(33))).toThrow();
    expect(() => new SecretBox(randomBytes(32))).not.toThrow();
  });
});

describe('generatePassword', () => {
  it('is 32 characters by default', () => {
    expect(generatePassword()).toHaveLength(32);
  });

  it.each([1, 8, 16, 57, 64, 128])('honours the requested length %i', (length) => {
    expect(generatePassword(length)).toHaveLength(length);
  });

  it('uses only the URL- and shell-safe alphabet without look-alike characters', () => {
    const pattern = new RegExp(`^[${PASSWORD_ALPHABET}]+$`);
    for (let i = 0; i < 200; i++) {
      const password = generatePassword();
      expect(password).toMatch(pattern);
      expect(password).not.toMatch(/[0O1lI]/);
    }
  });

  it('covers the whole alphabet over many passwords', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 500; i++) for (const c of generatePassword()) seen.add(c);
    expect([...seen].sort().join('')).toBe([...PASSWORD_ALPHABET].sort().join(''));
  });

  it('never repeats itself', () => {
    const passwords = new Set<string>();
    for (let i = 0; i < 2000; i++) passwords.add(generatePassword());
    expect(passwords.size).toBe(2000);
  });
});
