import { TRPCError } from '@trpc/server';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createCaller } from '../../routers/app.router.js';
import type { SessionCookie } from '../../routers/trpc.js';
import { hotp, base32Decode, totpStep } from '../../src/accounts/totp.js';
import type { Mailer, MailMessage } from '../../src/index.js';
import { createHarness, unlimited, type Harness } from '../helpers/harness.js';
import { createScratchDatabase } from '../helpers/postgres.js';

/** Accounts through the routers (createCaller) on SQLite in memory, with a clock the tests move and a recording mailer. */
let h: Harness;
let nowMs: number;
const mails: MailMessage[] = [];
const mailer: Mailer = {
  async send(message) {
    mails.push(message);
  },
};

beforeEach(async () => {
  nowMs = Date.parse('2026-11-26T10:00:00.000Z');
  mails.length = 0;
  h = await createHarness({
    clock: { now: () => new Date(nowMs) },
    accounts: { mailer, sessionTtlMs: 3600_000, appUrl: () => 'https://slipway.example.com' },
  });
});
afterEach(async () => {
  await h.close();
});

interface Failure {
  code: string;
  details: Record<string, unknown>;
  message: string;
}
async function failure(promise: Promise<unknown>): Promise<Failure> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(TRPCError);
    const cause = (error as TRPCError).cause as { code?: string; details?: Record<string, unknown> } | undefined;
    return { code: cause?.code ?? (error as TRPCError).code, details: cause?.details ?? {}, message: (error as Error).message };
  }
  throw new Error('expected a rejection');
}

function anonymous(cookies: string[] = []) {
  const cookie: SessionCookie = { set: (token) => cookies.push(token), clear: () => cookies.push('') };
  return createCaller({ services: h.services, token: undefined, ip: '10.0.0.1', limiter: unlimited, cookie });
}
const as = (token: string) => h.caller(token);

const OWNER = { email: 'Owner@Example.com', password: 'correct horse battery', name: 'Olive Owner' };
const CREDS = { email: OWNER.email, password: OWNER.password };

async function signedIn(email = OWNER.email, password = OWNER.password): Promise<string> {
  const result = await anonymous().auth.signin({ email, password });
  if (!('session' in result)) throw new Error('expected a session');
  return result.session.token;
}

async function ownerSession(): Promise<string> {
  await anonymous().auth.signup(OWNER);
  return signedIn();
}

function currentCode(secret: string, offsetSteps = 0): string {
  return hotp(base32Decode(secret), totpStep(nowMs) + offsetSteps);
}

describe('signup', () => {
  it('makes the first account the owner, then is closed until the owner opens it', async () => {
    const { user } = await anonymous().auth.signup(OWNER);
    expect(user).toMatchObject({ email: 'owner@example.com', name: 'Olive Owner', role: 'owner', twoFactorEnabled: false });
    expect(JSON.stringify(user)).not.toContain(OWNER.password);

    const second = { email: 'mia@example.com', password: 'another long one', name: 'Mia' };
    expect(await failure(anonymous().auth.signup(second))).toMatchObject({ code: 'registration_closed' });

    const owner = await signedIn();
    expect((await as(owner).settings.update({ registrationOpen: true })).settings.registrationOpen).toBe(true);
    expect((await anonymous().auth.signup(second)).user.role).toBe('member');
    // Unique case-insensitively.
    expect(await failure(anonymous().auth.signup({ ...second, email: 'MIA@example.COM' }))).toMatchObject({ code: 'conflict' });
  });

  it('refuses a password under 10 characters, naming the field', async () => {
    expect(await failure(anonymous().auth.signup({ ...OWNER, password: 'short1234' }))).toMatchObject({
      code: 'BAD_REQUEST',
    });
    expect(await h.database.store.accounts.countUsers()).toBe(0);
  });

  it('stores an argon2id hash, never the password', async () => {
    await anonymous().auth.signup(OWNER);
    const user = await h.database.store.accounts.getUserByEmail('owner@example.com');
    expect(user?.passwordHash).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    expect(user?.passwordHash).not.toContain(OWNER.password);
  });
});

