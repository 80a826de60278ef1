import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { api, startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { readSse } from '../helpers/sse.js';
import { startReceivers } from '../standins/notify-receivers.js';

/**
 * Events over real HTTP against the built platform (`npm start`): channels and rules through REST,
 * a signed webhook verified with the Standard Webhooks reference package, the audit log, the SSE
 * event stream resumed with Last-Event-ID, and a SIGKILL between a change and its delivery.
 */
let receivers: Awaited<ReturnType<typeof startReceivers>>;
const servers: ServerProcess[] = [];
/** One platform for the file: the last test kills it and starts the next on its data. */
let server: ServerProcess;
/** The webhook channel the first test made (its `whsec_` secret is the receiver's). */
let webhookChannel = '';

beforeAll(async () => {
  receivers = await startReceivers();
  server = await startServerProcess(env());
  servers.push(server);
}, 60_000);
afterAll(async () => {
  for (const server of servers.reverse()) await server.dispose();
  await receivers?.close();
});

const env = () => ({ NOTIFY_ALLOW_PRIVATE_TARGETS: 'true', TELEGRAM_API_URL: receivers.telegram.origin, NOTIFY_RETRY_BASE_MS: '3000' });

async function until<T>(what: string, probe: () => Promise<T | null | undefined | false>, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('events over HTTP', () => {
  it('a signed webhook, every channel, the audit log and the event stream', async () => {
    const call = api(server.url, server.token);
    const channelIds: string[] = [];
    for (const kind of ['slack', 'discord', 'telegram', 'teams', 'ntfy', 'gotify', 'webhook'] as const) {
      const created = await call('POST', '/api/notifications/channels', { type: kind, name: kind, config: receivers[kind].config() });
      expect(created.status, created.text).toBe(201);
      expect(created.text).not.toContain(receivers[kind].token);
      if (kind === 'webhook') receivers.webhook.secret = created.json.secret;
      channelIds.push(created.json.channel.id);
    }
    expect(receivers.webhook.secret).toMatch(/^whsec_/);
    const badRule = await call('POST', '/api/notifications/rules', { projectId: null, events: ['nope.nothing'], channelIds });
    expect(badRule.status).toBe(400);
    expect(badRule.json.details.field).toMatch(/^events/);
    const badChat = await call('POST', '/api/notifications/channels', {
      type: 'telegram',
      name: 't',
      config: { botToken: receivers.telegram.token, chatId: 'abc' },
    });
    expect(badChat.status).toBe(400);
    expect(badChat.json.details.field).toMatch(/chatId/);
    const rule = await call('POST', '/api/notifications/rules', { projectId: null, events: ['api_key.*'], channelIds });
    expect(rule.status, rule.text).toBe(201);

    const before = receivers.webhook.received.length;
    const key = await call('POST', '/api/api-keys', { name: 'ci', access: 'read' });
    expect(key.status, key.text).toBe(201);
    for (const kind of ['slack', 'discord', 'telegram', 'teams', 'ntfy', 'gotify'] as const) await receivers[kind].waitFor(1);
    const [message] = (await receivers.webhook.waitFor(before + 1)).slice(before);
    expect(receivers.webhook.refused).toEqual([]);
    const verified = new Webhook(receivers.webhook.secret).verify(message!.body, message!.headers as Record<string, string>) as {
      type: string;
    };
    expect(verified.type).toBe('api_key.created');
    expect(message!.headers['webhook-signature']).toMatch(/^v1,/);

    webhookChannel = channelIds.at(-1)!;
    const deliveries = await until('the delivery recorded', async () => {
      const res = await call('GET', `/api/notifications/deliveries?channelId=${webhookChannel}`);
      return res.json.deliveries?.[0]?.status === 'succeeded' ? res.json.deliveries : null;
    });
    expect(`msg_${deliveries[0].id}`).toBe(message!.headers['webhook-id']);
    expect(deliveries[0].attempts[0]).toMatchObject({ attempt: 1, ok: true, statusCode: expect.any(Number) });
    const health = await api(server.url, undefined)('GET', '/api/health');
    expect(health.json.notifications).toMatchObject({ status: 'up' });
    const tested = await call('POST', `/api/notifications/channels/${webhookChannel}/test`);
    expect(tested.status, tested.text).toBe(200);
    expect(tested.json.test).toMatchObject({ ok: true, error: null });

    // The audit log: the writes above, through REST, by the bootstrap key, from loopback; a refused one too.
    const refused = await api(server.url, 'slw_not_a_key')('POST', '/api/projects', { name: 'x' });
    expect(refused.status).toBe(401);
    const audit = await call('GET', '/api/audit?operation=apiKeys.create');
    expect(audit.status, audit.text).toBe(200);
    expect(audit.json.entries[0]).toMatchObject({ operation: 'apiKeys.create', door: 'rest', outcome: 'success', actor: { kind: 'key' } });
    expect(audit.json.entries[0].targetIds).toContain(key.json.apiKey.id);
    const all = await call('GET', '/api/audit?limit=500');
    expect(all.json.entries.some((e: { outcome: string }) => e.outcome === 'unauthorized')).toBe(true);
    expect(all.text).not.toContain(receivers.slack.token);
    expect((await call('DELETE', '/api/audit')).status).toBe(404);

    // The event stream: from the start of what is retained (Last-Event-ID 0), then resumed after the key's creation.
    const first = await readSse(`${server.url}/api/events/stream`, {
      token: server.token,
      headers: { 'last-event-id': '0' },
      until: (f) => f.some((x) => x.event === 'event' && x.data.type === 'api_key.created'),
    });
    const firstEvent = first.frames.find((f) => f.event === 'event' && f.data.type === 'api_key.created')!;
    expect(firstEvent.data.type).toBe('api_key.created');
    await call('DELETE', `/api/api-keys/${key.json.apiKey.id}`);
    const resumed = await readSse(`${server.url}/api/events/stream`, {
      token: server.token,
      headers: { 'last-event-id': firstEvent.id! },
      until: (f) => f.some((x) => x.event === 'event' && x.data.type === 'api_key.deleted'),
    });
    const types = resumed.frames.filter((f) => f.event === 'event').map((f) => f.data.type);
    expect(types[0]).not.toBe(undefined);
    expect(types).toContain('api_key.deleted');
    expect(resumed.frames.filter((f) => f.event === 'event').map((f) => Number(f.id))).toEqual(
      [...resumed.frames.filter((f) => f.event === 'event').map((f) => Number(f.id))].sort((a, b) => a - b),
    );
    expect(Number(resumed.frames.find((f) => f.event === 'event')!.id)).toBe(Number(firstEvent.id) + 1);
  }, 60_000);

  it('SIGKILL between a failed attempt and its retry: delivered after the restart with the same webhook-id', async () => {
    const first = server;
    const call = api(first.url, first.token);
    // The first test's rule sends api_key.* to its webhook channel.
    expect(webhookChannel).not.toBe('');
    const failedBefore = receivers.webhook.failedIds.length;
    const receivedBefore = receivers.webhook.received.length;
    receivers.webhook.failNext(1);
    await call('POST', '/api/api-keys', { name: 'kill', access: 'read' });
    await until('the first attempt', async () => receivers.webhook.failedIds.length > failedBefore);
    // Killed once the failed attempt is recorded: between it and its retry (a kill before the record is the lease's case).
    const failedId = receivers.webhook.failedIds[failedBefore]!;
    await until('the failed attempt recorded', async () => {
      const res = await call('GET', `/api/notifications/deliveries?channelId=${webhookChannel}`);
      const found = (res.json.deliveries ?? []).find((d: { id: string }) => `msg_${d.id}` === failedId);
      return found?.attempts?.length === 1 && found.attempts[0].ok === false;
    });
    await first.kill();

    const second = await startServerProcess(env(), { dataDir: first.dataDir, token: first.token });
    servers.push(second);
    const [delivered] = (await receivers.webhook.waitFor(receivedBefore + 1, 30_000)).slice(receivedBefore);
    expect(delivered!.headers['webhook-id']).toBe(receivers.webhook.failedIds[failedBefore]);
    expect(() => new Webhook(receivers.webhook.secret).verify(delivered!.body, delivered!.headers as Record<string, string>)).not.toThrow();
    const again = api(second.url, second.token);
    // The delivery that failed before the kill (the first test's last one may have been in flight too).
    const delivery = await until('the delivery settled', async () => {
      const res = await again('GET', `/api/notifications/deliveries?channelId=${webhookChannel}`);
      const found = (res.json.deliveries ?? []).find((d: { id: string }) => `msg_${d.id}` === failedId);
      return found?.status === 'succeeded' ? found : null;
    });
    expect(delivery.attempts.map((a: { ok: boolean }) => a.ok)).toEqual([false, true]);
  }, 60_000);
});
