/**
 * Control-plane benchmark: `npm run bench:api` (one part of `npm run bench`).
 *
 * In one run, against a koa "hello" started with the same node and V8 flags (bench/bare-koa.mjs):
 *  1. start time: spawn of the server as `npm start` runs it (test/helpers/server-process.ts) on an
 *     empty data directory, to the first answered request; the koa baseline from spawn to its first answer;
 *  2. idle RSS after start;
 *  3. seeds 100 projects x 10 services through the REST API (a few variables, a domain and deployments on
 *     the service whose overview is measured), then loads GET /api/projects (its default page),
 *     GET /api/services/:id/overview and GET /api/services/:id/deployments with autocannon (50 connections,
 *     12 s each in 4 rounds alternating with the koa baseline, which answers the same paths with the very
 *     JSON bodies fetched once, so the load of a shared machine weighs on both alike;
 *  4. seeds 10 deployments per service (10,000; each aborted, so history rather than a queue) and reads the
 *     RSS again, after a warm-up of every measured path;
 *  5. restarts the server on that data directory and times spawn to first answered request again.
 * BENCH_SIZE=tiny runs it at a tiny size (what `npm test` does, to prove it runs). It never asserts a figure:
 * whatever they are, it exits 0 unless it crashes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { api, startArgs, startServerProcess, type ServerProcess } from '../test/helpers/server-process.js';
import { ownPortRange } from '../test/helpers/docker.js';
import { autocannon } from './autocannon.js';
import { runBench } from './run-bench.js';
import { type BenchRow, benchPortRange, cpuMs, recordRows, rowsTable, TINY } from './bench-support.js';

const ROOT = path.resolve(import.meta.dirname, '..');

const PROJECTS = TINY ? 2 : 100;
const SERVICES_PER_PROJECT = TINY ? 4 : 10;
const DEPLOYMENTS_PER_SERVICE = TINY ? 1 : 10;
/** Concurrent seeding clients. */
const SEED_CLIENTS = 4;
const CONNECTIONS = TINY ? 4 : 50;
const DURATION_S = TINY ? 0.3 : Number(process.env.BENCH_DURATION_S ?? 12);
/** Each path's load, for slipway and the baseline alike, is this many alternating rounds of DURATION_S / LOAD_ROUNDS. */
const LOAD_ROUNDS = TINY ? 1 : 4;
/** Warm-up: enough requests to get the JIT going, few connections so no long backlog is left. */
const WARMUP_S = TINY ? 0.1 : 1;
/** Each of the other list and overview endpoints, per server, in LOAD_ROUNDS alternating rounds (shorter: there are many). */
const LIST_DURATION_S = TINY ? 0.3 : Number(process.env.BENCH_LIST_DURATION_S ?? 2);
/** At the tiny size each load is this many requests, whatever its duration. */
const SMOKE_REQUESTS = 40;
const WARMUP_CONNECTIONS = 8;
const REQUEST_TIMEOUT_S = 60;
/** The bench gives up (and cleans up) if a run takes this long: a hang must not go unnoticed. */
const WATCHDOG_MS = 20 * 60_000;
const IDLE_SETTLE_MS = TINY ? 0 : 1000;
/** How long the bench waits for the server to go quiet before reading its RSS. */
const IDLE_WAIT_MS = TINY ? 1000 : 30_000;
/**
 * Host ports for 1,000 services (none is bound: no deployment runs); the test helper's default window
 * of 200 runs out. One window for both starts, so the restarted server finds its services' ports inside it.
 */
// 1,000 services need a window of 2,000; the tiny size's 8 fit one of the slot's windows (benchPortRange).
const HOST_PORT_RANGE = TINY ? benchPortRange() : ownPortRange(2000);

const TARGET = {
  listRatio: 0.6,
  overviewP99Ms: 20,
  idleRss: 1.2,
  seededRss: 1.6,
  startEmptyMs: 1000,
  startSeededMs: 2000,
};

// ---------------------------------------------------------------------------------------------
// /proc helpers (Linux)

function rssMb(pid: number): number {
  const m = /^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : Number.NaN;
}