describe('signin and sessions', () => {
  it('answers a session and sets the cookie; the token works as a bearer with full access', async () => {
    await anonymous().auth.signup(OWNER);
    const cookies: string[] = [];
    const result = await anonymous(cookies).auth.signin({ email: 'OWNER@example.com', password: OWNER.password });
    if (!('session' in result)) throw new Error('expected a session');
    expect(result.session.token).toMatch(/^slw_ses_[\w-]{43}$/);
    expect(result.session.expiresAt).toBe(new Date(nowMs + 3600_000).toISOString());
    expect(cookies).toEqual([result.session.token]);
    const api = as(result.session.token);
    const { project } = await api.projects.create({ name: 'Shop', description: '' });
    expect((await api.projects.list()).projects.map((p) => p.id)).toEqual([project.id]);
    expect((await api.user.me()).user.email).toBe('owner@example.com');
    expect(await api.apiKeys.list()).toBeTruthy();
    // Stored hashed.
    expect(JSON.stringify(await h.database.store.accounts.getSessionByHash(result.session.token))).toBe('null');
  });

  it('gives the same 401 invalid_credentials for an unknown email and a wrong password', async () => {
    await anonymous().auth.signup(OWNER);
    const unknown = await failure(anonymous().auth.signin({ email: 'nobody@example.com', password: OWNER.password }));
    const wrong = await failure(anonymous().auth.signin({ email: OWNER.email, password: 'wrong password!' }));
    expect(unknown).toEqual(wrong);
    expect(unknown).toMatchObject({ code: 'invalid_credentials' });
  });

  it('slides the expiry with use, expires when idle, and logout ends it', async () => {
    const token = await ownerSession();
    nowMs += 50 * 60_000;
    await as(token).projects.list();
    nowMs += 50 * 60_000;
    // 100 minutes after sign-in, but 50 after last use: still valid.
    await as(token).projects.list();
    nowMs += 61 * 60_000;
    expect(await failure(as(token).projects.list())).toMatchObject({ code: 'unauthorized' });

    const second = await signedIn();
    const cookies: string[] = [];
    const caller = createCaller({
      services: h.services,
      token: second,
      ip: '10.0.0.1',
      limiter: unlimited,
      cookie: { set: () => {}, clear: () => cookies.push('cleared') },
    });
    expect(await caller.auth.logout()).toEqual({ ok: true });
    expect(cookies).toEqual(['cleared']);
    expect(await failure(as(second).projects.list())).toMatchObject({ code: 'unauthorized' });
  });

  it('backs off an account after 5 failures, refuses even the right password while waiting, and lets it in after', async () => {
    await anonymous().auth.signup(OWNER);
    for (let i = 0; i < 5; i++)
      expect(await failure(anonymous().auth.signin({ email: OWNER.email, password: `wrong-${i}-password` }))).toMatchObject({
        code: 'invalid_credentials',
      });
    const locked = await failure(anonymous().auth.signin(CREDS));
    expect(locked).toMatchObject({ code: 'rate_limited', details: { retryAfterSeconds: 1 } });
    // An unknown account backs off the same way: the lock says nothing about existence.
    for (let i = 0; i < 5; i++) await failure(anonymous().auth.signin({ email: 'ghost@example.com', password: 'whatever-password' }));
    expect(await failure(anonymous().auth.signin({ email: 'ghost@example.com', password: 'x' }))).toMatchObject({ code: 'rate_limited' });
    // Hammering during the wait does not lengthen it; the wait never exceeds 5 minutes.
    for (let i = 0; i < 20; i++) await failure(anonymous().auth.signin(CREDS));
    nowMs += 1_001;
    expect('session' in (await anonymous().auth.signin(CREDS))).toBe(true);
    for (let i = 0; i < 40; i++) {
      await failure(anonymous().auth.signin({ email: OWNER.email, password: 'wrong password!' }));
      nowMs += 5 * 60_000 + 1;
    }
    const capped = await failure(anonymous().auth.signin({ email: OWNER.email, password: 'wrong password!' }));
    expect(capped.code).toBe('invalid_credentials');
  });
});

