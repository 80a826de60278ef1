/**
 * Reverse proxy benchmark: `npm run build && SLIPWAY_TEST_BUILT=1 npx tsx bench/proxy.ts` (or `npm run bench:proxy`).
 *
 * In one run it
 *  1. starts a real Caddy (test/helpers/caddy.ts: Debian's caddy, admin API on loopback, plain HTTP)
 *     and the platform as `npm start` runs it, keeping that Caddy configured;
 *  2. deploys a keep-alive Node HTTP service from the node stand-in image and gives it a domain;
 *  3. loads it with autocannon (50 connections, 10 s each, after a warm-up), alternating
 *     (a) through Caddy (Host: the domain) and (b) straight to the container (its address on the
 *     project network, no proxy of any kind), and prints req/s with p50/p99 latency (medians of the
 *     rounds) and the ratio a/b, with the connections to the container that each run left in
 *     TIME_WAIT (about how many upstream connections it opened and closed); in the same rounds, for
 *     the floor, (c) a second Caddy (same binary) run from a hand-written Caddyfile that only says
 *     `reverse_proxy <container>:3000` (BENCH_FLOOR_VIA=slot: its traffic slot, through the gate) with
 *     the same keep-alive pool as the platform's, and the CPU
 *     time each Caddy spent per request (from /proc, so the other processes' load weighs on it
 *     much less than on req/s): what the platform's configuration costs Caddy over the floor;
 *     once more, for scale, through the service's host port (the platform's own TCP forwarder);
 *  4. configures 499 domains over four services, then times, five times over, a new hostname from
 *     the moment `POST /api/services/:id/domains` is sent until Caddy serves it (polled every 5 ms
 *     on fresh connections), deleting it again each time so 500 domains are routed while it is
 *     measured; the baseline is Caddy alone: POST /load of the configuration it serves with a route
 *     for the new hostname (Caddy's `host` matcher) put first, until it is served;
 *  5. prints a markdown table: measure / slipway / baseline / ratio / target.
 *
 * It is informational: whatever the figures, it exits 0 unless it crashes.
 */
