import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { DEFAULT_EVENTS_CONFIG } from '../../src/index.js';
import { createNotifiers } from '../../adapters/notify/notifiers.js';
import { createHarness, type Harness } from '../helpers/harness.js';
import { startReceivers } from '../standins/notify-receivers.js';

/**
 * The notifications, audit and event-stream routers through createCaller, on SQLite in memory, with
 * the real notifiers posting to loopback receivers that check each vendor's documented shape (the
 * delivery rules themselves: test/unit/notifications.test.ts and test/unit/events.test.ts).
 */

let h: Harness;
let receivers: Awaited<ReturnType<typeof startReceivers>>;

const errorOf = (p: Promise<unknown>) =>
  p.then(
    () => null,
    (e: { code?: string; cause?: { code?: string; details?: unknown }; message?: string }) => ({
      code: e.code,
      error: e.cause?.code,
      details: e.cause?.details,
      message: e.message,
    }),
  );

beforeEach(async () => {
  receivers = await startReceivers();
  const events = {
    ...DEFAULT_EVENTS_CONFIG,
    allowPrivateTargets: true,
    retryBaseMs: 50,
    retryTries: 3,
    telegramApiUrl: receivers.telegram.origin,
  };
  h = await createHarness({
    config: { events },
    events: createNotifiers({ allowPrivate: () => true, telegramApiUrl: () => receivers.telegram.origin }),
  });
  h.services.eventLoops.start();
});
afterEach(async () => {
  await h.close();
  await receivers.close();
});

