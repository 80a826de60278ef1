import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { base32Decode, hotp, totpStep } from '../../src/accounts/totp.js';
import { expectErrorShape } from '../helpers/error-bodies.js';
import { ok, type ApiResponse } from '../helpers/http.js';
import { api, startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { startSmtpServer } from '../helpers/smtp-server.js';

/*
 * Accounts end to end, over HTTP against the server as `npm start` runs it, with a real SMTP server
 * on 127.0.0.1: signup, sign-in with the cookie, personal tokens and their scopes, two-factor
 * sign-in, password reset by mail, the per-address limits, account backoff, sign-in timing, and
 * finally that no secret handed out here is in the log or in the database files in clear.
 * TRUST_PROXY=true lets each test speak from its own address (X-Forwarded-For), so their budgets
 * do not mix.
 */

let server: ServerProcess;
let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
/** Every secret handed out, to look for in the log and the database at the end. */
const secrets = new Set<string>();
let ipSeq = 0;
const newIp = () => `198.51.100.${++ipSeq}`;

const OWNER = { email: 'owner@example.com', password: 'correct horse battery staple', name: 'Olive' };

function from(ip: string, token?: string, extra: Record<string, string> = {}) {
  const call = api(server.url, token);
  return (method: string, pathname: string, body?: unknown, headers: Record<string, string> = {}) =>
    call(method, pathname, body, { 'x-forwarded-for': ip, ...extra, ...headers });
}

async function signin(email: string, password: string, ip = newIp()): Promise<{ token: string; res: ApiResponse }> {
  const res = await from(ip)('POST', '/api/auth/signin', { email, password });
  expect(res.status, res.text).toBe(200);
  secrets.add(res.json.session.token);
  return { token: res.json.session.token, res };
}

beforeAll(async () => {
  smtp = await startSmtpServer();
  server = await startServerProcess({
    SMTP_URL: smtp.url,
    MAIL_FROM: 'Slipway <noreply@slipway.test>',
    APP_URL: 'https://slipway.example.com/',
    TRUST_PROXY: 'true',
  });
  secrets.add(OWNER.password);
  const res = await from(newIp())('POST', '/api/auth/signup', OWNER);
  expect(res.status, res.text).toBe(201);
  expect(res.json.user).toMatchObject({ email: OWNER.email, role: 'owner' });
}, 60_000);

afterAll(async () => {
  await server?.dispose();
  await smtp?.close();
}, 30_000);

describe('sign-in', () => {
  it('answers a session, sets an HttpOnly SameSite=Lax cookie (Secure behind HTTPS), and the cookie authenticates', async () => {
    const ip = newIp();
    const { res } = await signin(OWNER.email, OWNER.password, ip);
    const cookie = res.headers.get('set-cookie') ?? '';
    expect(cookie).toMatch(/^slipway_session=slw_ses_[\w-]+; Path=\/; HttpOnly; SameSite=Lax; Expires=/);
    expect(cookie).not.toContain('Secure');
    const value = /^slipway_session=([^;]+)/.exec(cookie)![1]!;
    const me = await from(ip)('GET', '/api/user', undefined, { cookie: `other=1; slipway_session=${value}` });
    expect(me.status, me.text).toBe(200);
    expect(me.json.user.email).toBe(OWNER.email);

    const https = await from(ip, undefined, { 'x-forwarded-proto': 'https' })('POST', '/api/auth/signin', {
      email: OWNER.email,
      password: OWNER.password,
    });
    secrets.add(https.json.session.token);
    expect(https.headers.get('set-cookie')).toMatch(/; HttpOnly; SameSite=Lax; Secure; Expires=/);

    const out = await from(ip)('POST', '/api/auth/logout', undefined, { cookie: `slipway_session=${value}` });
    expect(out.status, out.text).toBe(200);
    expect(out.headers.get('set-cookie')).toMatch(/^slipway_session=; .*Max-Age=0/);
    expectErrorShape(await from(ip)('GET', '/api/user', undefined, { cookie: `slipway_session=${value}` }), 401, 'after logout');
  });

  it('honours the cookie for a state change only from this origin (apps under the same site cannot post with it)', async () => {
    const ip = newIp();
    const { res } = await signin(OWNER.email, OWNER.password, ip);
    const cookie = `slipway_session=${/^slipway_session=([^;]+)/.exec(res.headers.get('set-cookie') ?? '')![1]!}`;
    const project = (name: string, headers: Record<string, string>) =>
      from(ip)('POST', '/api/projects', { name, description: '' }, { cookie, ...headers });
    expectErrorShape(await project('csrf-1', { origin: 'https://evil-app.apps.example.com' }), 401, 'foreign origin');
    expectErrorShape(await project('csrf-2', { 'sec-fetch-site': 'same-site' }), 401, 'same-site page');
    expectErrorShape(await project('csrf-3', { 'sec-fetch-site': 'cross-site' }), 401, 'cross-site page');
    // Reads stay fine with the cookie from anywhere (the page cannot read the answer).
    expect((await from(ip)('GET', '/api/user', undefined, { cookie, 'sec-fetch-site': 'cross-site' })).status).toBe(200);
    const own = await project('csrf-own', { origin: server.url, 'sec-fetch-site': 'same-origin' });
    expect(own.status, own.text).toBe(201);
    expect((await project('csrf-cli', {})).status).toBe(201);
    const names = (await ok(api(server.url, server.token)('GET', '/api/projects'), 'list')).projects.map((p: { name: string }) => p.name);
    expect(names).toEqual(expect.arrayContaining(['csrf-own', 'csrf-cli']));
    expect(names).not.toContain('csrf-1');
    // A stale cookie does not stand in the way of finishing a sign-in.
    const stale = await from(ip)(
      'POST',
      '/api/auth/2fa/verify',
      { challengeId: 'no-such-challenge', code: '123456' },
      {
        cookie: 'slipway_session=slw_ses_stale',
      },
    );
    expectErrorShape(stale, 401, 'stale cookie on verify');
    expect(stale.json.error).toBe('invalid_credentials');
  });

  it('expires an idle session (a server of its own, with SESSION_TTL_SECONDS=2)', async () => {
    const short = await startServerProcess({ SESSION_TTL_SECONDS: '2' });
    try {
      await ok(api(short.url, undefined)('POST', '/api/auth/signup', OWNER), 'signup');
      const res = await api(short.url, undefined)('POST', '/api/auth/signin', { email: OWNER.email, password: OWNER.password });
      const token = res.json.session.token as string;
      expect((await api(short.url, token)('GET', '/api/projects')).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 2_500));
      expectErrorShape(await api(short.url, token)('GET', '/api/projects'), 401, 'expired session');
    } finally {
      await short.dispose();
    }
  }, 60_000);

  it('answers an unknown email and a wrong password alike, in about the same time', async () => {
    await ok(api(server.url, server.token)('PUT', '/api/settings', { registrationOpen: true }), 'open registration');
    const emails = ['t1@example.com', 't2@example.com', 't3@example.com', 't4@example.com'];
    for (const email of emails)
      await ok(from(newIp())('POST', '/api/auth/signup', { email, password: 'timing password', name: 't' }), 'signup');
    const timed = async (email: string, i: number) => {
      const started = performance.now();
      const res = await from(newIp())('POST', '/api/auth/signin', { email, password: `not it ${i}` });
      const ms = performance.now() - started;
      expectErrorShape(res, 401, email);
      expect(res.json).toEqual({ error: 'invalid_credentials', message: 'Invalid email or password', details: {} });
      return ms;
    };
    // Interleaved, 4 per account (under its backoff threshold of 5), each from a fresh address. Other
    // tests load this machine heavily, which only ever adds time: the fastest answer of each kind is
    // its intrinsic cost.
    const unknown: number[] = [];
    const wrong: number[] = [];
    for (let i = 0; i < 16; i++) {
      unknown.push(await timed(`ghost${i}@example.com`, i));
      wrong.push(await timed(emails[i % emails.length]!, i));
    }
    const [u, w] = [Math.min(...unknown), Math.min(...wrong)];
    const summary = `fastest unknown ${u.toFixed(1)} ms, wrong password ${w.toFixed(1)} ms; all ${JSON.stringify({ unknown: unknown.map(Math.round), wrong: wrong.map(Math.round) })}`;
    // Without the dummy hash an unknown email answers in ~1 ms against ~15+ ms for argon2id.
    expect(u / w, summary).toBeGreaterThan(0.5);
    expect(u / w, summary).toBeLessThan(2);
  });
});