import { benchPortRange, cpuMs, recordRows, TINY } from './bench-support.js';
import { runBench } from './run-bench.js';
import { randomBytes } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { cpus, loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { api, startServerProcess, type ServerProcess } from '../test/helpers/server-process.js';
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { promisify } from 'node:util';
import { docker, provisionDocker } from '../test/helpers/docker.js';
import { deploy } from '../test/helpers/deployments.js';
import { quietPort, requestVia, startCaddy, waitUntilServed, type CaddyProcess } from '../test/helpers/caddy.js';
import { autocannon } from './autocannon.js';
import { median } from './bench-support.js';

const CONNECTIONS = 50;
const DURATION_S = TINY ? 0.3 : Number(process.env.BENCH_DURATION_S ?? 10);
/** Rounds of (a) and (b), in alternating order so that neither always runs on a warmer machine. */
const ROUNDS = TINY ? 1 : Number(process.env.BENCH_ROUNDS ?? 3);
const WARMUP_S = TINY ? 0.1 : 2;
const WARMUP_CONNECTIONS = 8;
/** At the tiny size each load is this many requests (autocannon's least duration is a whole second). */
const SMOKE_REQUESTS = 100;
const DOMAINS = TINY ? 4 : 500;
const FILL_SERVICES = 3;
const FILL_BATCH = 25;
const DOMAIN_ROUNDS = TINY ? 1 : 5;
const POLL_MS = 5;
const WATCHDOG_MS = 600_000;
/**
 * BENCH_FLOOR_VIA=slot: the minimal Caddyfile dials the container's traffic slot (through the gate, as the
 * platform's Caddy does) rather than its project-network address, so the two Caddys differ by configuration only.
 */
const FLOOR_VIA_SLOT = process.env.BENCH_FLOOR_VIA === 'slot';

/** Issue #32: through Caddy at least 0.85x straight to the container. */
const TARGET_RATIO = 0.85;
const TARGET_DOMAIN_MS = 1000;

// ---------------------------------------------------------------------------------------------
const run = promisify(execFile);

async function portRange(): Promise<string> {
  const text = await readFile('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').catch(() => '?');
  return text.trim().replace(/\s+/, '-');
}

/** Connections to `ip:port` in TIME_WAIT on this machine: each one is an upstream connection opened and closed. */
async function timeWaits(ip: string, port: number): Promise<number> {
  const { stdout } = await run('ss', ['-Htan', 'state', 'time-wait', 'dst', `${ip}:${port}`]).catch(() => ({ stdout: null }));
  return stdout === null ? Number.NaN : stdout.split('\n').filter((line) => line.trim()).length;
}

/** CPU time (user + system) a process has used, in ms; NaN when it cannot be read. */
function cpuMsOf(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  try {
    return cpuMs(pid);
  } catch {
    return Number.NaN;
  }
}

interface FloorCaddy {
  url: string;
  pid: number | undefined;
  stop(): Promise<void>;
}

/**
 * The floor: the same Caddy binary run from the smallest hand-written Caddyfile that proxies to the
 * container, with the platform's keep-alive pool (Caddy's default keeps 32 idle connections per upstream,
 * fewer than the 50 of the load, and would measure its own reconnections instead).
 */
async function startFloorCaddy(upstream: string): Promise<FloorCaddy> {
  const dir = await mkdtemp(path.join(tmpdir(), 'slipway-bench-floor-'));
  const port = await quietPort();
  const caddyfile = [
    '{',
    '\tadmin off',
    '\tauto_https off',
    '}',
    `:${port} {`,
    `\treverse_proxy ${upstream} {`,
    '\t\ttransport http {',
    '\t\t\tkeepalive 2s',
    '\t\t\tkeepalive_idle_conns_per_host 256',
    '\t\t}',
    '\t}',
    '}',
    '',
  ].join('\n');
  await writeFile(path.join(dir, 'Caddyfile'), caddyfile);
  const child = spawn('caddy', ['run', '--adapter', 'caddyfile', '--config', path.join(dir, 'Caddyfile')], {
    env: { ...process.env, XDG_CONFIG_HOME: path.join(dir, 'config'), XDG_DATA_HOME: path.join(dir, 'data'), HOME: dir },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let output = '';
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    }
    await rm(dir, { recursive: true, force: true });
  };
  const deadline = performance.now() + 10_000;
  for (;;) {
    const answer = await requestVia(port, 'floor', '/', 1_000);
    if (answer?.status === 200 && BODY.test(answer.text)) return { url: `http://127.0.0.1:${port}/`, pid: child.pid, stop };
    if (child.exitCode !== null || performance.now() > deadline) {
      await stop();
      throw new Error(`the floor Caddy did not serve within 10 s:\n${output}`);
    }
    await sleep(50);
  }
}

/** A keep-alive HTTP server on $PORT, answering a short text, closing gracefully on SIGTERM. */
const NODE_SERVER = [
  'const http = require("http");',
  'const server = http.createServer((req, res) => { res.setHeader("content-type", "text/plain"); res.end("hello from slipway\\n"); });',
  'server.keepAliveTimeout = 65000;',
  'server.listen(Number(process.env.PORT));',
  'process.on("SIGTERM", () => server.close(() => process.exit(0)));',
].join(' ');
const BODY = /^hello from slipway$/m;

interface Load {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
  total: number;
}

async function load(url: string, host?: string): Promise<Load> {
  const result = await autocannon({
    url,
    connections: CONNECTIONS,
    duration: DURATION_S,
    ...(TINY ? { amount: SMOKE_REQUESTS } : {}),
    timeout: 30,
    ...(host ? { headers: { host } } : {}),
  });
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
    total: result.requests.total,
  };
}

/** Polls `hostname` through Caddy on fresh connections until it answers 200 with the body; ms since `since`. */
async function servedAfter(port: number, hostname: string, since: number, timeoutMs = 15_000): Promise<number> {
  for (;;) {
    const answer = await requestVia(port, hostname, '/', 1_000);
    if (answer?.status === 200 && BODY.test(answer.text)) return performance.now() - since;
    if (performance.now() - since > timeoutMs)
      throw new Error(`${hostname} not served within ${timeoutMs} ms; last: ${JSON.stringify(answer)}`);
    await sleep(POLL_MS);
  }
}

