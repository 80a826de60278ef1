import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { GuardedHttp } from '../../adapters/notify/guarded-http.js';
import type { DomainError, Actor } from '../../src/index.js';
import { retryDelayMs } from '../../src/notifications/delivery-worker.js';
import { isPrivateAddress } from '../../src/notifications/private-address.js';
import { eventsHarness, type EventsHarness } from '../helpers/events-harness.js';
import { startSmtpServer } from '../helpers/smtp-server.js';
import { NotifyReceiver, startReceivers, type ReceiverKind } from '../standins/notify-receivers.js';

const owner: Actor = { keyId: 'owner', access: 'write', projectIds: null };
const scoped: Actor = { keyId: 'scoped', access: 'write', projectIds: ['p'] };
const service = { projectId: 'proj1', environmentId: 'proj1', serviceId: 'svc1', serviceName: 'web' };
const failed = { ...service, deploymentId: 'dep1', trigger: 'manual', commitSha: '0123456789abcdef0123', reason: 'RUN npm ci exited 1' };

let h: EventsHarness;
afterEach(async () => {
  await h?.close();
});

async function errorOf(promise: Promise<unknown>): Promise<DomainError> {
  try {
    await promise;
  } catch (error) {
    return error as DomainError;
  }
  throw new Error('expected a rejection');
}

async function channelTo(receiver: NotifyReceiver, events: string[] = ['*'], projectId: string | null = null) {
  const { channel, secret } = await h.notifications.createChannel(owner, {
    type: receiver.kind,
    name: receiver.kind,
    config: receiver.config(),
  });
  if (secret) receiver.secret = secret;
  await h.notifications.createRule(owner, { projectId, events, channelIds: [channel.id] });
  return channel;
}

describe('each channel in its vendor format, checked by a receiver of that format', () => {
  let receivers: Awaited<ReturnType<typeof startReceivers>>;
  beforeEach(async () => {
    h = await eventsHarness();
    receivers = await startReceivers();
  });
  afterEach(async () => {
    await receivers.close();
  });

  const kinds: ReceiverKind[] = ['slack', 'discord', 'telegram', 'teams', 'ntfy', 'gotify', 'webhook'];
  for (const kind of kinds) {
    it(`${kind}: a published event and a test message arrive in the documented shape`, async () => {
      h.deps.config = { ...h.deps.config, events: { ...h.deps.config.events, telegramApiUrl: receivers.telegram.origin } };
      const receiver = receivers[kind];
      const channel = await channelTo(receiver);
      await h.publisher.publish('deployment.failed', failed);
      await h.flush();
      const [message] = await receiver.waitFor(1);
      expect(receiver.refused).toEqual([]);
      const test = await h.notifications.testChannel(owner, channel.id);
      expect(test).toMatchObject({ ok: true, error: null });
      await receiver.waitFor(2);
      const text = message!.body;
      expect(text).toContain('web');
      if (kind === 'slack')
        expect(message!.json.blocks[0]).toMatchObject({ type: 'header', text: { type: 'plain_text', text: 'Deployment failed: web' } });
      if (kind === 'discord') expect(message!.json.embeds[0]).toMatchObject({ title: 'Deployment failed: web', color: 0xef4444 });
      if (kind === 'telegram') expect(message!.json).toMatchObject({ chat_id: '-1001234567890', parse_mode: 'HTML' });
      if (kind === 'teams') expect(message!.json.attachments[0].content.type).toBe('AdaptiveCard');
      if (kind === 'ntfy') expect(message!.headers).toMatchObject({ title: 'Deployment failed: web', priority: '5' });
      if (kind === 'gotify') expect(message!.json).toMatchObject({ title: 'Deployment failed: web', priority: 8 });
      if (kind === 'webhook') {
        expect(message!.json).toMatchObject({ type: 'deployment.failed', data: { type: 'deployment.failed', data: failed } });
        expect(message!.headers['webhook-id']).toMatch(/^msg_[a-z0-9]+$/);
        // The reference implementation agrees with the signature.
        expect(() => new Webhook(receiver.secret).verify(message!.body, message!.headers as Record<string, string>)).not.toThrow();
      }
      const { deliveries } = await h.notifications.listDeliveries(owner, { channelId: channel.id });
      expect(deliveries.map((d) => [d.eventType, d.status])).toEqual([
        ['notification.test', 'succeeded'],
        ['deployment.failed', 'succeeded'],
      ]);
      expect(deliveries[1]!.attempts).toEqual([expect.objectContaining({ attempt: 1, ok: true, error: null })]);
    });
  }

  it('email: the mail reaches a real SMTP server', async () => {
    const smtp = await startSmtpServer();
    await h.close();
    h = await eventsHarness({ smtpUrl: smtp.url });
    try {
      const { channel } = await h.notifications.createChannel(owner, { type: 'email', name: 'ops', config: { to: ['ops@example.com'] } });
      await h.notifications.createRule(owner, { projectId: null, events: ['deployment.*'], channelIds: [channel.id] });
      await h.publisher.publish('deployment.failed', failed);
      await h.flush();
      const mail = await smtp.waitFor('ops@example.com');
      expect(mail.raw).toContain('Subject: [Slipway] Deployment failed: web');
      expect(mail.raw).toContain('RUN npm ci exited 1');
    } finally {
      await smtp.close();
    }
  });

  it('email without an SMTP server: the test send says so', async () => {
    const { channel } = await h.notifications.createChannel(owner, { type: 'email', name: 'ops', config: { to: ['ops@example.com'] } });
    expect(await h.notifications.testChannel(owner, channel.id)).toMatchObject({
      ok: false,
      error: expect.stringContaining('No SMTP server'),
    });
  });
});

