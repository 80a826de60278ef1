import { describe, expect, it } from 'vitest';
import { base32Decode, base32Encode, hotp, matchTotp, otpauthUri, totpStep } from '../../src/accounts/totp.js';

/** RFC 6238 appendix B: the SHA-1 rows, seed "12345678901234567890", 8 digits. */
const RFC6238_SHA1: Array<[number, string]> = [
  [59, '94287082'],
  [1111111109, '07081804'],
  [1111111111, '14050471'],
  [1234567890, '89005924'],
  [2000000000, '69279037'],
  [20000000000, '65353130'],
];

describe('TOTP (RFC 6238)', () => {
  const seed = Buffer.from('12345678901234567890', 'ascii');

  it('matches the RFC 6238 test vectors (SHA-1)', () => {
    for (const [time, code] of RFC6238_SHA1) expect(hotp(seed, Math.floor(time / 30), 8), `T=${time}`).toBe(code);
  });

  it('matches the RFC 6238 SHA-256 and SHA-512 vectors too (the truncation is generic)', () => {
    expect(hotp(Buffer.from('12345678901234567890123456789012', 'ascii'), 1, 8, 'sha256')).toBe('46119246');
    expect(hotp(Buffer.from('1234567890123456789012345678901234567890123456789012345678901234', 'ascii'), 1, 8, 'sha512')).toBe('90693936');
  });

  it('matches the RFC 4226 HOTP vectors (6 digits)', () => {
    const expected = ['755224', '287082', '359152', '969429', '338314', '254676', '287922', '162583', '399871', '520489'];
    expected.forEach((code, counter) => expect(hotp(seed, counter)).toBe(code));
  });

  it('base32 round-trips and decodes the RFC seed', () => {
    expect(base32Encode(seed)).toBe('GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ');
    expect(base32Decode('GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ').equals(seed)).toBe(true);
  });

  it('accepts one step of drift either way, never a code at or before the last accepted step', () => {
    const secret = base32Encode(seed);
    const at = 1_111_111_111_000;
    const step = totpStep(at);
    const code = (s: number) => hotp(seed, s);
    expect(matchTotp(secret, code(step), at, null)).toBe(step);
    expect(matchTotp(secret, code(step - 1), at, null)).toBe(step - 1);
    expect(matchTotp(secret, code(step + 1), at, null)).toBe(step + 1);
    expect(matchTotp(secret, code(step - 2), at, null)).toBeNull();
    // Replay: once `step` was accepted, its code (and older ones) are refused.
    expect(matchTotp(secret, code(step), at, step)).toBeNull();
    expect(matchTotp(secret, code(step - 1), at, step)).toBeNull();
    expect(matchTotp(secret, code(step + 1), at, step)).toBe(step + 1);
    expect(matchTotp(secret, 'abcdef', at, null)).toBeNull();
    expect(matchTotp(secret, '12345', at, null)).toBeNull();
  });

  it('writes an otpauth URI authenticator apps read', () => {
    const uri = otpauthUri('JBSWY3DPEHPK3PXP', 'ana@example.com', 'Slipway');
    expect(uri).toBe('otpauth://totp/Slipway:ana%40example.com?secret=JBSWY3DPEHPK3PXP&issuer=Slipway&algorithm=SHA1&digits=6&period=30');
  });
});