async function caddyAdmin(caddy: CaddyProcess, method: 'GET' | 'POST', path: string, body?: unknown): Promise<unknown> {
  const res = await fetch(`${caddy.adminUrl}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? null : JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`caddy ${method} ${path}: ${res.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

interface CaddyRoute {
  match?: unknown[];
  handle: unknown[];
  terminal?: boolean;
}

/** The hostnames Caddy routes: the files of `_all` in the generation the routes directory's stamp names. */
async function routedHostnames(routesDir: string): Promise<number> {
  const stamp = JSON.parse(await readFile(path.join(routesDir, 'table.json'), 'utf8')) as { digest: string };
  return (await readdir(path.join(routesDir, stamp.digest, '_all'))).length;
}

/**
 * The hostnames Caddy routes once it routes `expected` (or whatever it routes after `timeoutMs`). The stamp
 * is absent while an apply is under way (a background pass may run one just after the last write answered):
 * that is read as "not yet", not as a crash.
 */
async function routedHostnamesSettled(routesDir: string, expected: number, timeoutMs = 30_000): Promise<number> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const routed = await routedHostnames(routesDir).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT' && performance.now() < deadline) return Number.NaN;
      throw error;
    });
    if (routed === expected || (!Number.isNaN(routed) && performance.now() >= deadline)) return routed;
    await sleep(50);
  }
}