describe('delivery: at least once, every attempt recorded', () => {
  let receiver: NotifyReceiver;
  beforeEach(async () => {
    h = await eventsHarness({ events: { retryBaseMs: 40, retryTries: 7, deliveryTimeoutMs: 400 } });
    receiver = await new NotifyReceiver('webhook').start();
  });
  afterEach(async () => {
    await receiver.close();
  });

  async function waitForDelivery(channelId: string, done: (d: { status: string; attempts: unknown[] }) => boolean, ms = 10_000) {
    const deadline = Date.now() + ms;
    for (;;) {
      await h.flush();
      const { deliveries } = await h.notifications.listDeliveries(owner, { channelId });
      const delivery = deliveries.find((d) => d.eventType !== 'notification.test');
      if (delivery && done(delivery)) return delivery;
      if (Date.now() > deadline) throw new Error(`delivery not done: ${JSON.stringify(delivery)}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  it('a receiver that fails 3 times and then succeeds gets the message on the 4th attempt, with the same webhook-id', async () => {
    const channel = await channelTo(receiver);
    receiver.failNext(3);
    await h.publisher.publish('backup.failed', { ...service, backupId: 'b1', storage: 'disk', sizeBytes: null, error: 'pg_dump exited 1' });
    const delivery = await waitForDelivery(channel.id, (d) => d.status === 'succeeded');
    expect(delivery.attempts.map((a) => [a.attempt, a.ok, a.statusCode])).toEqual([
      [1, false, 500],
      [2, false, 500],
      [3, false, 500],
      [4, true, 204],
    ]);
    expect(delivery.attempts[0]!.error).toBe('The webhook answered 500 internal error');
    const [message] = await receiver.waitFor(1);
    expect(message!.headers['webhook-id']).toBe(`msg_${delivery.id}`);
    expect(receiver.received).toHaveLength(1);
    // Each wait doubles the one before it.
    const times = delivery.attempts.map((a) => Date.parse(a.at));
    expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(40);
    expect(times[3]! - times[2]!).toBeGreaterThanOrEqual(160);
  });

  it('the retry schedule: 60 s doubling, 7 tries spanning about an hour', () => {
    const waits = [1, 2, 3, 4, 5, 6].map((n) => retryDelayMs(60_000, n));
    expect(waits).toEqual([60_000, 120_000, 240_000, 480_000, 960_000, 1_920_000]);
    expect(waits.reduce((a, b) => a + b, 0) / 60_000).toBe(63);
  });

  it('a receiver that hangs: each attempt ends at the timeout, is recorded, and the delivery fails after its tries', async () => {
    h.deps.config = { ...h.deps.config, events: { ...h.deps.config.events, retryTries: 2 } };
    const channel = await channelTo(receiver);
    receiver.hang();
    await h.publisher.publish('backup.failed', { ...service, backupId: 'b1', storage: 'disk', sizeBytes: null, error: 'x' });
    const delivery = await waitForDelivery(channel.id, (d) => d.status === 'failed');
    expect(delivery.attempts).toHaveLength(2);
    for (const attempt of delivery.attempts) {
      expect(attempt).toMatchObject({ ok: false, statusCode: null, error: expect.stringMatching(/within/) });
      expect(attempt.latencyMs).toBeGreaterThanOrEqual(350);
      expect(attempt.latencyMs).toBeLessThan(5_000);
    }
  });

  it('a redirect loop is cut after 5 redirects and recorded', async () => {
    const channel = await channelTo(receiver);
    receiver.redirectLoop();
    const test = await h.notifications.testChannel(owner, channel.id);
    expect(test).toMatchObject({ ok: false, statusCode: 302, error: expect.stringContaining('Too many redirects') });
  });

  it('after 5 failed attempts in a row the channel is failing, in its answer and in health; a success clears it', async () => {
    const channel = await channelTo(receiver);
    receiver.failNext(5);
    for (let i = 0; i < 5; i++) await h.notifications.testChannel(owner, channel.id);
    expect((await h.notifications.getChannel(owner, channel.id)).state).toBe('failing');
    expect(await h.notifications.health()).toMatchObject({
      status: 'failing',
      failing: [{ id: channel.id, name: 'webhook', type: 'webhook', lastError: 'The webhook answered 500 internal error' }],
    });
    await h.notifications.testChannel(owner, channel.id);
    expect((await h.notifications.getChannel(owner, channel.id)).state).toBe('ok');
    expect((await h.notifications.health()).status).toBe('ok');
  });

  it('an unreachable target is saved; its test send answers with the reason', async () => {
    const { channel } = await h.notifications.createChannel(owner, {
      type: 'slack',
      name: 'gone',
      config: { webhookUrl: 'http://127.0.0.1:9/hook' },
    });
    const test = await h.notifications.testChannel(owner, channel.id);
    expect(test).toMatchObject({ ok: false, statusCode: null, error: expect.stringContaining('Could not reach 127.0.0.1:9') });
  });

  it('an event rolled back with its change is never delivered; a committed one is delivered by a later process', async () => {
    await channelTo(receiver);
    await expect(
      h.database.store.transaction(async (tx) => {
        await h.publisher.publish(
          'backup.failed',
          { ...service, backupId: 'rolled-back', storage: 'disk', sizeBytes: null, error: 'x' },
          { store: tx },
        );
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    await h.database.store.transaction((tx) =>
      h.publisher.publish('backup.succeeded', { ...service, backupId: 'kept', storage: 'disk', sizeBytes: 10, error: null }, { store: tx }),
    );
    await h.flush();
    await receiver.waitFor(1);
    expect(receiver.received.map((r) => r.json.data.data.backupId)).toEqual(['kept']);
  });
});

describe('rules', () => {
  let receiver: NotifyReceiver;
  beforeEach(async () => {
    h = await eventsHarness();
    receiver = await new NotifyReceiver('slack').start();
  });
  afterEach(async () => {
    await receiver.close();
  });

  it('route by project and by type pattern; install events reach only install-wide rules', async () => {
    const { channel } = await h.notifications.createChannel(owner, { type: 'slack', name: 's', config: receiver.config() });
    // A project rule needs the project to exist: this one names a project the store does not have.
    expect((await errorOf(h.notifications.createRule(owner, { projectId: 'nope', events: ['*'], channelIds: [channel.id] }))).code).toBe(
      'not_found',
    );
    await h.database.store.projects.insert({
      id: 'proj1',
      name: 'P',
      slug: 'p',
      description: '',
      status: 'idle',
      createdAt: new Date(),
      updatedAt: new Date(),
    });
    await h.notifications.createRule(owner, { projectId: 'proj1', events: ['backup.*'], channelIds: [channel.id] });
    await h.notifications.createRule(owner, { projectId: null, events: ['host.disk_high'], channelIds: [channel.id] });
    await h.publisher.publish('backup.failed', { ...service, backupId: 'b', storage: 'disk', sizeBytes: null, error: 'x' });
    await h.publisher.publish('backup.failed', {
      ...service,
      projectId: 'other',
      backupId: 'b2',
      storage: 'disk',
      sizeBytes: null,
      error: 'x',
    });
    await h.publisher.publish('deployment.failed', failed);
    await h.publisher.publish('host.disk_high', { path: '/data', usedPercent: 93, freeBytes: 1, totalBytes: 10 });
    await h.flush();
    await receiver.waitFor(2);
    await new Promise((resolve) => setTimeout(resolve, 100));
    // Deliveries go out concurrently: which ones arrive is the rule's work, not their order.
    expect(receiver.received.map((r) => r.json.blocks[0].text.text).sort()).toEqual(['Backup failed: web', 'Disk 93% full']);
  });

  it('refuses unknown event types and unknown channels, naming the field', async () => {
    const { channel } = await h.notifications.createChannel(owner, { type: 'slack', name: 's', config: receiver.config() });
    const unknown = await errorOf(
      h.notifications.createRule(owner, { projectId: null, events: ['deployment.failed', 'deploy.exploded'], channelIds: [channel.id] }),
    );
    expect(unknown).toMatchObject({ code: 'validation_error', details: { field: 'events.1' } });
    const noChannel = await errorOf(h.notifications.createRule(owner, { projectId: null, events: ['*'], channelIds: ['nochannel'] }));
    expect(noChannel).toMatchObject({ code: 'validation_error', details: { field: 'channelIds.0' } });
  });

  it('only the install administrators manage channels and rules', async () => {
    const reader: Actor = { keyId: 'r', access: 'read', projectIds: null };
    const member: Actor = { keyId: 'm', access: 'write', projectIds: null, userId: 'u', role: 'member' };
    for (const actor of [reader, member, scoped])
      expect((await errorOf(h.notifications.createChannel(actor, { type: 'slack', name: 's', config: receiver.config() }))).code).toBe(
        'forbidden',
      );
  });
});

describe('channel settings', () => {
  beforeEach(async () => {
    h = await eventsHarness({ events: { allowPrivateTargets: false } });
  });

  it('refuses private, loopback and link-local targets on save, naming the field', async () => {
    for (const url of [
      'http://127.0.0.1:8080/hook',
      'http://10.1.2.3/hook',
      'http://192.168.1.1/hook',
      'http://169.254.169.254/latest/meta-data',
      'http://[::1]/hook',
      'http://[::ffff:127.0.0.1]/hook',
      'http://localhost/hook',
      'http://0.0.0.0/hook',
    ]) {
      const error = await errorOf(h.notifications.createChannel(owner, { type: 'webhook', name: 'w', config: { url } }));
      expect(error, url).toMatchObject({ code: 'validation_error', details: { field: 'config.url' } });
    }
    const slack = await errorOf(
      h.notifications.createChannel(owner, { type: 'slack', name: 's', config: { webhookUrl: 'http://10.0.0.1/x' } }),
    );
    expect(slack.details).toEqual({ field: 'config.webhookUrl' });
  });

  it('refuses malformed URLs, a non-numeric Telegram chat id and unknown config fields', async () => {
    const cases: Array<[string, Record<string, unknown>, string]> = [
      ['slack', { webhookUrl: 'not a url' }, 'config.webhookUrl'],
      ['discord', { webhookUrl: 'ftp://example.com/x' }, 'config.webhookUrl'],
      ['telegram', { botToken: '123456:ABCDEFGHIJKLMNOPQRSTUVWXYZ', chatId: '@mychannel' }, 'config.chatId'],
      ['telegram', { botToken: 'nope', chatId: 1 }, 'config.botToken'],
      ['webhook', { url: 'https://example.com', colour: 'red' }, 'config.colour'],
      ['email', { to: ['not-an-address'] }, 'config.to.0'],
      ['gotify', { url: 'https://gotify.example.com' }, 'config.token'],
    ];
    for (const [type, config, field] of cases) {
      const error = await errorOf(h.notifications.createChannel(owner, { type: type as never, name: 'x', config }));
      expect(error, `${type} ${JSON.stringify(config)}`).toMatchObject({ code: 'validation_error', details: { field } });
    }
  });

  it('stores secrets sealed, masks them in every answer, and shows a webhook secret once', async () => {
    const token = '123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw';
    const telegram = await h.notifications.createChannel(owner, { type: 'telegram', name: 't', config: { botToken: token, chatId: 42 } });
    const slack = await h.notifications.createChannel(owner, {
      type: 'slack',
      name: 's',
      config: { webhookUrl: 'https://hooks.slack.com/services/T000/B000/XXXXSECRETXXXX' },
    });
    const webhook = await h.notifications.createChannel(owner, { type: 'webhook', name: 'w', config: { url: 'https://example.com/hook' } });
    expect(webhook.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(telegram.channel.config).toEqual({ botToken: '********', chatId: '42' });
    expect(slack.channel.config).toEqual({ webhookUrl: 'https://hooks.slack.com/********' });
    const everything = JSON.stringify([
      await h.notifications.listChannels(owner),
      await h.notifications.getChannel(owner, webhook.channel.id),
    ]);
    for (const secret of [token, 'XXXXSECRETXXXX', webhook.secret!]) expect(everything).not.toContain(secret);
    const rows = JSON.stringify(await h.database.store.notifications.listChannels());
    for (const secret of [token, 'XXXXSECRETXXXX', webhook.secret!]) expect(rows).not.toContain(secret);
    // A patch merges over what is stored: the token stays without being sent again.
    const patched = await h.notifications.updateChannel(owner, telegram.channel.id, { name: 'renamed', config: { chatId: -100 } });
    expect(patched).toMatchObject({ name: 'renamed', config: { botToken: '********', chatId: '-100' } });
  });
});

describe('the guarded client', () => {
  it('refuses a private target after resolution, and on a redirect from a trusted one', async () => {
    const receiver = await new NotifyReceiver('webhook').start();
    try {
      const http = new GuardedHttp({ allowPrivate: () => false });
      await expect(http.request({ url: `${receiver.origin}/x`, body: '{}', signal: AbortSignal.timeout(2_000) })).rejects.toThrow(
        /Refused/,
      );
      await expect(http.request({ url: 'http://localhost:9/x', body: '{}', signal: AbortSignal.timeout(2_000) })).rejects.toThrow(
        /Refused/,
      );
      // The operator's own URL may be private; where it redirects to is checked again.
      receiver.redirectLoop();
      await expect(
        http.request({ url: `${receiver.origin}/x`, body: '{}', signal: AbortSignal.timeout(2_000), trusted: true }),
      ).rejects.toThrow(/Refused/);
      expect(await http.check('http://localhost:1/x')).toMatchObject({ ok: false });
      expect(await http.check('https://no-such-host.invalid/x')).toEqual({ ok: true });
    } finally {
      await receiver.close();
    }
  });

  it('knows the private ranges', () => {
    for (const address of [
      '127.0.0.1',
      '10.0.0.1',
      '172.16.0.1',
      '172.31.255.255',
      '192.168.0.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '224.0.0.1',
      '::1',
      '::',
      'fe80::1',
      'fc00::1',
      'fd12:3456::1',
      '::ffff:10.0.0.1',
      '::ffff:7f00:1',
    ])
      expect(isPrivateAddress(address), address).toBe(true);
    for (const address of ['8.8.8.8', '1.1.1.1', '172.32.0.1', '192.169.0.1', '2001:4860:4860::8888', '::ffff:8.8.8.8'])
      expect(isPrivateAddress(address), address).toBe(false);
  });
});