describe('personal tokens', () => {
  it('are made and listed by a signed-in user only, shown once, and stored hashed', async () => {
    const owner = await ownerSession();
    const made = await as(owner).user.createToken({ name: 'ci', scopes: ['deploy:write', 'project:read'] });
    expect(made.token).toMatch(/^slw_pat_[\w-]{43}$/);
    expect(made.personalToken).toMatchObject({ name: 'ci', scopes: ['deploy:write', 'project:read'], lastUsedAt: null, expiresAt: null });
    const listed = await as(owner).user.listTokens();
    expect(JSON.stringify(listed)).not.toContain(made.token);
    expect(listed.tokens.map((t) => t.id)).toEqual([made.personalToken.id]);

    // Neither an API key nor a token may manage tokens.
    expect(await failure(h.caller().user.createToken({ name: 'x', scopes: ['admin'] }))).toMatchObject({ code: 'forbidden' });
    expect(await failure(as(made.token).user.createToken({ name: 'x', scopes: ['admin'] }))).toMatchObject({ code: 'forbidden' });
    expect(await failure(as(made.token).user.listTokens())).toMatchObject({ code: 'forbidden' });
  });

  it('allow what their scopes allow, and name the missing scope otherwise', async () => {
    const owner = await ownerSession();
    const { project } = await as(owner).projects.create({ name: 'Shop', description: '' });
    const { service } = await as(owner).services.create({ projectId: project.id, name: 'web', repoFullName: 'acme/web' });
    await as(owner).env.set({ serviceId: service.id, key: 'API_TOKEN', value: 'sekrit-value' });
    const envId = (await as(owner).services.overview({ serviceId: service.id })).env[0]!.id;
    const token = async (
      ...scopes: Array<'deploy:write' | 'logs:read' | 'env:read' | 'env:write' | 'db:manage' | 'project:read' | 'project:write' | 'admin'>
    ) => (await as(owner).user.createToken({ name: scopes.join('+'), scopes })).token;

    const reader = await token('project:read');
    expect((await as(reader).projects.list()).projects).toHaveLength(1);
    // The overview says which variables exist, never their values, without env:read.
    const overview = await as(reader).services.overview({ serviceId: service.id });
    expect(overview.env[0]).toMatchObject({ key: 'API_TOKEN', value: '', resolvedValue: '' });
    expect(await failure(as(reader).projects.create({ name: 'No', description: '' }))).toMatchObject({
      code: 'insufficient_scope',
      details: { scope: 'project:write' },
    });
    expect(await failure(as(reader).env.reveal({ serviceId: service.id, envId }))).toMatchObject({
      code: 'insufficient_scope',
      details: { scope: 'env:read' },
    });
    expect(await failure(as(reader).deployments.create({ serviceId: service.id }))).toMatchObject({
      details: { scope: 'deploy:write' },
    });
    expect(await failure(as(reader).settings.get())).toMatchObject({ details: { scope: 'admin' } });

    const envReader = await token('env:read');
    expect((await as(envReader).env.reveal({ serviceId: service.id, envId })).value).toBe('sekrit-value');
    expect(await failure(as(envReader).projects.list())).toMatchObject({ details: { scope: 'project:read' } });

    const deployer = await token('deploy:write');
    expect((await as(deployer).deployments.create({ serviceId: service.id })).deployment.status).toBe('queued');
    expect(await failure(as(deployer).env.set({ serviceId: service.id, key: 'X', value: 'y' }))).toMatchObject({
      details: { scope: 'env:write' },
    });

    // A database service needs db:manage on top of project:write.
    const writer = await token('project:write');
    expect(
      await failure(
        as(writer).services.create({ projectId: project.id, name: 'db', repoUrl: 'database', repoFullName: 'database:postgres' }),
      ),
    ).toMatchObject({ details: { scope: 'db:manage' } });

    const admin = await token('admin');
    expect((await as(admin).settings.get()).settings).toBeTruthy();
    expect((await as(admin).env.reveal({ serviceId: service.id, envId })).value).toBe('sekrit-value');
  });

  it('never exceed the user: a member token with admin cannot manage settings, keys or users', async () => {
    const owner = await ownerSession();
    await as(owner).settings.update({ registrationOpen: true });
    await anonymous().auth.signup({ email: 'mia@example.com', password: 'member password', name: 'Mia' });
    const member = await signedIn('mia@example.com', 'member password');
    const { token } = await as(member).user.createToken({ name: 'all', scopes: ['admin'] });
    for (const call of [() => as(token).settings.get(), () => as(token).apiKeys.list(), () => as(token).users.list()])
      expect(await failure(call())).toMatchObject({ code: 'forbidden' });
    expect(await failure(as(member).settings.get())).toMatchObject({ code: 'forbidden' });
    // Members use projects.
    expect((await as(token).projects.create({ name: 'Mine', description: '' })).project.name).toBe('Mine');
  });

  it('are refused once revoked, expired, or their user removed', async () => {
    const owner = await ownerSession();
    const a = await as(owner).user.createToken({ name: 'a', scopes: ['project:read'] });
    const b = await as(owner).user.createToken({
      name: 'b',
      scopes: ['project:read'],
      expiresAt: new Date(nowMs + 60_000).toISOString(),
    });
    await as(a.token).projects.list();
    expect((await as(owner).user.listTokens()).tokens.find((t) => t.id === a.personalToken.id)?.lastUsedAt).toBe(
      new Date(nowMs).toISOString(),
    );
    await as(owner).user.deleteToken({ id: a.personalToken.id });
    expect(await failure(as(a.token).projects.list())).toMatchObject({ code: 'unauthorized' });
    await as(b.token).projects.list();
    nowMs += 60_001;
    expect(await failure(as(b.token).projects.list())).toMatchObject({ code: 'unauthorized' });
    expect(
      await failure(as(owner).user.createToken({ name: 'past', scopes: ['admin'], expiresAt: new Date(nowMs - 1).toISOString() })),
    ).toMatchObject({ details: { field: 'expiresAt' } });
    expect(await failure(as(owner).user.deleteToken({ id: a.personalToken.id }))).toMatchObject({ code: 'not_found' });
  });
});