async function main(): Promise<void> {
  const watchdog = setTimeout(() => {
    console.error(`bench/proxy.ts: no result after ${WATCHDOG_MS / 1000} s; giving up`);
    void cleanup().finally(() => process.exit(1));
  }, WATCHDOG_MS);
  let caddy: CaddyProcess | null = null;
  let server: ServerProcess | null = null;
  let call: ReturnType<typeof api> | null = null;
  let projectId: string | null = null;
  let floor: FloorCaddy | null = null;
  async function cleanup(): Promise<void> {
    await floor?.stop().catch(() => {});
    if (call && projectId) await call('DELETE', `/api/projects/${projectId}`).catch(() => {});
    await server?.dispose().catch(() => {});
    await caddy?.stop().catch(() => {});
  }

  try {
    await provisionDocker();
    caddy = await startCaddy();
    server = await startServerProcess({
      ...caddy.platformEnv,
      HOST_PORT_RANGE: benchPortRange(),
      BUILD_CONCURRENCY: '2',
      STOP_GRACE_SECONDS: '1',
      RATE_LIMIT_PER_MINUTE: '0',
    });
    call = api(server.url, server.token);
    const nonce = randomBytes(3).toString('hex');
    projectId = (await call('POST', '/api/projects', { name: `bench-proxy-${nonce}` })).json.project.id as string;
    const created = await call('POST', `/api/projects/${projectId}/services`, {
      name: 'web',
      repoUrl: 'container-image',
      containerImage: 'node:22-bookworm-slim',
      startCommand: `exec node -e '${NODE_SERVER}'`,
      internalPort: 3000,
    });
    if (created.status !== 201) throw new Error(`${created.status} ${created.text}`);
    const web = created.json.service as { id: string; hostPort: number };
    const deployed = await deploy(call, web.id, 120_000);
    if (deployed.deployment.status !== 'succeeded') throw new Error(deployed.logs.join('\n'));
    const hostname = `web.bench-${nonce}.test`;
    const domain = await call('POST', `/api/services/${web.id}/domains`, { hostname });
    if (domain.status !== 201 || !domain.json.proxy.ok) throw new Error(`${domain.status} ${domain.text}`);
    await waitUntilServed(caddy.httpPort, hostname, { status: 200, text: BODY });
    // Its project-network address: the slot address is Caddy's alone (the gate refuses anyone else's new connections).
    const slot = await docker('inspect', '-f', '{{index .Config.Labels "slipway.slot"}}', deployed.deployment.containerName!);
    const containerIp = (
      await docker('inspect', '-f', '{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}', deployed.deployment.containerName!)
    )
      .split(' ')
      .find((ip) => ip && ip !== slot.trim())!;

    // ---- (a) through Caddy vs (b) the container itself --------------------------------------
    const viaCaddy = `http://127.0.0.1:${caddy.httpPort}/`;
    const direct = `http://${containerIp}:3000/`;
    const forwarder = `http://127.0.0.1:${web.hostPort}/`;
    const viaSlot = FLOOR_VIA_SLOT && slot.trim() !== '';
    floor = await startFloorCaddy(viaSlot ? `${slot.trim()}:80` : `${containerIp}:3000`);
    for (const [url, host] of [
      [viaCaddy, hostname],
      [direct, undefined],
      [floor.url, undefined],
    ] as const) {
      await autocannon({
        url,
        connections: WARMUP_CONNECTIONS,
        duration: WARMUP_S,
        ...(TINY ? { amount: SMOKE_REQUESTS } : {}),
        ...(host ? { headers: { host } } : {}),
      });
    }
    const caddyRuns: Load[] = [];
    const directRuns: Load[] = [];
    const floorRuns: Load[] = [];
    const waits = { caddy: [] as number[], direct: [] as number[], floor: [] as number[] };
    /** Microseconds of the Caddy's CPU per request answered, per round. */
    const cpuPerRequest = { caddy: [] as number[], floor: [] as number[] };
    const floorUrl = floor.url;
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? (['direct', 'caddy', 'floor'] as const) : (['floor', 'caddy', 'direct'] as const);
      for (const which of order) {
        // Caddy dials the container's traffic slot (port 80, which the gate sends on to 3000).
        const [ip, port] = (which === 'caddy' && slot.trim()) || (which === 'floor' && viaSlot) ? [slot.trim(), 80] : [containerIp, 3000];
        const before = await timeWaits(ip, port);
        const pid = which === 'caddy' ? caddy.pid() : which === 'floor' ? floor.pid : undefined;
        const cpuBefore = cpuMsOf(pid);
        const result = which === 'caddy' ? await load(viaCaddy, hostname) : await load(which === 'floor' ? floorUrl : direct);
        const cpu = cpuMsOf(pid) - cpuBefore;
        ({ caddy: caddyRuns, direct: directRuns, floor: floorRuns })[which].push(result);
        if (which !== 'direct') cpuPerRequest[which].push((cpu * 1000) / Math.max(result.total, 1));
        waits[which].push((await timeWaits(ip, port)) - before);
        await sleep(500);
      }
    }
    await floor.stop();
    floor = null;
    // For scale: the platform's host-port forwarder (a TCP relay in the platform process).
    const relayed = await load(forwarder);

    // ---- (c) a new domain until Caddy serves it, with 500 configured --------------------------
    const fillServices = [web.id];
    for (let i = 0; i < FILL_SERVICES; i++) {
      const s = await call('POST', `/api/projects/${projectId}/services`, {
        name: `fill-${i}`,
        repoUrl: 'container-image',
        containerImage: 'node:22-bookworm-slim',
        startCommand: `exec node -e '${NODE_SERVER}'`,
        internalPort: 3000,
      });
      if (s.status !== 201) throw new Error(`${s.status} ${s.text}`);
      fillServices.push(s.json.service.id);
    }
    const fillStarted = performance.now();
    const toCreate = DOMAINS - 2; // the domain above, and the one measured
    for (let first = 0; first < toCreate; first += FILL_BATCH) {
      const batch = Array.from({ length: Math.min(FILL_BATCH, toCreate - first) }, (_, k) => first + k);
      await Promise.all(
        batch.map(async (i) => {
          const res = await call!('POST', `/api/services/${fillServices[i % fillServices.length]}/domains`, {
            hostname: `d${i}.fill-${nonce}.test`,
          });
          if (res.status !== 201) throw new Error(`domain ${i}: ${res.status} ${res.text}`);
        }),
      );
    }
    const fillMs = performance.now() - fillStarted;
    let domainCount = 0;
    for (const id of fillServices) domainCount += (await call('GET', `/api/services/${id}/overview`)).json.domains.length as number;
    // Hostnames are files of the routes directory, not configuration: counted there.
    const routesDir = path.join(server.dataDir, 'caddy-routes');
    const loadedRoutes = await routedHostnamesSettled(routesDir, DOMAINS - 1);
    if (loadedRoutes !== DOMAINS - 1) throw new Error(`Caddy routes ${loadedRoutes} hostnames, expected ${DOMAINS - 1}`);

    const slipwayMs: number[] = [];
    const postMs: number[] = [];
    const caddyMs: number[] = [];
    for (let round = 0; round < DOMAIN_ROUNDS; round++) {
      // Slipway: POST the domain, poll Caddy meanwhile.
      const name = `m${round}.measure-${nonce}.test`;
      const started = performance.now();
      const posted = call('POST', `/api/services/${web.id}/domains`, { hostname: name }).then((res) => ({
        res,
        at: performance.now() - started,
      }));
      slipwayMs.push(await servedAfter(caddy.httpPort, name, started));
      const { res, at } = await posted;
      if (res.status !== 201 || !res.json.proxy.ok) throw new Error(`${res.status} ${res.text}`);
      postMs.push(at);
      const removed = await call('DELETE', `/api/services/${web.id}/domains/${res.json.domain.id}`);
      if (removed.status !== 200) throw new Error(`${removed.status} ${removed.text}`);
      await sleep(200);

      // Caddy alone: the configuration it serves now with a route for the new hostname first, then put back.
      const config = (await caddyAdmin(caddy, 'GET', '/config/')) as { apps: { http: { servers: { slipway: { routes: CaddyRoute[] } } } } };
      const baseName = `b${round}.baseline-${nonce}.test`;
      const extended = structuredClone(config);
      extended.apps.http.servers.slipway.routes.unshift({
        match: [{ host: [baseName] }],
        handle: [{ handler: 'reverse_proxy', upstreams: [{ dial: `${containerIp}:3000` }] }],
        terminal: true,
      });
      const baseStarted = performance.now();
      const loaded = caddyAdmin(caddy, 'POST', '/load', extended);
      caddyMs.push(await servedAfter(caddy.httpPort, baseName, baseStarted));
      await loaded;
      await caddyAdmin(caddy, 'POST', '/load', config);
      await sleep(200);
    }

    // ---- the table ---------------------------------------------------------------------------
    const caddyRps = median(caddyRuns.map((r) => r.rps));
    const directRps = median(directRuns.map((r) => r.rps));
    const caddyP50 = median(caddyRuns.map((r) => r.p50));
    const directP50 = median(directRuns.map((r) => r.p50));
    const caddyP99 = median(caddyRuns.map((r) => r.p99));
    const directP99 = median(directRuns.map((r) => r.p99));
    const floorRps = median(floorRuns.map((r) => r.rps));
    const caddyCpu = median(cpuPerRequest.caddy);
    const floorCpu = median(cpuPerRequest.floor);
    const fmt = (n: number, digits = 0) => n.toFixed(digits);
    const rows: string[][] = [
      [
        'req/s through Caddy (Host header) vs the container directly',
        fmt(caddyRps),
        fmt(directRps),
        `${fmt(caddyRps / directRps, 2)}x`,
        `>= ${TARGET_RATIO}x`,
      ],
      [
        'req/s through a minimal Caddyfile (the floor) vs the container directly',
        fmt(floorRps),
        fmt(directRps),
        `${fmt(floorRps / directRps, 2)}x`,
        '-',
      ],
      [
        "Caddy's CPU per request (us): Slipway's configuration vs the minimal Caddyfile",
        fmt(caddyCpu),
        fmt(floorCpu),
        `${fmt(caddyCpu / floorCpu, 2)}x`,
        '-',
      ],
      ['latency p50, ms', fmt(caddyP50, 1), fmt(directP50, 1), `${fmt(caddyP50 / directP50, 2)}x`, '-'],
      ['latency p99, ms', fmt(caddyP99, 1), fmt(directP99, 1), `${fmt(caddyP99 / directP99, 2)}x`, '-'],
      [
        `new domain -> served, ${DOMAINS} domains (ms, median of ${DOMAIN_ROUNDS})`,
        fmt(median(slipwayMs)),
        fmt(median(caddyMs)),
        `${fmt(median(slipwayMs) / median(caddyMs), 2)}x`,
        `< ${TARGET_DOMAIN_MS} ms`,
      ],
      [
        `new domain -> served, ${DOMAINS} domains (ms, max of ${DOMAIN_ROUNDS})`,
        fmt(Math.max(...slipwayMs)),
        fmt(Math.max(...caddyMs)),
        `${fmt(Math.max(...slipwayMs) / Math.max(...caddyMs), 2)}x`,
        `< ${TARGET_DOMAIN_MS} ms`,
      ],
    ];
    const header = ['measure', 'slipway', 'baseline', 'ratio', 'target'];
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
    const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
    console.log(`\nReverse proxy: Slipway's Caddy routes vs the container directly and Caddy alone, same run`);
    console.log(
      `(${cpus().length} CPUs, load ${loadavg()[0]!.toFixed(2)}; ${CONNECTIONS} connections, ${DURATION_S} s x ${ROUNDS} rounds each, medians; autocannon in this process)\n`,
    );
    console.log(line(header));
    console.log(line(widths.map((w) => '-'.repeat(w))));
    for (const row of rows) console.log(line(row));
    console.log('');
    console.log(
      `baseline of rows 1-2 and 4-5: the container at its project-network address (no proxy); of row 3: a second Caddy run from a Caddyfile with only \`reverse_proxy\` to the container${viaSlot ? "'s traffic slot (BENCH_FLOOR_VIA=slot)" : ''} (the same keep-alive pool); of rows 6-7: Caddy's own POST /load of the configuration it serves with a \`host\` route for the new hostname`,
    );
    console.log(
      `rounds, req/s: Caddy ${caddyRuns.map((r) => fmt(r.rps)).join(', ')}; the container ${directRuns.map((r) => fmt(r.rps)).join(', ')}; the minimal Caddyfile ${floorRuns.map((r) => fmt(r.rps)).join(', ')}; Caddy's CPU per request (us): Slipway's ${cpuPerRequest.caddy.map((v) => fmt(v)).join(', ')}, the minimal Caddyfile's ${cpuPerRequest.floor.map((v) => fmt(v)).join(', ')}; the host port's forwarder (once): ${fmt(relayed.rps)} req/s, p50 ${fmt(relayed.p50, 1)} ms, p99 ${fmt(relayed.p99, 1)} ms (${fmt(relayed.rps / directRps, 2)}x the container)`,
    );
    console.log(
      `new connections to the container in TIME_WAIT (upstream connections opened and closed), per round: Caddy ${waits.caddy.join(', ')}; direct ${waits.direct.join(', ')}; the minimal Caddyfile ${waits.floor.join(', ')} (the ephemeral ports toward one ip:port are ${await portRange()})`,
    );
    const loads = [...caddyRuns, ...directRuns, ...floorRuns, relayed];
    const problems = loads.reduce((sum, r) => sum + r.errors + r.non2xx, 0);
    console.log(`errors + non-2xx answers during the load: ${problems} of ${loads.reduce((s, r) => s + r.total, 0)} requests`);
    console.log(
      `domains: ${domainCount} configured over ${fillServices.length} services, ${DOMAINS - 1} hostnames routed by Caddy before each measure; the ${DOMAINS - 2} fill domains took ${fmt(fillMs / 1000, 1)} s (${FILL_BATCH} at a time)`,
    );
    console.log(
      `new domain, each round (ms): slipway ${slipwayMs.map((v) => fmt(v)).join(', ')} (POST answered after ${postMs.map((v) => fmt(v)).join(', ')}); Caddy alone ${caddyMs.map((v) => fmt(v)).join(', ')}`,
    );
    const ratio = caddyRps / directRps;
    recordRows('proxy', [
      {
        measure: `through Caddy vs the container directly, req/s (${CONNECTIONS} connections, keep-alive)`,
        value: fmt(caddyRps),
        baseline: fmt(directRps),
        ratio,
        target: `>= ${TARGET_RATIO}x`,
        met: ratio >= TARGET_RATIO,
      },
      {
        measure: `through a minimal Caddyfile vs the container directly, req/s (the floor of the row above)`,
        value: fmt(floorRps),
        baseline: fmt(directRps),
        ratio: floorRps / directRps,
        target: '-',
        met: null,
      },
      {
        measure: `new domain served, ${DOMAINS} domains (max of ${DOMAIN_ROUNDS})`,
        value: `${fmt(Math.max(...slipwayMs))} ms`,
        baseline: `${fmt(Math.max(...caddyMs))} ms`,
        ratio: Math.max(...caddyMs) / Math.max(...slipwayMs),
        target: `< ${TARGET_DOMAIN_MS} ms`,
        met: Math.max(...slipwayMs) < TARGET_DOMAIN_MS,
      },
    ]);
    console.log(
      `\nCaddy/container ${fmt(ratio, 2)}x ${ratio >= TARGET_RATIO ? 'PASS' : 'MISS'} (the minimal Caddyfile's ${fmt(floorRps / directRps, 2)}x); new domain median ${fmt(median(slipwayMs))} ms, max ${fmt(Math.max(...slipwayMs))} ms ${Math.max(...slipwayMs) < TARGET_DOMAIN_MS ? 'PASS' : 'MISS'}`,
    );
  } finally {
    clearTimeout(watchdog);
    await cleanup();
  }
}

await runBench(main, WATCHDOG_MS + 60_000);