/** Waits until the process uses under 5% of a core over 250 ms (at most `maxMs`). */
async function waitIdle(pid: number, maxMs = IDLE_WAIT_MS): Promise<void> {
  const deadline = Date.now() + maxMs;
  while (Date.now() < deadline) {
    const before = cpuMs(pid);
    await sleep(250);
    if (cpuMs(pid) - before < 12.5) return;
  }
}

/** CPU time (ms) all CPUs of the machine spent busy, from /proc/stat. */
function machineBusyMs(): number {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal ...: everything but idle and iowait.
  const busy = fields.slice(0, 8).reduce((sum, v, i) => (i === 3 || i === 4 ? sum : sum + v), 0);
  return (busy * 1000) / 100;
}

// ---------------------------------------------------------------------------------------------
// The koa baseline: bench/bare-koa.mjs under the node and flags of `npm start`.

interface BareKoa {
  url: string;
  pid: number;
  /** Spawn to first answered request, ms. */
  startMs: number;
  load(bodies: Record<string, unknown>): Promise<void>;
  stop(): Promise<void>;
}

async function startBareKoa(): Promise<BareKoa> {
  const flags = startArgs().slice(0, -1);
  const started = performance.now();
  const child: ChildProcess = spawn(process.execPath, [...flags, path.join(ROOT, 'bench', 'bare-koa.mjs')], {
    cwd: ROOT,
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  let output = '';
  child.stderr!.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const reply = <T>(pick: (m: Record<string, unknown>) => T | undefined) =>
    new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`bare koa did not answer:\n${output}`)), 30_000);
      const onMessage = (m: Record<string, unknown>) => {
        const value = pick(m);
        if (value === undefined) return;
        clearTimeout(timer);
        child.off('message', onMessage);
        resolve(value);
      };
      child.on('message', onMessage);
      void exited.then(() => reject(new Error(`bare koa exited:\n${output}`)));
    });
  const port = await reply((m) => (typeof m.port === 'number' ? m.port : undefined));
  const url = `http://127.0.0.1:${port}`;
  const hello = await fetch(`${url}/`);
  await hello.text();
  const startMs = performance.now() - started;
  return {
    url,
    pid: child.pid!,
    startMs,
    async load(bodies) {
      const answer = reply((m) => (typeof m.loaded === 'number' ? m.loaded : undefined));
      child.send({ bodies });
      const loaded = await answer;
      if (loaded !== Object.keys(bodies).length) throw new Error(`bare koa loaded ${loaded} bodies`);
    },
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await Promise.race([exited, sleep(3000)]);
      if (child.exitCode === null) child.kill('SIGKILL');
    },
  };
}

/** Starts the server as `npm start` does; returns it with the time from spawn to its first answered request. */
async function startTimed(dataDir: string, token: string): Promise<{ server: ServerProcess; startMs: number }> {
  const started = performance.now();
  const server = await startServerProcess({ RATE_LIMIT_PER_MINUTE: '0', HOST_PORT_RANGE }, { dataDir, token });
  const res = await api(server.url, token)('GET', '/api/projects');
  if (res.status !== 200) throw new Error(`GET /api/projects answered ${res.status}: ${res.text.slice(0, 300)}`);
  return { server, startMs: performance.now() - started };
}

// ---------------------------------------------------------------------------------------------
// Seeding through the REST API

interface Seeded {
  serviceIds: string[];
  overviewServiceId: string;
  seconds: number;
}

type Call = ReturnType<typeof api>;

async function must(call: Call, method: string, pathname: string, body?: unknown, expected = 201) {
  for (let attempt = 1; ; attempt++) {
    const res = await call(method, pathname, body);
    if (res.status === expected) return res.json;
    // Two writers may race for a host port or slug; the loser gets a conflict and asks again.
    if (res.status === 409 && attempt < 5) continue;
    throw new Error(`${method} ${pathname} answered ${res.status}: ${res.text.slice(0, 300)}`);
  }
}

/** Runs `work(i)` for i in [0, count) on `clients` concurrent workers. */
async function pool(count: number, clients: number, work: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next < count) await work(next++);
    }),
  );
}