describe('two-factor authentication', () => {
  it('sets up, confirms, challenges at sign-in, refuses replays, takes a recovery code once, and disables', async () => {
    const owner = await ownerSession();
    const setup = await as(owner).auth.twoFactorSetup();
    expect(setup.secret).toMatch(/^[A-Z2-7]{32}$/);
    expect(setup.otpauthUri).toContain(`secret=${setup.secret}`);
    expect(setup.qrCode).toMatch(/^data:image\/png;base64,/);
    expect(setup.recoveryCodes).toHaveLength(10);
    expect(new Set(setup.recoveryCodes).size).toBe(10);
    // Not active until confirmed.
    expect('session' in (await anonymous().auth.signin(CREDS))).toBe(true);
    expect(await failure(as(owner).auth.twoFactorVerify({ code: '000000' }))).toMatchObject({ code: 'invalid_credentials' });
    expect(await as(owner).auth.twoFactorVerify({ code: currentCode(setup.secret) })).toEqual({ ok: true });
    expect((await as(owner).user.me()).user.twoFactorEnabled).toBe(true);

    // Sealed at rest: neither the secret nor a recovery code is in the row.
    const row = JSON.stringify(await h.database.store.accounts.getUserByEmail('owner@example.com'));
    expect(row).not.toContain(setup.secret);
    for (const code of setup.recoveryCodes) expect(row).not.toContain(code);

    const first = await anonymous().auth.signin(CREDS);
    expect(first).toEqual({ twoFactorRequired: true, challengeId: expect.any(String) });
    if (!('challengeId' in first)) throw new Error('expected a challenge');
    // The code that confirmed the setup was used: not again, in its window.
    expect(
      await failure(anonymous().auth.twoFactorVerify({ challengeId: first.challengeId, code: currentCode(setup.secret) })),
    ).toMatchObject({ code: 'invalid_credentials' });
    nowMs += 30_000;
    const done = await anonymous().auth.twoFactorVerify({ challengeId: first.challengeId, code: currentCode(setup.secret) });
    expect('session' in done && done.session.token).toMatch(/^slw_ses_/);
    // The challenge is spent.
    expect(
      await failure(anonymous().auth.twoFactorVerify({ challengeId: first.challengeId, code: currentCode(setup.secret, 1) })),
    ).toMatchObject({
      code: 'invalid_credentials',
    });

    const second = await anonymous().auth.signin(CREDS);
    if (!('challengeId' in second)) throw new Error('expected a challenge');
    const recovery = setup.recoveryCodes[3]!;
    expect('session' in (await anonymous().auth.twoFactorVerify({ challengeId: second.challengeId, code: recovery.toUpperCase() }))).toBe(
      true,
    );
    const third = await anonymous().auth.signin(CREDS);
    if (!('challengeId' in third)) throw new Error('expected a challenge');
    expect(await failure(anonymous().auth.twoFactorVerify({ challengeId: third.challengeId, code: recovery }))).toMatchObject({
      code: 'invalid_credentials',
    });

    // A challenge ends after 5 wrong codes.
    for (let i = 0; i < 4; i++) await failure(anonymous().auth.twoFactorVerify({ challengeId: third.challengeId, code: '123456' }));
    nowMs += 30_000;
    expect(
      await failure(anonymous().auth.twoFactorVerify({ challengeId: third.challengeId, code: currentCode(setup.secret) })),
    ).toMatchObject({
      message: expect.stringContaining('challenge'),
    });

    nowMs += 5 * 60_000;
    expect(await failure(as(owner).auth.twoFactorDisable({ code: '000000' }))).toMatchObject({ code: 'invalid_credentials' });
    expect(await as(owner).auth.twoFactorDisable({ code: currentCode(setup.secret) })).toEqual({ ok: true });
    expect('session' in (await anonymous().auth.signin(CREDS))).toBe(true);
  });

  it('backs off guessed codes per account, across challenges', async () => {
    const owner = await ownerSession();
    const setup = await as(owner).auth.twoFactorSetup();
    await as(owner).auth.twoFactorVerify({ code: currentCode(setup.secret) });
    const challenge = async () => {
      const result = await anonymous().auth.signin(CREDS);
      if (!('challengeId' in result)) throw new Error('expected a challenge');
      return result.challengeId;
    };
    const first = await challenge();
    for (let i = 0; i < 3; i++) await failure(anonymous().auth.twoFactorVerify({ challengeId: first, code: '000000' }));
    const second = await challenge();
    for (let i = 0; i < 2; i++) await failure(anonymous().auth.twoFactorVerify({ challengeId: second, code: '000001' }));
    // Five wrong codes in a row for this account: the next one waits, whichever challenge it names.
    expect(await failure(anonymous().auth.twoFactorVerify({ challengeId: second, code: setup.recoveryCodes[0]! }))).toMatchObject({
      code: 'rate_limited',
    });
    nowMs += 1_001;
    const done = await anonymous().auth.twoFactorVerify({ challengeId: second, code: setup.recoveryCodes[0]! });
    expect('session' in done).toBe(true);
  });

  it('is the signed-in user’s own: a token or an API key cannot set it up or turn it off', async () => {
    const owner = await ownerSession();
    const { token } = await as(owner).user.createToken({ name: 'all', scopes: ['admin'] });
    expect(await failure(as(token).auth.twoFactorSetup())).toMatchObject({ code: 'forbidden' });
    expect(await failure(h.caller().auth.twoFactorSetup())).toMatchObject({ code: 'forbidden' });
    expect(await failure(as(token).auth.twoFactorVerify({ code: '123456' }))).toMatchObject({ code: 'forbidden' });
    expect(await failure(anonymous().auth.twoFactorVerify({ code: '123456' }))).toMatchObject({ code: 'unauthorized' });
  });
});