describe('limits', () => {
  it('signup: the 6th request in a minute from one address gets 429 with Retry-After', async () => {
    const ip = newIp();
    for (let i = 0; i < 5; i++) {
      const res = await from(ip)('POST', '/api/auth/signup', { email: `limit${i}@example.com`, password: 'x', name: 'l' });
      expect(res.status, res.text).toBe(400);
    }
    const sixth = await from(ip)('POST', '/api/auth/signup', { email: 'limit6@example.com', password: 'long enough pw', name: 'l' });
    expectErrorShape(sixth, 429, 'signup 6th');
    expect(Number(sixth.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(Number(sixth.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    // Another address is not affected.
    expect((await from(newIp())('POST', '/api/auth/signup', { email: 'x', password: 'x', name: 'l' })).status).toBe(400);
  });

  it('signin: the 11th gets 429; 2fa/verify shares the budget', async () => {
    const ip = newIp();
    for (let i = 0; i < 10; i++) {
      const res = await from(ip)('POST', '/api/auth/signin', { email: `nobody${i}@example.com`, password: 'whatever it is' });
      expect(res.status, res.text).toBe(401);
    }
    const eleventh = await from(ip)('POST', '/api/auth/signin', { email: OWNER.email, password: OWNER.password });
    expectErrorShape(eleventh, 429, 'signin 11th');
    expect(Number(eleventh.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expectErrorShape(await from(ip)('POST', '/api/auth/2fa/verify', { challengeId: 'x', code: '123456' }), 429, 'verify');
  });

  it('password reset: the 4th request (forgot and reset together) gets 429', async () => {
    const ip = newIp();
    expect((await from(ip)('POST', '/api/auth/forgot-password', { email: 'nobody@example.com' })).status).toBe(200);
    expect((await from(ip)('POST', '/api/auth/forgot-password', { email: 'nobody@example.com' })).status).toBe(200);
    expect((await from(ip)('POST', '/api/auth/reset-password', { token: 'slw_rst_guess', password: 'a long password' })).status).toBe(400);
    const fourth = await from(ip)('POST', '/api/auth/forgot-password', { email: 'nobody@example.com' });
    expectErrorShape(fourth, 429, 'reset 4th');
    expect(Number(fourth.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  });

  it('repeated failures for one account back off, from any address, without locking it for good', async () => {
    const email = 'backoff@example.com';
    const password = 'backoff password';
    await ok(from(newIp())('POST', '/api/auth/signup', { email, password, name: 'b' }), 'signup');
    for (let i = 0; i < 5; i++)
      expectErrorShape(await from(newIp())('POST', '/api/auth/signin', { email, password: `wrong ${i} pw` }), 401, `failure ${i}`);
    const locked = await from(newIp())('POST', '/api/auth/signin', { email, password });
    expectErrorShape(locked, 429, 'locked');
    expect(locked.headers.get('retry-after')).toBe('1');
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    await signin(email, password);
  });
});

describe('personal tokens', () => {
  it('deploy with deploy:write, are refused env values, named missing scope, and revoked at once', async () => {
    const { token: session } = await signin(OWNER.email, OWNER.password);
    const admin = api(server.url, server.token);
    const project = (await ok(admin('POST', '/api/projects', { name: 'Tokens', description: '' }), 'project')).project;
    const service = (await ok(admin('POST', `/api/projects/${project.id}/services`, { name: 'web', repoFullName: 'acme/web' }), 'svc'))
      .service;
    await ok(admin('POST', `/api/services/${service.id}/env`, { key: 'DB_PASSWORD', value: 'hunter2-very-secret' }), 'env');
    const envId = (await ok(admin('GET', `/api/services/${service.id}/overview`), 'overview')).env[0].id;

    const created = await from(newIp(), session)('POST', '/api/user/tokens', { name: 'ci', scopes: ['deploy:write', 'project:read'] });
    expect(created.status, created.text).toBe(201);
    const pat: string = created.json.token;
    secrets.add(pat);
    expect(pat).toMatch(/^slw_pat_/);
    const ci = api(server.url, pat);
    expect((await ci('POST', `/api/services/${service.id}/deployments`)).status).toBe(201);
    const overview = await ci('GET', `/api/services/${service.id}/overview`);
    expect(overview.status).toBe(200);
    expect(overview.text).not.toContain('hunter2-very-secret');
    const reveal = await ci('POST', `/api/services/${service.id}/env/${envId}/reveal`);
    expectErrorShape(reveal, 403, 'reveal');
    expect(reveal.json).toMatchObject({ error: 'insufficient_scope', details: { scope: 'env:read' } });
    const stream = await ci('GET', `/api/services/${service.id}/runtime-logs/stream`);
    expect(stream.json).toMatchObject({ error: 'insufficient_scope', details: { scope: 'logs:read' } });

    const listed = await from(newIp(), session)('GET', '/api/user/tokens');
    expect(listed.json.tokens).toEqual([
      expect.objectContaining({ name: 'ci', scopes: ['deploy:write', 'project:read'], lastUsedAt: expect.any(String), expiresAt: null }),
    ]);
    expect(listed.text).not.toContain(pat);
    expect((await from(newIp(), session)('DELETE', `/api/user/tokens/${created.json.personalToken.id}`)).status).toBe(200);
    expectErrorShape(await ci('GET', '/api/projects'), 401, 'revoked');
  });
});

describe('two-factor sign-in', () => {
  it('sets up with a QR code, then asks for a code at sign-in; a recovery code works once', async () => {
    const email = 'twofactor@example.com';
    const password = 'two factor password';
    await ok(from(newIp())('POST', '/api/auth/signup', { email, password, name: '2fa' }), 'signup');
    const { token } = await signin(email, password);
    const setup = await from(newIp(), token)('POST', '/api/auth/2fa/setup');
    expect(setup.status, setup.text).toBe(200);
    const { secret, otpauthUri, qrCode, recoveryCodes } = setup.json;
    secrets.add(secret);
    for (const code of recoveryCodes) secrets.add(code);
    expect(otpauthUri).toMatch(/^otpauth:\/\/totp\/Slipway:twofactor%40example\.com\?secret=[A-Z2-7]+&issuer=Slipway/);
    expect(qrCode).toMatch(/^data:image\/png;base64,iVBOR/);
    const code = () => hotp(base32Decode(secret), totpStep(Date.now()));
    expect((await from(newIp(), token)('POST', '/api/auth/2fa/verify', { code: code() })).status).toBe(200);

    const first = await from(newIp())('POST', '/api/auth/signin', { email, password });
    expect(first.json).toEqual({ twoFactorRequired: true, challengeId: expect.any(String) });
    expect(first.headers.get('set-cookie')).toBeNull();
    // The confirming code was spent: the same code is refused within its window.
    const replay = await from(newIp())('POST', '/api/auth/2fa/verify', { challengeId: first.json.challengeId, code: code() });
    expectErrorShape(replay, 401, 'replayed code');
    const recovery = await from(newIp())('POST', '/api/auth/2fa/verify', { challengeId: first.json.challengeId, code: recoveryCodes[0] });
    expect(recovery.status, recovery.text).toBe(200);
    expect(recovery.json.session.token).toMatch(/^slw_ses_/);
    secrets.add(recovery.json.session.token);
    expect(recovery.headers.get('set-cookie')).toMatch(/^slipway_session=slw_ses_/);

    const second = await from(newIp())('POST', '/api/auth/signin', { email, password });
    expectErrorShape(
      await from(newIp())('POST', '/api/auth/2fa/verify', { challengeId: second.json.challengeId, code: recoveryCodes[0] }),
      401,
      'recovery code reused',
    );
  });
});

describe('password reset by mail', () => {
  it('mails a link whose token sets the password once and ends every session', async () => {
    const email = 'reset@example.com';
    const password = 'first password here';
    await ok(from(newIp())('POST', '/api/auth/signup', { email, password, name: 'r' }), 'signup');
    const { token: session } = await signin(email, password);
    const before = smtp.mails.length;
    expect((await from(newIp())('POST', '/api/auth/forgot-password', { email: 'Reset@Example.com' })).json).toEqual({ ok: true });
    const mail = await smtp.waitFor(email);
    expect(smtp.mails.length).toBe(before + 1);
    expect(mail.from).toBe('noreply@slipway.test');
    // Quoted-printable may fold the line: unfold before reading the link.
    const body = mail.raw.replace(/=\r?\n/g, '').replace(/=3D/g, '=');
    const link = /https:\/\/slipway\.example\.com\/reset-password\?token=([\w%-]+)/.exec(body);
    expect(link, body).not.toBeNull();
    const url = new URL(link![0]);
    const token = url.searchParams.get('token')!;
    secrets.add(token);
    expect(token).toMatch(/^slw_rst_/);

    const newPassword = 'second password here';
    secrets.add(newPassword);
    expect((await from(newIp())('POST', '/api/auth/reset-password', { token, password: newPassword })).status).toBe(200);
    expectErrorShape(await from(newIp(), session)('GET', '/api/user'), 401, 'old session');
    expectErrorShape(await from(newIp())('POST', '/api/auth/signin', { email, password }), 401, 'old password');
    await signin(email, newPassword);
    const reused = await from(newIp())('POST', '/api/auth/reset-password', { token, password: 'third password here' });
    expectErrorShape(reused, 400, 'reused token');
    expect(reused.json.details).toEqual({ field: 'token' });
    // An unknown address gets the same answer and no mail.
    expect((await from(newIp())('POST', '/api/auth/forgot-password', { email: 'ghost@example.com' })).json).toEqual({ ok: true });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(smtp.mails.filter((m) => m.to.includes('ghost@example.com'))).toEqual([]);
  });
});

describe('SMTP set in the settings', () => {
  it('sends through the server the owner set, which the settings never show', async () => {
    const second = await startSmtpServer();
    try {
      const admin = api(server.url, server.token);
      const put = await admin('PUT', '/api/settings', { smtpUrl: second.url, mailFrom: 'Ops <ops@slipway.test>' });
      expect(put.status, put.text).toBe(200);
      expect(put.json.settings).toMatchObject({ smtpConfigured: true, mailFrom: 'Ops <ops@slipway.test>' });
      expect(put.text).not.toContain(second.url);
      expect((await from(newIp())('POST', '/api/auth/forgot-password', { email: OWNER.email })).status).toBe(200);
      const mail = await second.waitFor(OWNER.email);
      expect(mail.from).toBe('ops@slipway.test');
      expect(smtp.mails.filter((m) => m.to.includes(OWNER.email))).toEqual([]);
      secrets.add(decodeURIComponent(/token=([\w%-]+)/.exec(mail.raw.replace(/=\r?\n/g, '').replace(/=3D/g, '='))![1]!));
      await ok(admin('PUT', '/api/settings', { smtpUrl: null }), 'clear smtp');
    } finally {
      await second.close();
    }
  });
});

describe('OpenAPI', () => {
  it('declares the bearer and cookie schemes and each operation’s scope', async () => {
    const doc = (await api(server.url, undefined)('GET', '/api/openapi.json')).json;
    expect(doc.components.securitySchemes).toMatchObject({
      bearerAuth: { type: 'http', scheme: 'bearer' },
      cookieAuth: { type: 'apiKey', in: 'cookie', name: 'slipway_session' },
    });
    const reveal = doc.paths['/api/services/{serviceId}/env/{envId}/reveal'].post;
    expect(reveal.security).toEqual([{ bearerAuth: ['env:read'] }, { cookieAuth: ['env:read'] }]);
    expect(reveal['x-required-scope']).toBe('env:read');
    expect(doc.paths['/api/deployments/{deploymentId}/stream'].get['x-required-scope']).toBe('logs:read');
    expect(doc.paths['/api/user/tokens'].post['x-required-scope']).toBe('session');
    expect(doc.paths['/api/auth/signin'].post.security).toBeUndefined();
    expect(Object.keys(doc.paths['/api/auth/signin'].post.responses)).toContain('429');
  });
});

describe('secrets at rest and in the log', () => {
  it('no password, token, TOTP secret or recovery code is in a later response, in the log or in the database files in clear', async () => {
    const { token: session } = await signin(OWNER.email, OWNER.password);
    const reads = await Promise.all(
      ['/api/user', '/api/user/tokens', '/api/users', '/api/settings', '/api/api-keys'].map((p) => from(newIp(), session)('GET', p)),
    );
    secrets.delete(session);
    for (const res of reads) {
      expect(res.status, res.text).toBe(200);
      for (const secret of secrets) expect(res.text.includes(secret), 'response').toBe(false);
    }
    secrets.add(session);
    await server.stop();
    const output = server.output();
    const files = (function walk(dir: string): string[] {
      return readdirSync(dir).flatMap((name) => {
        const full = path.join(dir, name);
        return statSync(full).isDirectory() ? walk(full) : [full];
      });
    })(server.dataDir);
    const database = files.filter((file) => /\.(db|sqlite)(-wal|-shm)?$|sqlite/.test(file));
    expect(database.length, files.join(', ')).toBeGreaterThan(0);
    const stored = database.map((file) => readFileSync(file).toString('latin1')).join('\n');
    expect(secrets.size).toBeGreaterThan(15);
    for (const secret of secrets) {
      expect(output.includes(secret), 'log').toBe(false);
      expect(stored.includes(secret), 'database').toBe(false);
    }
  }, 30_000);
});