async function seed(url: string, token: string): Promise<Seeded> {
  const call = api(url, token);
  const overviewProject = Math.floor(PROJECTS / 2);
  let overviewServiceId = '';
  const serviceIds: string[] = [];

  const seedProject = async (p: number) => {
    const { project } = await must(call, 'POST', '/api/projects', {
      name: `Bench project ${p}`,
      description: `Project ${p} of the API benchmark`,
    });
    const slugs: string[] = [];
    for (let s = 0; s < SERVICES_PER_PROJECT; s++) {
      // A realistic mix: repository web apps, a worker, a container image and a database.
      const input =
        s === SERVICES_PER_PROJECT - 1
          ? { name: `db ${s}`, repoUrl: 'database', repoFullName: 'database:postgres' }
          : s === SERVICES_PER_PROJECT - 2
            ? { name: `cache ${s}`, repoUrl: 'container-image', containerImage: 'redis:7-alpine' }
            : s === SERVICES_PER_PROJECT - 3
              ? { name: `worker ${s}`, repoFullName: `acme/project-${p}-worker`, runtimeMode: 'worker', startCommand: 'node worker.js' }
              : {
                  name: `web ${s}`,
                  repoFullName: `acme/project-${p}-web-${s}`,
                  branch: 'main',
                  buildCommand: 'npm run build',
                  startCommand: 'npm start',
                };
      const { service } = await must(call, 'POST', `/api/projects/${project.id}/services`, input);
      slugs.push(service.slug);
      serviceIds.push(service.id);
      if (p === overviewProject && s === 0) overviewServiceId = service.id;
    }
    if (p !== overviewProject) return;
    // The measured overview: a few variables (one secret, one reference), a domain.
    const id = overviewServiceId;
    const dbSlug = slugs[SERVICES_PER_PROJECT - 1]!;
    const vars: Array<{ key: string; value: string; secret?: boolean }> = [
      { key: 'NODE_ENV', value: 'production' },
      { key: 'LOG_LEVEL', value: 'info' },
      { key: 'SESSION_SECRET', value: randomBytes(24).toString('hex'), secret: true },
      { key: 'DATABASE_URL', value: `\${${dbSlug}.DATABASE_URL}` },
      { key: 'PUBLIC_URL', value: 'https://app.bench.example.com' },
    ];
    for (const v of vars) await must(call, 'POST', `/api/services/${id}/env`, v, 200);
    await must(call, 'POST', `/api/services/${id}/domains`, { hostname: 'app.bench.example.com' });
  };

  const started = performance.now();
  await pool(PROJECTS, SEED_CLIENTS, seedProject);
  return { serviceIds, overviewServiceId, seconds: (performance.now() - started) / 1000 };
}

/**
 * Every other list and overview endpoint (issue 32: each at least 0.6x koa serving the same JSON), on the
 * measured service's project: its environments, domains, variables, deployments, database, and the
 * install's keys, notifications, audit log, storage, databases and servers. Path and label, as the table shows it.
 */
async function otherListPaths(url: string, token: string, serviceId: string): Promise<Record<string, string>> {
  const call = api(url, token);
  const got = async (p: string) => {
    const res = await call('GET', p);
    if (res.status !== 200) throw new Error(`GET ${p} answered ${res.status}: ${res.text.slice(0, 300)}`);
    return res.json as Record<string, any>;
  };
  const { service } = await got(`/api/services/${serviceId}/overview`);
  const projectId = service.projectId as string;
  const { project } = await got(`/api/projects/${projectId}`);
  const database = (project.services as Array<{ id: string; repoUrl: string | null }>).find((s) => s.repoUrl === 'database');
  if (!database) throw new Error('the measured project has no database service');
  const [deployment] = (await got(`/api/services/${serviceId}/deployments`)).deployments as Array<{ id: string }>;
  if (!deployment) throw new Error('the measured service has no deployment');
  return {
    'GET /api/projects/:slug': `/api/projects/${project.slug}`,
    'GET /api/projects/:id/environments': `/api/projects/${projectId}/environments`,
    'GET /api/environments/:id': `/api/environments/${service.environmentId}`,
    'GET /api/environments/:id/apps': `/api/environments/${service.environmentId}/apps`,
    'GET /api/projects/:id/domains': `/api/projects/${projectId}/domains`,
    'GET /api/projects/:id/env': `/api/projects/${projectId}/env`,
    'GET /api/services/:id/variables': `/api/services/${serviceId}/variables`,
    'GET /api/services/:id/volumes': `/api/services/${serviceId}/volumes`,
    'GET /api/services/:id/suggestion-keys': `/api/services/${serviceId}/suggestion-keys`,
    'GET /api/projects/:id/database-variable-suggestions': `/api/projects/${projectId}/database-variable-suggestions`,
    'GET /api/deployments/:id': `/api/deployments/${deployment.id}`,
    'GET /api/deployments/:id/logs': `/api/deployments/${deployment.id}/logs`,
    'GET /api/services/:id/database/imports': `/api/services/${database.id}/database/imports`,
    'GET /api/databases': '/api/databases',
    'GET /api/databases/:id': `/api/databases/${database.id}`,
    'GET /api/storage': '/api/storage',
    'GET /api/api-keys': '/api/api-keys',
    'GET /api/notifications/channels': '/api/notifications/channels',
    'GET /api/notifications/rules': '/api/notifications/rules',
    'GET /api/notifications/deliveries': '/api/notifications/deliveries',
    'GET /api/audit': '/api/audit',
    'GET /api/projects/:id/audit': `/api/projects/${projectId}/audit`,
    'GET /api/servers': '/api/servers',
  };
}