describe('password reset', () => {
  it('mails a single-use link that sets the password and ends every session', async () => {
    const session = await ownerSession();
    expect(await anonymous().auth.forgotPassword({ email: 'nobody@example.com' })).toEqual({ ok: true });
    expect(await anonymous().auth.forgotPassword({ email: 'OWNER@example.com' })).toEqual({ ok: true });
    await new Promise((resolve) => setImmediate(resolve));
    expect(mails).toHaveLength(1);
    expect(mails[0]!.to).toBe('owner@example.com');
    const link = /https:\/\/slipway\.example\.com\/reset-password\?token=(slw_rst_[\w-]+)/.exec(mails[0]!.text);
    expect(link).not.toBeNull();
    const token = decodeURIComponent(link![1]!);
    // Stored hashed.
    expect(await h.database.store.accounts.getResetByHash(token)).toBeNull();

    expect(await anonymous().auth.resetPassword({ token, password: 'a brand new password' })).toEqual({ ok: true });
    expect(await failure(as(session).projects.list())).toMatchObject({ code: 'unauthorized' });
    expect(await failure(anonymous().auth.signin(CREDS))).toMatchObject({ code: 'invalid_credentials' });
    expect('session' in (await anonymous().auth.signin({ email: OWNER.email, password: 'a brand new password' }))).toBe(true);
    // Once only.
    expect(await failure(anonymous().auth.resetPassword({ token, password: 'yet another password' }))).toMatchObject({
      details: { field: 'token' },
    });
    expect(
      await failure(anonymous().auth.resetPassword({ token: `slw_rst_${'A'.repeat(43)}`, password: 'guessed password!' })),
    ).toMatchObject({
      details: { field: 'token' },
    });
  });

  it('expires after an hour', async () => {
    await ownerSession();
    await anonymous().auth.forgotPassword({ email: OWNER.email });
    await new Promise((resolve) => setImmediate(resolve));
    const token = decodeURIComponent(/token=([^\s]+)/.exec(mails[0]!.text)![1]!);
    nowMs += 3600_001;
    expect(await failure(anonymous().auth.resetPassword({ token, password: 'a brand new password' }))).toMatchObject({
      details: { field: 'token' },
    });
  });
});

