import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectErrorShape } from '../helpers/error-bodies.js';
import { createScratchDatabase } from '../helpers/postgres.js';
import { api, startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { startReceivers } from '../standins/notify-receivers.js';

/*
 * Two platform processes against one PostgreSQL database, as a cluster runs them (one SECRET_KEY,
 * each its own data directory), each started as `npm start` does: the per-address budgets of the
 * authentication endpoints, the failed-authentication count and the per-account sign-in backoff
 * are the database's, so a client spreading its attempts over both processes gets no more of them
 * than from one; the public webhook door's per-address budget likewise. TRUST_PROXY=true lets each test speak from an address of its own.
 * The event loops (dispatcher, delivery worker, exit watcher, monitors) run in one of the two only,
 * the holder of the leader lease; the other takes over when it stops.
 */
let db: Awaited<ReturnType<typeof createScratchDatabase>>;
let first: ServerProcess;
let second: ServerProcess;
let receivers: Awaited<ReturnType<typeof startReceivers>>;
let ipSeq = 0;
const newIp = () => `198.51.100.${++ipSeq}`;
const OWNER = { email: 'owner@shared.test', password: 'owner password long', name: 'Owner' };

function from(server: ServerProcess, ip: string, token?: string) {
  const call = api(server.url, token);
  return (method: string, pathname: string, body?: unknown) => call(method, pathname, body, { 'x-forwarded-for': ip });
}

/** The two processes in turn: request i goes to the first when i is even. */
const either = (i: number) => (i % 2 === 0 ? first : second);

beforeAll(async () => {
  db = await createScratchDatabase();
  receivers = await startReceivers();
  const env = {
    DATABASE_URL: db.url,
    SECRET_KEY: randomBytes(24).toString('hex'),
    TRUST_PROXY: 'true',
    AUTH_FAILURES_PER_MINUTE: '4',
    WEBHOOK_RATE_LIMIT_PER_MINUTE: '4',
    NOTIFY_ALLOW_PRIVATE_TARGETS: 'true',
    TELEGRAM_API_URL: receivers.telegram.origin,
    // Leases are checked at every heartbeat: a stopped leader's duties move within half a second.
    CONTROL_PLANE_HEARTBEAT_MS: '500',
    CONTROL_PLANE_DEAD_AFTER_MS: '3000',
  };
  // One after the other: the first runs the migrations.
  first = await startServerProcess(env);
  second = await startServerProcess(env);
  const res = await from(first, newIp())('POST', '/api/auth/signup', OWNER);
  expect(res.status, res.text).toBe(201);
}, 120_000);

afterAll(async () => {
  await first?.dispose();
  await second?.dispose();
  await db?.drop();
  await receivers?.close();
}, 60_000);

describe('limits shared by two processes on one database', () => {
  it("signin: one address's 11th request in a minute, over both processes, gets 429", async () => {
    const ip = newIp();
    for (let i = 0; i < 10; i++) {
      const res = await from(either(i), ip)('POST', '/api/auth/signin', { email: `nobody${i}@shared.test`, password: 'whatever it is' });
      expect(res.status, `request ${i + 1}: ${res.text}`).toBe(401);
    }
    for (const server of [first, second]) {
      const eleventh = await from(server, ip)('POST', '/api/auth/signin', { email: OWNER.email, password: OWNER.password });
      expectErrorShape(eleventh, 429, 'signin 11th');
      expect(Number(eleventh.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(Number(eleventh.headers.get('retry-after'))).toBeLessThanOrEqual(60);
    }
    // Another address is not affected.
    expect((await from(second, newIp())('POST', '/api/auth/signin', { email: OWNER.email, password: OWNER.password })).status).toBe(200);
  });

  it('signup: the 6th request from one address over both processes gets 429', async () => {
    const ip = newIp();
    for (let i = 0; i < 5; i++) {
      const res = await from(either(i), ip)('POST', '/api/auth/signup', { email: `limit${i}@shared.test`, password: 'x', name: 'l' });
      expect(res.status, res.text).toBe(400);
    }
    expectErrorShape(
      await from(second, ip)('POST', '/api/auth/signup', { email: 'l6@shared.test', password: 'x', name: 'l' }),
      429,
      'signup 6th',
    );
  });

  it("an account's backoff counts failures at either process and holds at both", async () => {
    // Backoff is per email whether or not an account has it: no account is needed.
    const email = 'backoff@shared.test';
    const password = 'backoff password';
    for (let i = 0; i < 5; i++) {
      const res = await from(either(i), newIp())('POST', '/api/auth/signin', { email, password: `wrong ${i} pw` });
      expectErrorShape(res, 401, `failure ${i + 1}`);
    }
    for (const server of [first, second]) {
      const locked = await from(server, newIp())('POST', '/api/auth/signin', { email, password });
      expectErrorShape(locked, 429, 'locked');
      expect(locked.headers.get('retry-after')).toBe('1');
    }
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expectErrorShape(await from(second, newIp())('POST', '/api/auth/signin', { email, password }), 401, 'after the wait');
  });

  it('failed authentications of one address count at both processes (AUTH_FAILURES_PER_MINUTE=4)', async () => {
    // That count is per fixed minute: the guesses are made within one.
    const left = 60_000 - (Date.now() % 60_000);
    if (left < 15_000) await new Promise((resolve) => setTimeout(resolve, left + 100));
    const ip = newIp();
    for (let i = 0; i < 4; i++) {
      const res = await from(either(i), ip, `slw_guess${i}`)('GET', '/api/projects');
      expectErrorShape(res, 401, `guess ${i + 1}`);
    }
    for (const server of [first, second])
      expectErrorShape(await from(server, ip, 'slw_guess_more')('GET', '/api/projects'), 429, 'guess 5th');
  });

  it('webhook deliveries of one address count at both processes (WEBHOOK_RATE_LIMIT_PER_MINUTE=4)', async () => {
    // The public door counts before it reads anything: deliveries to a project that does not exist are 404s, and count.
    const ip = newIp();
    for (let i = 0; i < 4; i++) {
      const res = await from(either(i), ip)('POST', '/api/hooks/nosuchproject', { zen: 'hello' });
      expectErrorShape(res, 404, `delivery ${i + 1}`);
    }
    for (const server of [first, second]) {
      const fifth = await from(server, ip)('POST', '/api/hooks/nosuchproject', { zen: 'hello' });
      expectErrorShape(fifth, 429, 'delivery 5th');
      expect(Number(fifth.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    }
    // Another address is not affected.
    expectErrorShape(await from(second, newIp())('POST', '/api/hooks/nosuchproject', { zen: 'hello' }), 404, 'another address');
  });
});

describe('the event loops of two processes on one database', () => {
  const leads = (server: ServerProcess) => server.output().match(/"msg":"this control plane leads"[^\n]*"lease":"events"/g)?.length ?? 0;

  async function until(what: string, probe: () => boolean, ms = 15_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!probe()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  it('run in the leader only: an event published at the other is delivered once; when the leader stops, the other leads and delivers', async () => {
    await until('a leader', () => leads(first) + leads(second) > 0);
    // Four heartbeats: the other has asked for the lease since and was refused.
    await new Promise((r) => setTimeout(r, 2_000));
    expect(leads(first) + leads(second)).toBe(1);
    const [leader, follower] = leads(first) === 1 ? [first, second] : [second, first];
    const call = api(follower.url, follower.token);
    const channel = await call('POST', '/api/notifications/channels', {
      type: 'webhook',
      name: 'keys',
      config: receivers.webhook.config(),
    });
    expect(channel.status, channel.text).toBe(201);
    receivers.webhook.secret = channel.json.secret;
    const rule = await call('POST', '/api/notifications/rules', {
      projectId: null,
      events: ['api_key.created'],
      channelIds: [channel.json.channel.id],
    });
    expect(rule.status, rule.text).toBe(201);

    expect((await call('POST', '/api/api-keys', { name: 'one', access: 'read' })).status).toBe(201);
    const [one] = await receivers.webhook.waitFor(1);
    expect(one!.json).toMatchObject({ type: 'api_key.created', data: { data: { name: 'one' } } });

    // The leader stops (it gives the lease up): the follower leads at its next heartbeat and delivers the next.
    expect(await leader.stop()).toBe(0);
    await until('the follower to lead', () => leads(follower) === 1, 10_000);
    expect((await call('POST', '/api/api-keys', { name: 'two', access: 'read' })).status).toBe(201);
    const [, two] = await receivers.webhook.waitFor(2);
    expect(two!.json).toMatchObject({ type: 'api_key.created', data: { data: { name: 'two' } } });
    await new Promise((r) => setTimeout(r, 1_000));
    expect(receivers.webhook.received).toHaveLength(2);
    expect(receivers.webhook.refused).toEqual([]);
  }, 60_000);
});