/** `perService` deployments on every service, each aborted at once: history, not a queue (the runner is paused). */
async function seedDeployments(url: string, token: string, serviceIds: string[], perService: number): Promise<number> {
  const call = api(url, token);
  const started = performance.now();
  await pool(serviceIds.length * perService, SEED_CLIENTS, async (i) => {
    const id = serviceIds[i % serviceIds.length]!;
    const { deployment } = await must(call, 'POST', `/api/services/${id}/deployments`);
    const abort = await call('POST', `/api/deployments/${deployment.id}/abort`);
    if (abort.status !== 200 && abort.status !== 409) throw new Error(`abort answered ${abort.status}: ${abort.text.slice(0, 300)}`);
  });
  return (performance.now() - started) / 1000;
}

// ---------------------------------------------------------------------------------------------
// Load

interface Load {
  rps: number;
  p99: number;
  avg: number;
  total: number;
  bad: number;
  otherCores: number;
}

async function load(url: string, token: string | undefined, durationS: number, pid: number, connections = CONNECTIONS): Promise<Load> {
  const cpuBefore = cpuMs(pid);
  const selfBefore = cpuMs(process.pid);
  const machineBefore = machineBusyMs();
  const started = performance.now();
  const result = await autocannon({
    url,
    connections,
    duration: durationS,
    // A tiny run proves the path answers: a few requests, not a second of them (autocannon's least duration).
    ...(TINY ? { amount: SMOKE_REQUESTS } : {}),
    headers: token ? { authorization: `Bearer ${token}` } : {},
    // Long enough that a slow server is measured, not timed out and flooded with retries.
    timeout: REQUEST_TIMEOUT_S,
  });
  const wallMs = performance.now() - started;
  const cpu = cpuMs(pid) - cpuBefore;
  const otherCores = (machineBusyMs() - machineBefore - cpu - (cpuMs(process.pid) - selfBefore)) / wallMs;
  // Requests still in flight when autocannon stops are abandoned, not cancelled: let the server finish them.
  await waitIdle(pid);
  return {
    rps: result.requests.average,
    p99: result.latency.p99,
    avg: result.latency.average,
    total: result.requests.total,
    bad: result.non2xx + result.errors + result.timeouts,
    otherCores,
  };
}

// ---------------------------------------------------------------------------------------------

const fmt = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');

