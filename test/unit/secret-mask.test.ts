import { describe, expect, it } from 'vitest';
import { MASK, maskSecrets, secretEnvValues } from '../../src/ai/secret-mask.js';

describe('maskSecrets (what may leave the machine for an AI provider)', () => {
  it('masks known values, longest first', () => {
    expect(maskSecrets('a=s3cret-long b=s3cret', ['s3cret', 's3cret-long'])).toBe(`a=${MASK} b=${MASK}`);
  });

  it('masks credentials by their look', () => {
    const text = [
      'postgres://app:pa55word@db:5432/app',
      'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig',
      'MYSQL_PASSWORD=hunter22 api_key: "abc123def" token=xyz789',
      'ghp_abcdefghijklmnopqrstuvwxyz0123456789 sk-proj-abcdefghijklmnopqrst slw_abcdefghijklmnop AKIAABCDEFGHIJKLMNOP',
      '-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----',
    ].join('\n');
    const masked = maskSecrets(text, []);
    for (const secret of ['pa55word', 'eyJhbGci', 'hunter22', 'abc123def', 'xyz789', 'ghp_abc', 'sk-proj', 'slw_abc', 'AKIAABC', 'MIIEow'])
      expect(masked).not.toContain(secret);
    expect(masked).toContain('postgres://app:********@db:5432/app');
    expect(masked).toContain('MYSQL_PASSWORD=********');
  });

  it('leaves ordinary log lines alone', () => {
    const line = "Error: Cannot find module 'express' at /app/index.js:3";
    expect(maskSecrets(line, [])).toBe(line);
  });

  it('takes env values of secret-looking keys, but not short settings', () => {
    expect(secretEnvValues({ DB_PASSWORD: 'longenough1', AUTH_ENABLED: 'true', PORT: '3000', NAME: 'not-a-secret-value' }, ['x'])).toEqual([
      'x',
      'longenough1',
    ]);
  });
});