describe('notification channels, rules and deliveries', () => {
  it('creates every channel type, masks its secrets, routes an event to it and lists the deliveries newest first', async () => {
    const api = h.caller().notifications;
    const kinds = ['slack', 'discord', 'telegram', 'teams', 'ntfy', 'gotify', 'webhook'] as const;
    const channels = [];
    for (const kind of kinds) {
      const { channel, secret } = await api.channels.create({ type: kind, name: `${kind} alerts`, config: receivers[kind].config() });
      expect(channel).toMatchObject({ type: kind, state: 'ok', consecutiveFailures: 0 });
      // No answer holds the token or the URL's secret path.
      expect(JSON.stringify(channel)).not.toContain(receivers[kind].token);
      if (kind === 'webhook') {
        expect(secret).toMatch(/^whsec_/);
        receivers.webhook.secret = secret!;
      } else expect(secret).toBeNull();
      expect((await api.channels.get({ id: channel.id })).channel).toEqual(channel);
      channels.push(channel);
    }
    expect((await api.channels.list()).channels).toHaveLength(kinds.length);
    const { rule } = await api.rules.create({ projectId: null, events: ['api_key.*'], channelIds: channels.map((c) => c.id) });
    expect((await api.rules.list()).rules).toEqual([rule]);

    // An API key made through the API is an event: every channel receives it in its own format.
    await h.caller().apiKeys.create({ name: 'ci', access: 'read' });
    for (const kind of kinds) {
      const [message] = await receivers[kind].waitFor(1);
      expect(receivers[kind].refused).toEqual([]);
      expect(message!.body.length).toBeGreaterThan(0);
    }
    const webhook = (await receivers.webhook.waitFor(1))[0]!;
    expect(() => new Webhook(receivers.webhook.secret).verify(webhook.body, webhook.headers as Record<string, string>)).not.toThrow();
    expect(webhook.json).toMatchObject({ type: 'api_key.created' });

    const test = (await api.channels.test({ id: channels[0]!.id })).test;
    expect(test).toMatchObject({ ok: true, error: null });
    const { deliveries } = await api.deliveries({ channelId: channels[0]!.id });
    expect(deliveries.map((d) => [d.eventType, d.status])).toEqual([
      ['notification.test', 'succeeded'],
      ['api_key.created', 'succeeded'],
    ]);

    const renamed = (await api.channels.update({ id: channels[0]!.id, name: 'renamed' })).channel;
    expect(renamed.name).toBe('renamed');
    expect(await api.channels.delete({ id: channels[0]!.id })).toEqual({ ok: true });
    expect(await errorOf(api.channels.get({ id: channels[0]!.id }))).toMatchObject({ code: 'NOT_FOUND' });
    expect(await api.rules.delete({ id: rule.id })).toEqual({ ok: true });
    expect((await api.rules.list()).rules).toEqual([]);
  });

  it('refuses bad channels and rules with 400 naming the field; an unreachable target is saved and its test says why', async () => {
    const api = h.caller().notifications;
    const bad = await errorOf(api.channels.create({ type: 'slack', name: 'x', config: { webhookUrl: 'not a url' } }));
    expect(bad).toMatchObject({ code: 'BAD_REQUEST' });
    expect(JSON.stringify(bad)).toContain('webhookUrl');
    const chat = await errorOf(
      api.channels.create({ type: 'telegram', name: 't', config: { botToken: receivers.telegram.token, chatId: 'abc' } }),
    );
    expect(chat).toMatchObject({ code: 'BAD_REQUEST' });
    expect(JSON.stringify(chat)).toContain('chatId');
    const { channel: target } = await api.channels.create({ type: 'ntfy', name: 'n', config: receivers.ntfy.config() });
    const unknown = await errorOf(api.rules.create({ projectId: null, events: ['deployment.exploded'], channelIds: [target.id] }));
    expect(unknown).toMatchObject({ code: 'BAD_REQUEST' });
    expect(JSON.stringify(unknown)).toContain('events');

    const { channel } = await api.channels.create({ type: 'ntfy', name: 'gone', config: { url: 'http://127.0.0.1:9/alerts' } });
    const test = (await api.channels.test({ id: channel.id })).test;
    expect(test.ok).toBe(false);
    expect(test.error).toBeTruthy();
  });

  it('private targets are refused on save unless the operator allows them', async () => {
    await h.close();
    h = await createHarness({ events: createNotifiers({ allowPrivate: () => false, telegramApiUrl: () => receivers.telegram.origin }) });
    const refused = await errorOf(
      h.caller().notifications.channels.create({ type: 'webhook', name: 'inside', config: { url: 'http://169.254.169.254/latest' } }),
    );
    expect(refused).toMatchObject({ code: 'BAD_REQUEST' });
    expect(JSON.stringify(refused)).toContain('url');
  });

  it("a channel whose last 5 deliveries failed is failing in a service's overview, with its last error and no secret", async () => {
    // A receiver that answers 500 and echoes the path it was posted to (the webhook URL's token).
    const echo = createServer((req, res) => {
      res.statusCode = 500;
      res.end(`no hook at ${req.url}`);
    });
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
    try {
      const port = (echo.address() as AddressInfo).port;
      const token = 'T00000000/B00000000/XXXXXXXXsecretpath';
      const api = h.caller();
      const { project } = await api.projects.create({ name: 'alerting' });
      const { service } = await api.services.create({ projectId: project.id, name: 'web', repoFullName: 'acme/web' });
      const { channel } = await api.notifications.channels.create({
        type: 'slack',
        name: 'ops',
        config: { webhookUrl: `http://127.0.0.1:${port}/services/${token}` },
      });
      const { channel: unrouted } = await api.notifications.channels.create({
        type: 'slack',
        name: 'elsewhere',
        config: { webhookUrl: `http://127.0.0.1:${port}/services/other` },
      });
      expect((await api.services.overview({ serviceId: service.id })).notifications).toEqual({ status: 'ok', channels: 0, failing: [] });
      await api.notifications.rules.create({ projectId: project.id, events: ['service.*'], channelIds: [channel.id] });
      for (let i = 0; i < 4; i++) expect((await api.notifications.channels.test({ id: channel.id })).test.ok).toBe(false);
      await api.notifications.channels.test({ id: unrouted.id });
      expect((await api.services.overview({ serviceId: service.id })).notifications).toEqual({ status: 'ok', channels: 1, failing: [] });
      // The fifth failure in a row: the overview (a project reader's too) and health say so.
      await api.notifications.channels.test({ id: channel.id });
      const reader = h.caller(await h.mintKey('read', [project.id]));
      for (const caller of [api, reader]) {
        const { notifications } = await caller.services.overview({ serviceId: service.id });
        expect(notifications).toEqual({
          status: 'failing',
          channels: 1,
          failing: [{ id: channel.id, name: 'ops', type: 'slack', lastError: expect.stringContaining('500') }],
        });
        expect(notifications.failing[0]!.lastError).toContain('********');
        expect(JSON.stringify(notifications)).not.toContain('secretpath');
      }
      expect((await api.notifications.channels.get({ id: channel.id })).channel).toMatchObject({
        state: 'failing',
        consecutiveFailures: 5,
      });
      expect(JSON.stringify(await api.notifications.channels.get({ id: channel.id }))).not.toContain('secretpath');
    } finally {
      await new Promise((resolve) => echo.close(resolve));
    }
  });

  it('only the install administrators manage channels; a read key is refused', async () => {
    const reader = h.caller(await h.mintKey('read'));
    expect(await errorOf(reader.notifications.channels.list())).toMatchObject({ code: 'FORBIDDEN' });
    expect(await errorOf(reader.audit.list())).toMatchObject({ code: 'FORBIDDEN' });
  });
});

