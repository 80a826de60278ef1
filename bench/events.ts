/**
 * What delivering events costs: `npm run bench:events` (`BENCH_SMALL=1` for a quick run).
 *
 * The issue's figures: an event's time from published to delivered at the receiver with 20 channels
 * configured (p50 and p99), and the platform's CPU while 1,000 events are delivered. The platform is
 * the real use cases on a SQLite file (as `npm start` keeps it), its dispatcher and delivery worker
 * running, with the real signed-webhook notifier posting to a loopback receiver; each figure is set
 * against a baseline measured in the same run, on the same receiver with the same notifier: the bare
 * signed POST, with no outbox, no dispatch, no delivery rows and no attempt records.
 *  - latency: per round one event to 20 webhook channels (20 deliveries), against 20 bare sends at once;
 *  - CPU: `EVENTS` events to one webhook channel published at once, until the last is received, against
 *    `EVENTS` bare sends, 32 at a time (the worker's `NOTIFY_CONCURRENCY`). The receiver runs in this
 *    process in both, so both columns include it.
 * Informational: exits 0 unless it crashes.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createNotifiers } from '../adapters/notify/notifiers.js';
import type { EventPayloads } from '../src/domain/events.js';
import { DEFAULT_EVENTS_CONFIG, type Notifier } from '../src/index.js';
import { messageOf } from '../src/notifications/event-message.js';
import { createHarness, type Harness } from '../test/helpers/harness.js';
import { median, table } from './bench-support.js';
import { runBench } from './run-bench.js';

const SMALL = process.env.BENCH_SMALL === '1';
const CHANNELS = 20;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? (SMALL ? 20 : 100));
const EVENTS = Number(process.env.BENCH_EVENTS ?? (SMALL ? 200 : 1000));
const CONCURRENCY = DEFAULT_EVENTS_CONFIG.deliveryConcurrency;
const MARK = /bench-(\d+)/;

/** A receiver on loopback that answers 200 and tells who waits for a marker when it arrives. */
async function startReceiver(): Promise<{
  server: Server;
  url: (p: string) => string;
  arrivals: (mark: string, count: number) => Promise<number[]>;
}> {
  const waiting = new Map<string, { want: number; at: number[]; done: (at: number[]) => void }>();
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = performance.now();
      res.end('ok');
      const mark = MARK.exec(Buffer.concat(chunks).toString('utf8'))?.[0];
      const wait = mark ? waiting.get(mark) : undefined;
      if (!wait) return;
      wait.at.push(at);
      if (wait.at.length === wait.want) {
        waiting.delete(mark!);
        wait.done(wait.at);
      }
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    server,
    url: (p) => `http://127.0.0.1:${port}/${p}`,
    arrivals: (mark, count) => new Promise((done) => waiting.set(mark, { want: count, at: [], done })),
  };
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