async function main(): Promise<void> {
  const runStarted = performance.now();
  const log = (msg: string) => process.stderr.write(`[bench:api ${fmt((performance.now() - runStarted) / 1000, 1)}s] ${msg}\n`);
  const workDir = mkdtempSync(path.join(tmpdir(), 'slipway-bench-'));
  const dataDir = path.join(workDir, 'data');
  const token = `boot_${randomBytes(16).toString('hex')}`;
  const loadAtStart = loadavg()[0]!;

  let slipway: ServerProcess | undefined;
  let bare: BareKoa | undefined;
  const cleanup = async () => {
    await bare?.stop().catch(() => {});
    if (slipway) {
      await Promise.race([slipway.stop(), sleep(5000)]).catch(() => {});
      await slipway.kill().catch(() => {});
    }
    rmSync(workDir, { recursive: true, force: true });
  };
  const onSignal = () => void cleanup().finally(() => process.exit(130));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  try {
    // 1-2. Start times and idle memory, the baseline first (alone on the machine, as the server will be).
    log('starting the koa baseline, then slipway on an empty data directory');
    bare = await startBareKoa();
    await sleep(IDLE_SETTLE_MS);
    const bareRss = rssMb(bare.pid);
    const first = await startTimed(dataDir, token);
    slipway = first.server;
    const pid = slipway.child.pid!;
    await waitIdle(pid);
    await sleep(IDLE_SETTLE_MS);
    const rssStart = rssMb(pid);
    log(
      `slipway answered ${fmt(first.startMs, 0)} ms after spawn (koa ${fmt(bare.startMs, 0)} ms); idle RSS ${fmt(rssStart)} MB (koa ${fmt(bareRss)} MB)`,
    );

    // 3. Seed, fetch the bodies once, load.
    log(`seeding ${PROJECTS} projects x ${SERVICES_PER_PROJECT} services through the REST API`);
    const seeded = await seed(slipway.url, token);
    log(`seeded in ${fmt(seeded.seconds)} s`);
    const paths = {
      'GET /api/projects (first page)': '/api/projects',
      'GET /api/services/:id/overview': `/api/services/${seeded.overviewServiceId}/overview`,
      'GET /api/services/:id/deployments': `/api/services/${seeded.overviewServiceId}/deployments`,
    };
    // A few deployments on the measured service before its bodies are read (the rest come later).
    await seedDeployments(slipway.url, token, [seeded.overviewServiceId], 3);
    const otherPaths = await otherListPaths(slipway.url, token, seeded.overviewServiceId);
    const bodies: Record<string, unknown> = {};
    const sizes: Record<string, number> = {};
    for (const p of [...Object.values(paths), ...Object.values(otherPaths)]) {
      const res = await api(slipway.url, token)('GET', p);
      if (res.status !== 200) throw new Error(`GET ${p} answered ${res.status}: ${res.text.slice(0, 300)}`);
      bodies[p] = res.json;
      sizes[p] = Buffer.byteLength(res.text);
    }
    const listedProjects = await countAllProjects(slipway.url, token);
    if (listedProjects !== PROJECTS)
      throw new Error(`GET /api/projects, page by page, lists ${listedProjects} projects, expected ${PROJECTS}`);

    // Both answer side by side, in alternating rounds (which goes first alternating too): the load of a
    // shared machine, which moves within seconds, weighs on both alike.
    log('warming up slipway and the koa baseline (given the same bodies), then loading each path in alternating rounds');
    await bare.load(bodies);
    // No warm-up at the tiny size: its one small load per path is the smoke run, and warms nothing it measures.
    for (const p of TINY ? [] : Object.values(paths)) {
      await load(slipway.url + p, token, WARMUP_S, pid, WARMUP_CONNECTIONS);
      await load(bare.url + p, undefined, WARMUP_S, bare.pid, WARMUP_CONNECTIONS);
    }
    const sLoads: Record<string, Load> = {};
    const bLoads: Record<string, Load> = {};
    const [server, koa] = [slipway, bare];
    const measure = async (name: string, p: string, durationS: number) => {
      const runs: { slipway: Load[]; koa: Load[] } = { slipway: [], koa: [] };
      for (let round = 0; round < LOAD_ROUNDS; round++) {
        const order = round % 2 === 0 ? (['slipway', 'koa'] as const) : (['koa', 'slipway'] as const);
        for (const who of order) {
          runs[who].push(
            who === 'slipway'
              ? await load(server.url + p, token, durationS / LOAD_ROUNDS, pid)
              : await load(koa.url + p, token, durationS / LOAD_ROUNDS, koa.pid),
          );
        }
      }
      sLoads[name] = combine(runs.slipway);
      bLoads[name] = combine(runs.koa);
    };
    for (const [name, p] of Object.entries(paths)) await measure(name, p, DURATION_S);
    // The tiny size loads two (every path's body was read above, each a 200): the smoke run's time goes to the rest of the bench.
    const otherLoaded = Object.entries(otherPaths).slice(0, TINY ? 2 : undefined);
    log(`every other list and overview endpoint: ${otherLoaded.length} paths, ${LIST_DURATION_S} s per path and server`);
    for (const [name, p] of otherLoaded) {
      // Warmed as the three above, shorter; the tiny size warms nothing (see above).
      if (!TINY) {
        await load(slipway.url + p, token, WARMUP_S / 2, pid, WARMUP_CONNECTIONS);
        await load(bare.url + p, undefined, WARMUP_S / 2, bare.pid, WARMUP_CONNECTIONS);
      }
      await measure(name, p, LIST_DURATION_S);
    }

    // 4. History: deployments on every service, then memory after warming every path again.
    log(`seeding ${DEPLOYMENTS_PER_SERVICE} deployments on each of ${seeded.serviceIds.length} services`);
    const deploySeedS = await seedDeployments(slipway.url, token, seeded.serviceIds, DEPLOYMENTS_PER_SERVICE);
    log(`seeded deployments in ${fmt(deploySeedS)} s`);
    for (const p of TINY ? [] : Object.values(paths)) await load(slipway.url + p, token, WARMUP_S, pid, WARMUP_CONNECTIONS);
    await waitIdle(pid);
    await sleep(IDLE_SETTLE_MS);
    const rssSeeded = rssMb(pid);
    log(`RSS with ${seeded.serviceIds.length} services and their deployments: ${fmt(rssSeeded)} MB`);

    // 5. Restart on that data directory (not at the tiny size: it would run startTimed a second time, and
    // double the smoke run's cost, to measure nothing).
    await slipway.stop();
    slipway = undefined;
    let second = { startMs: Number.NaN };
    let rssRestarted = Number.NaN;
    if (!TINY) {
      const restarted = await startTimed(dataDir, token);
      second = restarted;
      slipway = restarted.server;
      // The same history at rest: what the platform holds for it, without what the loads above left in the allocator.
      await waitIdle(restarted.server.child.pid!);
      await sleep(IDLE_SETTLE_MS);
      rssRestarted = rssMb(restarted.server.child.pid!);
      log(`restarted: answered ${fmt(second.startMs, 0)} ms after spawn; idle RSS ${fmt(rssRestarted)} MB`);
      await slipway.stop();
      slipway = undefined;
    }

    const bareStartMs = bare.startMs;
    await bare.stop();
    bare = undefined;

    // Report.
    const services = seeded.serviceIds.length;
    const rows: BenchRow[] = [];
    const mb = (n: number) => `${fmt(n)} MB`;
    const ms = (n: number) => `${fmt(n, 0)} ms`;
    rows.push({
      measure: 'RSS idle after start',
      value: mb(rssStart),
      baseline: mb(bareRss),
      ratio: rssStart / bareRss,
      target: `<= ${TARGET.idleRss}x`,
      met: rssStart / bareRss <= TARGET.idleRss,
    });
    rows.push({
      measure: `RSS with ${services} services, ${services * DEPLOYMENTS_PER_SERVICE + 3} deployments, after loading every path`,
      value: mb(rssSeeded),
      baseline: mb(bareRss),
      ratio: rssSeeded / bareRss,
      target: `<= ${TARGET.seededRss}x`,
      met: rssSeeded / bareRss <= TARGET.seededRss,
    });
    if (!TINY)
      rows.push({
        measure: `RSS with ${services} services, ${services * DEPLOYMENTS_PER_SERVICE + 3} deployments, restarted, idle`,
        value: mb(rssRestarted),
        baseline: mb(bareRss),
        ratio: rssRestarted / bareRss,
        target: `<= ${TARGET.seededRss}x`,
        met: rssRestarted / bareRss <= TARGET.seededRss,
      });
    rows.push({
      measure: 'start, empty data dir: spawn to first answer',
      value: ms(first.startMs),
      baseline: ms(bareStartMs),
      ratio: bareStartMs / first.startMs,
      target: `<= ${TARGET.startEmptyMs} ms`,
      met: first.startMs <= TARGET.startEmptyMs,
    });
    rows.push({
      measure: `start with ${services} services: spawn to first answer`,
      value: ms(second.startMs),
      baseline: ms(bareStartMs),
      ratio: bareStartMs / second.startMs,
      target: `<= ${TARGET.startSeededMs} ms`,
      met: second.startMs <= TARGET.startSeededMs,
    });
    const allPaths: Record<string, string> = { ...paths, ...Object.fromEntries(otherLoaded) };
    for (const name of Object.keys(allPaths)) {
      const s = sLoads[name]!;
      const b = bLoads[name]!;
      rows.push({
        measure: `${name} req/s (${fmt(sizes[allPaths[name]!]! / 1024)} KB)`,
        value: fmt(s.rps, 0),
        baseline: fmt(b.rps, 0),
        ratio: s.rps / b.rps,
        target: `>= ${TARGET.listRatio}x`,
        met: s.rps / b.rps >= TARGET.listRatio,
      });
      if (!(name in paths)) continue;
      const isOverview = name.includes('overview');
      rows.push({
        measure: `${name} p99 at ${CONNECTIONS} connections`,
        value: ms(s.p99),
        baseline: ms(b.p99),
        ratio: b.p99 > 0 && s.p99 > 0 ? b.p99 / s.p99 : null,
        target: isOverview ? `< ${TARGET.overviewP99Ms} ms` : 'info',
        met: isOverview ? s.p99 < TARGET.overviewP99Ms : null,
      });
    }
    const bad = Object.entries({ ...prefixed('slipway', sLoads), ...prefixed('koa', bLoads) }).filter(([, l]) => l.bad > 0);
    recordRows('api', rows);

    const others = [...Object.values(sLoads), ...Object.values(bLoads)].map((l) => fmt(Math.max(0, l.otherCores), 2));
    const out = [
      '',
      `bench:api: ${PROJECTS} projects x ${SERVICES_PER_PROJECT} services seeded through REST in ${fmt(seeded.seconds)} s, ${DEPLOYMENTS_PER_SERVICE} deployments each in ${fmt(deploySeedS)} s; autocannon ${CONNECTIONS} connections, ${DURATION_S} s per path and server in ${LOAD_ROUNDS} alternating rounds`,
      'baseline: koa (bench/bare-koa.mjs) under the same node and V8 flags as npm start, answering the same paths with the same bodies, serialised per request; RSS = VmRSS',
      '',
      rowsTable(rows, 'koa'),
      '',
      `machine: ${cpus().length} CPUs, load average ${fmt(loadAtStart, 2)} at start, ${fmt(loadavg()[0]!, 2)} at the end; cores used by other processes during the loads: ${others.join(' / ')}`,
      ...(bad.length > 0 ? [`WARNING: not 2xx, errors or timeouts: ${bad.map(([n, l]) => `${n} ${l.bad}`).join('; ')}`] : []),
      `total ${fmt((performance.now() - runStarted) / 1000, 1)} s`,
    ];
    process.stdout.write(`${out.join('\n')}\n`);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await cleanup();
  }
}

