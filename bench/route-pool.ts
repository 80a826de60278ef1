/**
 * What routing by files costs Caddy per request: `npm run bench:route-pool`.
 *
 * The configuration holds no hostname: a request's Host is looked up in the routes directory
 * (`_upstream/<hostname>/*`, one directory read and one `stat`; then `_waiting/<hostname>`), after a
 * lower-casing step that only mixed-case names take (a request Caddy sends itself). In one run this
 * starts a real Caddy (test/helpers/caddy.ts) and loads, in turn, (a) the baseline: one route with
 * Caddy's own `host` matcher, the cheapest routing Caddy has (but every hostname change is a load),
 * and (b) the configuration the platform builds, with 1 and with 500 routed hostnames; every upstream
 * is replaced by a static 200 so that only the matching is measured. autocannon loads each case in
 * alternating rounds; the table gives req/s (median of the rounds) and the ratio to the baseline.
 * Informational: exits 0 unless it crashes.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildCaddyConfig, planFiles } from '../adapters/proxy/caddy-config.js';
import { RoutesDirectory } from '../adapters/proxy/routes-directory.js';
import type { RoutingTable } from '../src/routing/reverse-proxy.port.js';
import { startCaddy, waitUntilServed } from '../test/helpers/caddy.js';
import { autocannon } from './autocannon.js';
import { runBench } from './run-bench.js';
import { median } from './bench-support.js';

const CONNECTIONS = 32;
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const MANY = Number(process.env.BENCH_HOSTNAMES ?? 500);

function post(url: string, body: unknown): Promise<number> {
  return new Promise((resolve, reject) => {
    const text = JSON.stringify(body);
    const req = request(
      url,
      { method: 'POST', headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

const OK = { handler: 'static_response', status_code: 200, body: 'ok' };

/** The upstreams and the 503 answer 200 at once: the figures are Caddy's routing, not an upstream (the lower-casing step stays). */
function staticHandlers(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(staticHandlers);
  if (!value || typeof value !== 'object') return value;
  const object = value as Record<string, unknown>;
  const dial = (object.upstreams as Array<{ dial: string }> | undefined)?.[0]?.dial ?? '';
  if ((object.handler === 'reverse_proxy' && dial.startsWith('{')) || (object.handler === 'static_response' && object.status_code === 503))
    return OK;
  return Object.fromEntries(Object.entries(object).map(([key, inner]) => [key, staticHandlers(inner)]));
}

async function main(): Promise<void> {
  const caddy = await startCaddy();
  const root = await mkdtemp(path.join(tmpdir(), 'slipway-bench-routes-'));
  try {
    const options = { httpPort: caddy.httpPort, httpsPort: 0, autoHttps: false, acmeEmail: null };
    const admin = { listen: `127.0.0.1:${caddy.adminPort}` };
    const table = (n: number): RoutingTable => ({
      version: `n${n}`,
      routes: [
        ...Array.from({ length: n }, (_, i) => ({
          hostname: `s${String(i).padStart(3, '0')}.bench.test`,
          serviceId: `s${i}`,
          upstream: `10.254.${Math.floor(i / 250)}.${(i % 250) + 2}:80`,
        })),
        { hostname: 'waiting.bench.test', serviceId: 'w', upstream: null },
      ],
    });
    const one = table(1);
    const many = table(MANY);
    const baseline = {
      admin,
      apps: {
        http: {
          servers: {
            bench: {
              listen: [`:${caddy.httpPort}`],
              automatic_https: { disable: true },
              routes: [{ match: [{ host: ['s000.bench.test'] }], handle: [OK], terminal: true }],
            },
          },
        },
      },
    };
    const last = `s${String(MANY - 1).padStart(3, '0')}.bench.test`;
    const cases = [
      { label: 'Caddy `host` matcher, 1 hostname in the configuration (baseline)', config: 'host', host: 's000.bench.test' },
      { label: 'routes directory, 1 hostname', config: one, host: 's000.bench.test' },
      { label: `routes directory, ${MANY} hostnames: the last`, config: many, host: last },
      { label: `routes directory, ${MANY} hostnames: the last, sent in upper case`, config: many, host: last.toUpperCase() },
      { label: `routes directory, ${MANY} hostnames: one waiting for a container`, config: many, host: 'waiting.bench.test' },
    ] as const;
    const directory = new RoutesDirectory(root);
    let loaded: unknown = null;
    const results = cases.map(() => [] as number[]);
    for (let round = 0; round < ROUNDS; round++) {
      const order = cases.map((_, i) => i);
      if (round % 2) order.reverse();
      for (const i of order) {
        const { config, host } = cases[i]!;
        if (loaded !== config) {
          let body: unknown = baseline;
          if (config !== 'host') {
            const built = buildCaddyConfig(options, admin, { routesDir: root });
            await directory.sync(built.digest, planFiles(config));
            body = staticHandlers(built.config);
          }
          const status = await post(`${caddy.adminUrl}/load`, body);
          if (status !== 200) throw new Error(`Caddy refused the configuration: ${status}`);
          loaded = config;
        }
        await waitUntilServed(caddy.httpPort, host, { status: 200, text: /^ok$/ });
        const result = await autocannon({
          url: `http://127.0.0.1:${caddy.httpPort}/`,
          connections: CONNECTIONS,
          duration: DURATION_S,
          headers: { host },
        });
        if (result.errors || result.non2xx) throw new Error(`${host}: ${result.errors} errors, ${result.non2xx} non-2xx`);
        results[i]!.push(result.requests.average);
      }
    }
    const base = median(results[0]!);
    const rows = cases.map((c, i) => [c.label, median(results[i]!)] as const);
    console.log(
      `\n${CONNECTIONS} keep-alive connections, ${ROUNDS} rounds of ${DURATION_S} s each, Caddy ${caddy.output().match(/v2[\d.]+/)?.[0] ?? '(version not logged)'}\n`,
    );
    console.log('| hostname routed by | req/s (median) | ratio to baseline |');
    console.log('|---|---|---|');
    for (const [label, value] of rows) console.log(`| ${label} | ${Math.round(value)} | ${(value / base).toFixed(2)}x |`);
  } finally {
    await caddy.stop();
    await rm(root, { recursive: true, force: true });
  }
}

await runBench(main, 300_000);
