import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { appRouter } from '../../routers/app.router.js';
import { proceduresOf } from '../../routers/trpc.js';
import { PROCEDURE_SCOPES } from '../../src/index.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

describe('scope declarations', () => {
  it('every procedure declares its scope in its meta', () => {
    const missing = proceduresOf(appRouter)
      .filter(({ meta }) => !meta.scope || !(PROCEDURE_SCOPES as readonly string[]).includes(meta.scope))
      .map(
        ({ path, meta }) =>
          `${path} (${meta.openapi ? `${meta.openapi.method} ${meta.openapi.path}` : meta.sse ? `SSE ${meta.sse.path}` : meta.download ? `GET ${meta.download.path}` : 'tRPC only'})`,
      );
    // Name each one: add `scope: '<scope>'` to its .meta({...}) (see docs/accounts.md for the table).
    expect(missing, `procedures without a scope declaration: ${missing.join(', ')}`).toEqual([]);
  });

  it('only credential-free procedures are public, and only authentication ones count against the auth budgets', () => {
    const publicOnes = proceduresOf(appRouter)
      .filter(({ meta }) => meta.scope === 'public')
      .map(({ path }) => path)
      .sort();
    expect(publicOnes).toEqual(
      [
        'auth.forgotPassword',
        'auth.resetPassword',
        'auth.signin',
        'auth.signup',
        'auth.twoFactorVerify',
        'health',
        'system.public',
        // A joining server's exchange (its join token in the body is the credential) and the join script.
        'servers.join',
        'servers.joinScript',
      ].sort(),
    );
  });

  it('docs/accounts.md lists every REST and SSE operation with the scope its procedure declares', () => {
    const doc = readFileSync(path.join(ROOT, 'docs/accounts.md'), 'utf8');
    const rows = new Map<string, string>();
    for (const match of doc.matchAll(/^\| `(GET|POST|PUT|PATCH|DELETE) ([^`]+)` \| `([^`]+)` \|/gm))
      rows.set(`${match[1]} ${match[2]}`, match[3]!);
    const expected = new Map<string, string>();
    for (const { meta } of proceduresOf(appRouter)) {
      if (meta.openapi) expected.set(`${meta.openapi.method} ${meta.openapi.path}`, meta.scope ?? '(none)');
      if (meta.sse) expected.set(`GET ${meta.sse.path}`, meta.scope ?? '(none)');
      if (meta.download) expected.set(`GET ${meta.download.path}`, meta.scope ?? '(none)');
    }
    expect(Object.fromEntries(rows)).toEqual(Object.fromEntries(expected));
  });
});
