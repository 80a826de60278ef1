/**
 * What the pool of slot-pair routes costs per request: `npm run bench:route-pool`.
 *
 * Caddy's routes are matched in order, each by one `stat` of `<route dir>/<Host>`, so a hostname in
 * the last route of the pool pays for every route before it. In one run this starts a real Caddy
 * (test/helpers/caddy.ts), loads the configuration the platform builds for a pool of 16 pairs plus the
 * waiting route (every handler replaced by a static 200, so only the matching is measured), and loads
 * with autocannon, in alternating rounds: a hostname in the first pair's route (the baseline: one
 * `stat`), one in the 16th, and one of a service waiting for a container (after all 16). It prints a
 * markdown table of req/s (median of the rounds) and the ratio to the baseline. Informational: exits 0
 * unless it crashes.
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

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

async function main(): Promise<void> {
  const caddy = await startCaddy();
  const root = await mkdtemp(path.join(tmpdir(), 'slipway-bench-routes-'));
  try {
    const pool = Array.from({ length: POOL }, (_, i): [string, string] => [`10.254.0.${2 + 2 * i}:80`, `10.254.0.${3 + 2 * i}:80`]);
    const hosts = { first: 'first.bench.test', last: 'last.bench.test', waiting: 'waiting.bench.test' };
    const table: RoutingTable = {
      version: 'bench',
      slotPool: pool,
      routes: [
        { hostname: hosts.first, serviceId: 'a', upstream: pool[0]! },
        { hostname: hosts.last, serviceId: 'b', upstream: pool[POOL - 1]! },
        { hostname: hosts.waiting, serviceId: 'c', upstream: null },
      ],
    };
    const built = buildCaddyConfig(
      table,
      { httpPort: caddy.httpPort, httpsPort: 0, autoHttps: false, acmeEmail: null, gatePort: 1, healthIntervalMs: 60_000 },
      { listen: `127.0.0.1:${caddy.adminPort}` },
      { routesDir: root },
    );
    const directory = new RoutesDirectory(root);
    await directory.sync(built.digest, built.routes);
    const status = await post(`${caddy.adminUrl}/load`, staticHandlers(built.config));
    if (status !== 200) throw new Error(`Caddy refused the configuration: ${status}`);
    for (const host of Object.values(hosts)) await waitUntilServed(caddy.httpPort, host, { status: 200, text: /^ok$/ });

    const results: Record<keyof typeof hosts, number[]> = { first: [], last: [], waiting: [] };
    const order = Object.keys(hosts) as (keyof typeof hosts)[];
    for (let round = 0; round < ROUNDS; round++) {
      for (const which of round % 2 ? [...order].reverse() : order) {
        const result = await autocannon({
          url: `http://127.0.0.1:${caddy.httpPort}/`,
          connections: CONNECTIONS,
          duration: DURATION_S,
          headers: { host: hosts[which] },
        });
        if (result.errors || result.non2xx) throw new Error(`${which}: ${result.errors} errors, ${result.non2xx} non-2xx`);
        results[which].push(result.requests.average);
      }
    }
    const base = median(results.first);
    const rows = [
      ['first pair route (1 stat, baseline)', median(results.first)],
      [`16th pair route (${POOL} stats)`, median(results.last)],
      [`waiting route (${POOL + 1} stats)`, median(results.waiting)],
    ] as const;
    console.log(
      `\n${CONNECTIONS} keep-alive connections, ${ROUNDS} rounds of ${DURATION_S} s each, Caddy ${caddy.output().match(/v2[\d.]+/)?.[0] ?? '(version not logged)'}\n`,
    );
    console.log('| hostname in | req/s (median) | ratio to baseline |');
    console.log('|---|---|---|');
    for (const [label, value] of rows) console.log(`| ${label} | ${Math.round(value)} | ${(value / base).toFixed(2)}x |`);
  } finally {
    await caddy.stop();
    await rm(root, { recursive: true, force: true });
  }
}

await runBench(main, 300_000);