describe('SMTP from the settings', () => {
  it('overrides the configured mailer, is stored sealed and never shown', async () => {
    const made: Array<{ url: string; from: string }> = [];
    const viaSettings: MailMessage[] = [];
    await h.close();
    h = await createHarness({
      clock: { now: () => new Date(nowMs) },
      accounts: {
        mailer,
        mailerFor: (smtp) => {
          made.push(smtp);
          return { send: async (message) => void viaSettings.push(message) };
        },
        appUrl: () => 'https://slipway.example.com',
      },
    });
    const owner = await ownerSession();
    expect(await failure(as(owner).settings.update({ smtpUrl: 'http://mail.example.com' }))).toMatchObject({
      details: { field: 'smtpUrl' },
    });
    const url = 'smtp://mailer:p%40ss-w0rd@mail.example.com:2525';
    const { settings } = await as(owner).settings.update({ smtpUrl: url, mailFrom: 'Ops <ops@example.com>' });
    expect(settings).toMatchObject({ smtpConfigured: true, mailFrom: 'Ops <ops@example.com>' });
    expect(JSON.stringify(await as(owner).settings.get())).not.toContain('p%40ss');
    expect(await h.database.store.settings.get('platform')).not.toContain('p%40ss');

    await anonymous().auth.forgotPassword({ email: OWNER.email });
    await new Promise((resolve) => setImmediate(resolve));
    expect(made).toEqual([{ url, from: 'Ops <ops@example.com>' }]);
    expect(viaSettings).toHaveLength(1);
    expect(mails).toHaveLength(0);

    // Cleared: the configured one (SMTP_URL) applies again.
    expect((await as(owner).settings.update({ smtpUrl: null })).settings.smtpConfigured).toBe(false);
    await anonymous().auth.forgotPassword({ email: OWNER.email });
    await new Promise((resolve) => setImmediate(resolve));
    expect(mails).toHaveLength(1);
  });
});

describe('users', () => {
  it('are managed by the owner; admins list them; members cannot; the owner is never demoted or removed', async () => {
    const owner = await ownerSession();
    await as(owner).settings.update({ registrationOpen: true });
    nowMs += 1000;
    const { user: mia } = await anonymous().auth.signup({ email: 'mia@example.com', password: 'member password', name: 'Mia' });
    nowMs += 1000;
    const { user: ada } = await anonymous().auth.signup({ email: 'ada@example.com', password: 'member password', name: 'Ada' });
    const members = await as(owner).users.list();
    expect(members.users.map((u) => u.role)).toEqual(['owner', 'member', 'member']);
    expect(JSON.stringify(members)).not.toContain('argon2');

    const miaSession = await signedIn('mia@example.com', 'member password');
    expect(await failure(as(miaSession).users.list())).toMatchObject({ code: 'forbidden' });
    expect((await as(owner).users.setRole({ userId: mia.id, role: 'admin' })).user.role).toBe('admin');
    // The role applies to sessions already open.
    expect((await as(miaSession).users.list()).users).toHaveLength(3);
    expect(await failure(as(miaSession).users.setRole({ userId: ada.id, role: 'admin' }))).toMatchObject({ code: 'forbidden' });
    const ownerId = members.users[0]!.id;
    expect(await failure(as(owner).users.remove({ userId: ownerId }))).toMatchObject({ code: 'forbidden' });

    const adaSession = await signedIn('ada@example.com', 'member password');
    await as(owner).users.remove({ userId: ada.id });
    expect(await failure(as(adaSession).projects.list())).toMatchObject({ code: 'unauthorized' });
    // The installation's all-project write key manages users too.
    expect((await h.caller().users.list()).users).toHaveLength(2);
  });
});

