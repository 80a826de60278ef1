/**
 * What routing by files costs Caddy per request: `npm run bench:route-pool`.
 *
 * Caddy's routes are matched in order, each by one `stat` of `<route dir>/<Host>`, so a hostname pays
 * for every route tried before its own. In one run this starts a real Caddy (test/helpers/caddy.ts)
 * and loads, in turn, (a) the configuration of 16 services with one route each (the design before the
 * pool: a hostname of the 16th service tries 16 directories) and (b) the one the platform builds now
 * for a pool of 16 slot pairs (then the waiting route), every handler replaced by a
 * static 200 so that only the matching is measured. autocannon loads a hostname of each position in
 * alternating rounds; the table gives req/s (median of the rounds) and the ratio to the first route of
 * (a), one `stat`. Informational: exits 0 unless it crashes.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { buildCaddyConfig } from '../adapters/proxy/caddy-config.js';
import { RoutesDirectory } from '../adapters/proxy/routes-directory.js';
import type { RoutingTable } from '../src/routing/reverse-proxy.port.js';
import { startCaddy, waitUntilServed } from '../test/helpers/caddy.js';
import { autocannon } from './autocannon.js';
import { runBench } from './run-bench.js';
import { median } from './bench-support.js';

const CONNECTIONS = 32;
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const POOL = 16;

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

/** Every handler answers 200 at once: the figures are Caddy's routing, not an upstream. */
function staticHandlers(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(staticHandlers);
  if (!value || typeof value !== 'object') return value;
  const object = value as Record<string, unknown>;
  if (object.handler === 'reverse_proxy' || (object.handler === 'static_response' && object.status_code === 503))
    return { handler: 'static_response', status_code: 200, body: 'ok' };
  return Object.fromEntries(Object.entries(object).map(([key, inner]) => [key, staticHandlers(inner)]));
}

async function main(): Promise<void> {
  const caddy = await startCaddy();
  const root = await mkdtemp(path.join(tmpdir(), 'slipway-bench-routes-'));
  try {
    const pool = Array.from({ length: POOL }, (_, i): [string, string] => [`10.254.0.${2 + 2 * i}:80`, `10.254.0.${3 + 2 * i}:80`]);
    const options = { httpPort: caddy.httpPort, httpsPort: 0, autoHttps: false, acmeEmail: null, gatePort: 1, healthIntervalMs: 60_000 };
    const admin = { listen: `127.0.0.1:${caddy.adminPort}` };
    const name = (prefix: string, i: number) => `${prefix}${String(i).padStart(2, '0')}`;
    const services: RoutingTable = {
      version: 'per-service',
      routes: pool.map((pair, i) => ({ hostname: `${name('s', i)}.bench.test`, serviceId: name('s', i), upstream: pair[0] })),
    };
    const pooled: RoutingTable = {
      version: 'pool',
      slotPool: pool,
      routes: [
        ...pool.map((pair, i) => ({ hostname: `${name('p', i)}.bench.test`, serviceId: name('p', i), upstream: pair })),
        { hostname: 'waiting.bench.test', serviceId: 'w', upstream: null },
      ],
    };
    const cases = [
      { label: 'per service (before): 1st of 16 (1 stat, baseline)', table: services, host: 's00.bench.test' },
      { label: `per service (before): 16th of 16 (${POOL} stats)`, table: services, host: 's15.bench.test' },
      { label: 'pool of 16 pairs: 1st pair (1 stat)', table: pooled, host: 'p00.bench.test' },
      { label: 'pool of 16 pairs: 16th pair (16 stats)', table: pooled, host: 'p15.bench.test' },
      { label: 'pool of 16 pairs: waiting (17 stats)', table: pooled, host: 'waiting.bench.test' },
    ];
    const directory = new RoutesDirectory(root);
    let loaded: RoutingTable | null = null;
    const results = cases.map(() => [] as number[]);
    for (let round = 0; round < ROUNDS; round++) {
      const order = cases.map((_, i) => i);
      if (round % 2) order.reverse();
      for (const i of order) {
        const { table, host } = cases[i]!;
        if (loaded !== table) {
          const built = buildCaddyConfig(table, options, admin, { routesDir: root });
          await directory.sync(built.digest, built.routes);
          const status = await post(`${caddy.adminUrl}/load`, staticHandlers(built.config));
          if (status !== 200) throw new Error(`Caddy refused the configuration: ${status}`);
          loaded = table;
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
    console.log('| hostname of | req/s (median) | ratio to baseline |');
    console.log('|---|---|---|');
    for (const [label, value] of rows) console.log(`| ${label} | ${Math.round(value)} | ${(value / base).toFixed(2)}x |`);
  } finally {
    await caddy.stop();
    await rm(root, { recursive: true, force: true });
  }
}

await runBench(main, 300_000);
