import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { deploy } from '../helpers/deployments.js';
import { docker, ownPortRange, provisionDocker } from '../helpers/docker.js';
import { api, startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { startReceivers } from '../standins/notify-receivers.js';
import { readSse } from '../helpers/sse.js';

/*
 * A container that really crash-loops on the Docker engine, after its deployment went live: the
 * platform (`npm start`, built) sees its exits in Docker's events, sends one `service.crash_looping`
 * to a signed-webhook channel stand-in, and one `service.recovered` once it ran a window without
 * exiting. The service is busybox's httpd under a script that, once told to (a file the test
 * writes with `docker exec`), exits, then exits at its next start, then serves again: Docker's
 * restart policy restarts it each time, as it would a real crashing app.
 */
/** Two exits make a loop here (the default is 3): on this shared machine Docker takes seconds per restart. */
const EXITS = 2;
const WINDOW_MS = 10_000;
const suffix = randomBytes(4).toString('hex');
let receivers: Awaited<ReturnType<typeof startReceivers>>;
let server: ServerProcess;
let call: ReturnType<typeof api>;
let projectId = '';

beforeAll(async () => {
  await provisionDocker();
  receivers = await startReceivers();
  server = await startServerProcess({
    NOTIFY_ALLOW_PRIVATE_TARGETS: 'true',
    TELEGRAM_API_URL: receivers.telegram.origin,
    BUILD_CONCURRENCY: '1',
    CRASH_LOOP_EXITS: String(EXITS),
    CRASH_LOOP_WINDOW_MS: String(WINDOW_MS),
    HEALTH_TIMEOUT_MS: '20000',
    STOP_GRACE_SECONDS: '1',
    HOST_PORT_RANGE: ownPortRange(),
  });
  call = api(server.url, server.token);
  projectId = (await call('POST', '/api/projects', { name: `crash-loop-${suffix}` })).json.project.id;
}, 120_000);

afterAll(async () => {
  if (call && projectId) await call('DELETE', `/api/projects/${projectId}`);
  await server?.dispose();
  await receivers?.close();
});

/** Exits 3 when /tmp/crashing appears; after it, exits at its next start, then serves again. */
const START = [
  'mkdir -p /www && echo ok > /www/index.html',
  'if [ -f /tmp/crashing ]; then n=$(( $(cat /tmp/n) + 1 )); echo $n > /tmp/n; if [ $n -lt 2 ]; then exit 3; fi; rm /tmp/crashing; fi',
  'httpd -p 3000 -h /www',
  'while [ ! -f /tmp/crashing ]; do sleep 0.2; done',
  'exit 3',
].join('\n');

describe('a crash-looping container', () => {
  it('sends one alert to the channel, then one "recovered"', async () => {
    const channel = await call('POST', '/api/notifications/channels', {
      type: 'webhook',
      name: `crashes-${suffix}`,
      config: receivers.webhook.config(),
    });
    expect(channel.status, channel.text).toBe(201);
    receivers.webhook.secret = channel.json.secret;
    const rule = await call('POST', '/api/notifications/rules', {
      projectId,
      events: ['service.crash_looping', 'service.recovered'],
      channelIds: [channel.json.channel.id],
    });
    expect(rule.status, rule.text).toBe(201);
    const created = await call('POST', `/api/projects/${projectId}/services`, {
      name: `looper-${suffix}`,
      repoUrl: 'container-image',
      containerImage: 'busybox:latest',
      internalPort: 3000,
      startCommand: START,
    });
    expect(created.status, created.text).toBe(201);
    const serviceId = created.json.service.id as string;
    const live = await deploy(call, serviceId, 90_000);
    expect(live.deployment.status, live.logs.join('\n')).toBe('succeeded');

    // Live: now it starts crashing (three exits, Docker restarting it after each).
    await docker('exec', live.deployment.containerName!, 'sh', '-c', 'echo 0 > /tmp/n && touch /tmp/crashing');
    const [alert] = await receivers.webhook.waitFor(1, 30_000).catch(async (error: Error) => {
      const state = await docker(
        'inspect',
        '--format',
        '{{.RestartCount}} {{.State.Status}} {{.State.ExitCode}} {{json .HostConfig.RestartPolicy}} {{json .Config.Labels}}',
        live.deployment.containerName!,
      ).catch((e: Error) => e.message);
      const events = await readSse(`${server.url}/api/events/stream`, {
        token: server.token,
        headers: { 'last-event-id': '0' },
        until: () => false,
        timeoutMs: 2000,
      }).catch((e: Error) => ({ frames: e.message }));
      const dl = await call('GET', `/api/notifications/deliveries?channelId=${channel.json.channel.id}`);
      throw new Error(
        `${error.message}\ncontainer: ${state}\nevents: ${JSON.stringify(events.frames)}\ndeliveries: ${dl.text}\nplatform log:\n${server.output().slice(-4000)}`,
      );
    });
    expect(alert!.json).toMatchObject({
      type: 'service.crash_looping',
      data: { projectId, data: { serviceId, exits: EXITS, windowMs: WINDOW_MS, reminder: false, lastExitCode: 3 } },
    });
    const [, recovered] = await receivers.webhook.waitFor(2, 30_000);
    expect(recovered!.json).toMatchObject({ type: 'service.recovered', data: { projectId, data: { serviceId, exits: EXITS } } });
    for (const message of receivers.webhook.received)
      expect(() => new Webhook(receivers.webhook.secret).verify(message.body, message.headers as Record<string, string>)).not.toThrow();
    expect(receivers.webhook.refused).toEqual([]);

    // One alert, one recovery: nothing more, and the delivery log says the same.
    const deliveries = await call('GET', `/api/notifications/deliveries?channelId=${channel.json.channel.id}`);
    expect(deliveries.json.deliveries.map((d: { eventType: string; status: string }) => [d.eventType, d.status])).toEqual([
      ['service.recovered', 'succeeded'],
      ['service.crash_looping', 'succeeded'],
    ]);
    expect(receivers.webhook.received).toHaveLength(2);
  }, 150_000);
});