let seq = 0;
/** One event's payload, marked so the receiver knows which one arrived. */
const payload = () => {
  const mark = `bench-${++seq}`;
  const data: EventPayloads['api_key.created'] = { apiKeyId: mark, name: 'bench', access: 'read', projectIds: null };
  return { mark, data };
};

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'slipway-bench-events-'));
  const receiver = await startReceiver();
  const { notifiers } = createNotifiers({ allowPrivate: () => true, telegramApiUrl: () => 'http://127.0.0.1:9' });
  const webhook = notifiers.find((n) => n.type === 'webhook') as Notifier;
  let h: Harness | null = null;
  try {
    h = await createHarness({
      dataDir: dir,
      config: { events: { ...DEFAULT_EVENTS_CONFIG, allowPrivateTargets: true, retryBaseMs: 1_000 } },
      events: createNotifiers({ allowPrivate: () => true, telegramApiUrl: () => 'http://127.0.0.1:9' }),
    });
    const api = h.caller().notifications;
    const fanOut: string[] = [];
    let secret = '';
    for (let i = 0; i < CHANNELS; i++) {
      const made = await api.channels.create({ type: 'webhook', name: `bench ${i}`, config: { url: receiver.url(`fan/${i}`) } });
      fanOut.push(made.channel.id);
      secret = made.secret!;
    }
    const single = await api.channels.create({ type: 'webhook', name: 'bench single', config: { url: receiver.url('single') } });
    // api_key.created goes to the 20; token.created to the one (the CPU run).
    await api.rules.create({ projectId: null, events: ['api_key.created'], channelIds: fanOut });
    await api.rules.create({ projectId: null, events: ['token.created'], channelIds: [single.channel.id] });
    h.services.eventLoops.start();
    const publisher = h.services.eventLoops.publisher;
    const deliveries = h.services.eventLoops.deliveries;

    // The same message the worker renders (messageOf), signed and POSTed by the same notifier.
    const bareSend = (mark: string, data: EventPayloads['api_key.created'], signal: AbortSignal) =>
      webhook.send(
        messageOf(mark, { id: mark, seq: 0, type: 'api_key.created', projectId: null, occurredAt: new Date(), data }),
        { config: { url: receiver.url('bare') }, secret },
        signal,
      );

    // Latency: one warm-up round of each, then rounds alternating platform and bare.
    const platform: number[] = [];
    const bare: number[] = [];
    for (let round = 0; round <= ROUNDS; round++) {
      {
        const { mark, data } = payload();
        const arrived = receiver.arrivals(mark, CHANNELS);
        const started = performance.now();
        await publisher.publish('api_key.created', data);
        const at = await arrived;
        if (round > 0) platform.push(...at.map((t) => t - started));
        // The attempts are recorded after the receiver answered: that work ends before the bare round.
        await deliveries.settle();
      }
      {
        const { mark, data } = payload();
        const arrived = receiver.arrivals(mark, CHANNELS);
        const started = performance.now();
        await Promise.all(Array.from({ length: CHANNELS }, () => bareSend(mark, data, AbortSignal.timeout(10_000))));
        const at = await arrived;
        if (round > 0) bare.push(...at.map((t) => t - started));
      }
    }

    // CPU: EVENTS events to one channel, published at once, until the last arrives; then EVENTS bare sends.
    const platformCpu = await (async () => {
      const marks = Array.from({ length: EVENTS }, payload);
      const arrived = Promise.all(marks.map(({ mark }) => receiver.arrivals(mark, 1)));
      const cpu = cpuMs();
      const wall = performance.now();
      await Promise.all(
        marks.map(({ mark }) => publisher.publish('token.created', { tokenId: mark, userId: 'bench', name: 'bench', scopes: [] })),
      );
      await arrived;
      // Until every attempt is recorded: that is CPU the platform spends on the delivery too.
      await deliveries.settle();
      return { cpu: cpuMs() - cpu, wall: performance.now() - wall };
    })();
    const bareCpu = await (async () => {
      const marks = Array.from({ length: EVENTS }, payload);
      const cpu = cpuMs();
      const wall = performance.now();
      let next = 0;
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < marks.length) {
            const { mark, data } = marks[next++]!;
            const arrived = receiver.arrivals(mark, 1);
            await bareSend(mark, data, AbortSignal.timeout(10_000));
            await arrived;
          }
        }),
      );
      return { cpu: cpuMs() - cpu, wall: performance.now() - wall };
    })();

    const f = (n: number) => n.toFixed(1);
    const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}x`;
    const p = (values: number[], q: number) => percentile(values, q);
    process.stdout.write(
      `Events: ${ROUNDS} rounds of one event to ${CHANNELS} signed-webhook channels (${ROUNDS * CHANNELS} deliveries), ` +
        `and ${EVENTS} events to one channel for the CPU; SQLite file, loopback receiver in this process.\n\n`,
    );
    process.stdout.write(
      `${table([
        ['figure', 'platform', 'baseline (bare signed POST)', 'ratio'],
        ['published -> received, p50 (ms)', f(p(platform, 50)), f(p(bare, 50)), ratio(p(platform, 50), p(bare, 50))],
        ['published -> received, p99 (ms)', f(p(platform, 99)), f(p(bare, 99)), ratio(p(platform, 99), p(bare, 99))],
        [`CPU for ${EVENTS} events (ms)`, f(platformCpu.cpu), f(bareCpu.cpu), ratio(platformCpu.cpu, bareCpu.cpu)],
        [
          `CPU per event (ms)`,
          (platformCpu.cpu / EVENTS).toFixed(3),
          (bareCpu.cpu / EVENTS).toFixed(3),
          ratio(platformCpu.cpu, bareCpu.cpu),
        ],
        [
          `wall time for ${EVENTS} events, to the last attempt recorded (ms)`,
          f(platformCpu.wall),
          f(bareCpu.wall),
          ratio(platformCpu.wall, bareCpu.wall),
        ],
      ])}\n`,
    );
    process.stdout.write(
      `\nThe issue's target: p99 under 200 ms with ${CHANNELS} channels (${p(platform, 99) < 200 ? 'met' : 'NOT met'} in this run; median of rounds: ${f(
        median(platform),
      )} ms).\n`,
    );
  } finally {
    await h?.close();
    receiver.server.closeAllConnections();
    await new Promise((resolve) => receiver.server.close(resolve));
    rmSync(dir, { recursive: true, force: true });
  }
}

await runBench(main, SMALL ? 120_000 : 600_000);