/** Rounds of one load as one: mean throughput, median p99 and mean latency, every request and failure counted. */
function combine(runs: Load[]): Load {
  const mean = (f: (l: Load) => number) => runs.reduce((s, l) => s + f(l), 0) / runs.length;
  const p99s = runs.map((l) => l.p99).sort((a, b) => a - b);
  return {
    rps: mean((l) => l.rps),
    p99: p99s[Math.floor(p99s.length / 2)]!,
    avg: mean((l) => l.avg),
    total: runs.reduce((s, l) => s + l.total, 0),
    bad: runs.reduce((s, l) => s + l.bad, 0),
    otherCores: mean((l) => l.otherCores),
  };
}

function prefixed(prefix: string, loads: Record<string, Load>): Record<string, Load> {
  return Object.fromEntries(Object.entries(loads).map(([k, v]) => [`${prefix} ${k}`, v]));
}

/** Follows GET /api/projects page by page (nextCursor) and counts the projects. */
async function countAllProjects(url: string, token: string): Promise<number> {
  const call = api(url, token);
  let count = 0;
  let cursor: string | null = null;
  for (let pages = 0; pages < 10_000; pages++) {
    const res = await call('GET', `/api/projects${cursor ? `?cursor=${encodeURIComponent(cursor)}` : ''}`);
    if (res.status !== 200) throw new Error(`GET /api/projects answered ${res.status}: ${res.text.slice(0, 300)}`);
    const body = res.json as { projects: unknown[]; nextCursor?: string | null };
    count += body.projects.length;
    cursor = body.nextCursor ?? null;
    if (!cursor) return count;
  }
  throw new Error('GET /api/projects never ended its pages');
}

await runBench(main, WATCHDOG_MS);