describe('the audit log', () => {
  it('records writes with who, the operation, targets, project, address and outcome; refusals too; filters and pages', async () => {
    const { project } = await h.caller().projects.create({ name: 'audited' });
    await errorOf(h.caller().projects.bySlug({ projectSlug: 'nope' }));
    const reader = h.caller(await h.mintKey('read'));
    await errorOf(reader.projects.create({ name: 'not allowed' }));
    await errorOf(h.caller('slw_wrong').projects.list());

    const { entries } = await h.caller().audit.list({});
    const created = entries.find((e) => e.operation === 'projects.create' && e.outcome === 'success');
    expect(created).toMatchObject({ door: 'rest', clientAddress: '127.0.0.1', projectId: project.id, actor: { kind: 'key' } });
    expect(created!.targetIds).toContain(project.id);
    expect(entries.some((e) => e.operation === 'projects.create' && e.outcome === 'forbidden')).toBe(true);
    expect(entries.some((e) => e.operation === 'projects.list' && e.outcome === 'unauthorized')).toBe(true);
    // A read that succeeds is not a write: it is not recorded.
    expect(entries.some((e) => e.operation === 'projects.bySlug')).toBe(false);
    // No secret or body goes in.
    expect(JSON.stringify(entries)).not.toContain('slw_wrong');

    const own = await h.caller().audit.project({ projectId: project.id });
    expect(own.entries.every((e) => e.projectId === project.id)).toBe(true);
    expect(own.entries.length).toBeGreaterThan(0);
    const byOperation = await h.caller().audit.list({ operation: 'projects.create' });
    expect(byOperation.entries.every((e) => e.operation === 'projects.create')).toBe(true);
    const first = await h.caller().audit.list({ limit: 1 });
    expect(first.entries).toHaveLength(1);
    expect(first.nextCursor).not.toBeNull();
    const second = await h.caller().audit.list({ limit: 1, cursor: first.nextCursor! });
    expect(second.entries[0]!.id).not.toBe(first.entries[0]!.id);
    expect(await errorOf(reader.audit.project({ projectId: project.id }))).toMatchObject({ code: 'FORBIDDEN' });
  });
});

describe('the event stream', () => {
  it('streams events the caller may read, and resumes after an id without skipping', async () => {
    const controller = new AbortController();
    const stream = await h.caller(undefined, controller.signal).events.stream({});
    const seen: Array<{ id: string; type: string }> = [];
    const reading = (async () => {
      for await (const item of stream as AsyncIterable<unknown>) {
        const [id, data] = item as [string, { type: string; event?: { type: string } }];
        if (data?.type === 'event') seen.push({ id, type: data.event!.type });
        if (seen.length === 2) break;
      }
    })();
    await h.caller().apiKeys.create({ name: 'one', access: 'read' });
    const { apiKey } = await h.caller().apiKeys.create({ name: 'two', access: 'read' });
    await reading;
    controller.abort();
    expect(seen.map((s) => s.type)).toEqual(['api_key.created', 'api_key.created']);

    await h.caller().apiKeys.delete({ id: apiKey.id });
    const again = new AbortController();
    const resumed = await h.caller(undefined, again.signal).events.stream({ lastEventId: seen[0]!.id });
    const after: string[] = [];
    for await (const item of resumed as AsyncIterable<unknown>) {
      const [, data] = item as [string, { type: string; event?: { type: string } }];
      if (data?.type === 'event') after.push(data.event!.type);
      if (after.length === 2) break;
    }
    again.abort();
    expect(after).toEqual(['api_key.created', 'api_key.deleted']);
  });
});