describe('races', () => {
  it('one code sent twice at once completes one sign-in', async () => {
    const owner = await ownerSession();
    const setup = await as(owner).auth.twoFactorSetup();
    await as(owner).auth.twoFactorVerify({ code: currentCode(setup.secret) });
    nowMs += 30_000;
    const a = await anonymous().auth.signin(CREDS);
    const b = await anonymous().auth.signin(CREDS);
    if (!('challengeId' in a) || !('challengeId' in b)) throw new Error('expected challenges');
    const code = currentCode(setup.secret);
    const results = await Promise.allSettled([
      anonymous().auth.twoFactorVerify({ challengeId: a.challengeId, code }),
      anonymous().auth.twoFactorVerify({ challengeId: b.challengeId, code }),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
  });

  it('on PostgreSQL, two first signups that both saw no users cannot both claim the installation', async () => {
    const scratch = await createScratchDatabase();
    await h.close();
    h = await createHarness({ databaseUrl: scratch.url });
    try {
      // Both transactions count the users (none) before either claims: the interleaving a race produces.
      let counted = 0;
      let release!: () => void;
      const bothCounted = new Promise<void>((resolve) => (release = resolve));
      const attempt = (userId: string) =>
        h.database.store.transaction(async (tx) => {
          expect(await tx.accounts.countUsers()).toBe(0);
          if (++counted === 2) release();
          await bothCounted;
          await tx.accounts.claimOwnership(userId, new Date(nowMs));
        });
      const results = await Promise.allSettled([attempt('a'.repeat(32)), attempt('b'.repeat(32))]);
      expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
      expect(((results.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason as Error).constructor.name).toBe(
        'ConflictError',
      );
    } finally {
      await h.close();
      await scratch.drop();
      h = await createHarness();
    }
  });
});

describe('on PostgreSQL', () => {
  it('the whole flow: JSON columns (scopes, recovery codes), booleans and timestamps read back as on SQLite', async () => {
    const scratch = await createScratchDatabase();
    await h.close();
    h = await createHarness({
      databaseUrl: scratch.url,
      clock: { now: () => new Date(nowMs) },
      accounts: { mailer, sessionTtlMs: 3600_000, appUrl: () => 'https://slipway.example.com' },
    });
    try {
      const owner = await ownerSession();
      const { token, personalToken } = await as(owner).user.createToken({ name: 'ci', scopes: ['project:read', 'env:read'] });
      expect(personalToken.scopes).toEqual(['project:read', 'env:read']);
      expect((await as(owner).user.listTokens()).tokens[0]!.scopes).toEqual(['project:read', 'env:read']);
      expect((await as(token).projects.list()).projects).toEqual([]);
      expect(await failure(as(token).projects.create({ name: 'x', description: '' }))).toMatchObject({
        details: { scope: 'project:write' },
      });

      const setup = await as(owner).auth.twoFactorSetup();
      await as(owner).auth.twoFactorVerify({ code: currentCode(setup.secret) });
      expect((await as(owner).user.me()).user.twoFactorEnabled).toBe(true);
      const challenge = await anonymous().auth.signin(CREDS);
      if (!('challengeId' in challenge)) throw new Error('expected a challenge');
      expect(
        'session' in (await anonymous().auth.twoFactorVerify({ challengeId: challenge.challengeId, code: setup.recoveryCodes[9]! })),
      ).toBe(true);
      expect((await h.database.store.accounts.getUserByEmail('owner@example.com'))!.recoveryCodeHashes).toHaveLength(9);

      await anonymous().auth.forgotPassword({ email: OWNER.email });
      await new Promise((resolve) => setImmediate(resolve));
      const resetToken = decodeURIComponent(/token=([^\s]+)/.exec(mails[0]!.text)![1]!);
      await anonymous().auth.resetPassword({ token: resetToken, password: 'postgres new password' });
      expect(await failure(as(owner).projects.list())).toMatchObject({ code: 'unauthorized' });
      expect(await failure(anonymous().auth.resetPassword({ token: resetToken, password: 'again and again' }))).toMatchObject({
        details: { field: 'token' },
      });
    } finally {
      await h.close();
      await scratch.drop();
      h = await createHarness();
    }
  });
});
