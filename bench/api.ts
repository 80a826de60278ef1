/**
 * API benchmark: `npx tsx bench/api.ts` (or `npm run bench:api`).
 *
 * In one run it
 *  1. starts the real server as a child process exactly as `npm start` does (through
 *     test/helpers/server-process.ts) with a fresh temporary DATA_DIR and
 *     RATE_LIMIT_PER_MINUTE=0, and reads its resident memory once idle;
 *  2. seeds 100 projects x 10 services through the REST API, plus a few variables, a domain
 *     and a few deployments on the service whose overview is measured;
 *  3. loads GET /api/projects and GET /api/services/:id/overview with autocannon
 *     (50 connections, 10 s each, Authorization: Bearer <token>);
 *  4. measures a bare koa server (a child process) that answers the same paths with the very
 *     JSON bodies fetched once from the real server, kept in memory, with the same settings;
 *  5. prints a plain-text table with both figures, their ratio and the target.
 *
 * It is informational: whatever the figures, it exits 0 unless it crashes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { api, startServerProcess, type ServerProcess } from '../test/helpers/server-process.js';
import { ownPortRange } from '../test/helpers/docker.js';
import { autocannon } from './autocannon.js';
import { runBench } from './run-bench.js';
import { cpuSeconds, table } from './bench-support.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const THIS_FILE = path.join(ROOT, 'bench', 'api.ts');

const PROJECTS = 100;
const SERVICES_PER_PROJECT = 10;
/** Concurrent seeding clients. */
const SEED_CLIENTS = 2;
const CONNECTIONS = 50;
const DURATION_S = 10;
/** Warm-up: enough requests to get the JIT going, few connections so no long backlog is left. */
const WARMUP_S = 1;
const WARMUP_CONNECTIONS = 8;
/** The baseline needs less: it has no database or ORM code to warm. */
const BARE_WARMUP_S = 0.5;
const REQUEST_TIMEOUT_S = 60;
/** The bench gives up (and cleans up) if a run takes this long: a hang must not go unnoticed. */
const WATCHDOG_MS = 240_000;
const IDLE_SETTLE_MS = 500;

const TARGET_RATIO = 0.5;
const TARGET_P99_MS = 20;
const TARGET_RSS_MB = 100;

// ---------------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------------
// /proc helpers (Linux)

function readStatus(pid: number): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of readFileSync(`/proc/${pid}/status`, 'utf8').split('\n')) {
    const i = line.indexOf(':');
    if (i > 0) out[line.slice(0, i)] = line.slice(i + 1).trim();
  }
  return out;
}

/** VmRSS in MiB. */
function rssMb(pid: number): number {
  const kb = Number.parseInt(readStatus(pid).VmRSS ?? '0', 10);
  return kb / 1024;
}

/** utime + stime of a process, in ms. */
const cpuMs = (pid: number): number => cpuSeconds(pid) * 1000;

function parentOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return undefined;
  }
}

/**
 * When the server is started through the `tsx` launcher, the server is the node process the
 * launcher spawns; with `node --import tsx` it is the child itself. Returns the server's pid.
 */
function serverPidUnder(launcherPid: number): number {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (parentOf(pid) !== launcherPid) continue;
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('adapters/http/main.ts')) return pid;
    } catch {
      // gone meanwhile
    }
  }
  return launcherPid;
}

/** Waits until the process uses under 5% of a core over 250 ms (at most `maxMs`). */
async function waitIdle(pid: number, maxMs = 30_000): Promise<void> {
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

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------------------------------------
// The bare koa baseline: this same file, run as a child with --bare-koa.

async function runBareKoa(): Promise<void> {
  const { default: Koa } = await import('koa');
  // The bodies arrive over IPC once fetched from the real server; until then, 404.
  const bodies = new Map<string, unknown>();
  process.on('message', (message: { bodies?: Record<string, unknown> }) => {
    for (const [p, body] of Object.entries(message.bodies ?? {})) bodies.set(p, body);
    process.send!({ loaded: bodies.size });
  });
  const app = new Koa();
  app.use((ctx) => {
    const body = ctx.method === 'GET' ? bodies.get(ctx.path) : undefined;
    if (body === undefined) {
      ctx.status = 404;
      ctx.body = { error: 'not_found' };
      return;
    }
    // An object: koa serialises it per request, as any server without a response cache must.
    ctx.body = body;
  });
  const server = createServer(app.callback());
  server.keepAliveTimeout = 65_000;
  server.listen(0, '127.0.0.1', () => process.send!({ port: (server.address() as AddressInfo).port }));
  process.once('SIGTERM', () => server.close(() => process.exit(0)));
  process.once('disconnect', () => process.exit(0));
}

interface BareKoa {
  url: string;
  pid: number;
  load(bodies: Record<string, unknown>): Promise<void>;
  stop(): Promise<void>;
}

async function startBareKoa(): Promise<BareKoa> {
  // One process (node with tsx's loader), so its pid is the server's own.
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', THIS_FILE, '--bare-koa'], {
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
  return {
    url: `http://127.0.0.1:${port}`,
    pid: child.pid!,
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

// ---------------------------------------------------------------------------------------------
// Seeding through the REST API

interface Seeded {
  projectCount: number;
  serviceCount: number;
  overviewServiceId: string;
  seconds: number;
}

async function seed(url: string, token: string): Promise<Seeded> {
  const call = api(url, token);
  const must = async (method: string, pathname: string, body?: unknown, expected = 201) => {
    for (let attempt = 1; ; attempt++) {
      const res = await call(method, pathname, body);
      if (res.status === expected) return res.json;
      // Two writers may race for a host port or slug; the loser gets a conflict and asks again.
      if (res.status === 409 && attempt < 5) continue;
      throw new Error(`${method} ${pathname} answered ${res.status}: ${res.text.slice(0, 300)}`);
    }
  };
  const overviewProject = Math.floor(PROJECTS / 2);
  let overviewServiceId = '';
  let serviceCount = 0;

  const seedProject = async (p: number) => {
    const { project } = await must('POST', '/api/projects', {
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
      const { service } = await must('POST', `/api/projects/${project.id}/services`, input);
      slugs.push(service.slug);
      serviceCount++;
      if (p === overviewProject && s === 0) overviewServiceId = service.id;
    }
    if (p !== overviewProject) return;
    // The measured overview: a few variables (one secret, one reference), a domain, deployments.
    const id = overviewServiceId;
    const dbSlug = slugs[SERVICES_PER_PROJECT - 1]!;
    const vars: Array<{ key: string; value: string; secret?: boolean }> = [
      { key: 'NODE_ENV', value: 'production' },
      { key: 'LOG_LEVEL', value: 'info' },
      { key: 'SESSION_SECRET', value: randomBytes(24).toString('hex'), secret: true },
      { key: 'DATABASE_URL', value: `\${${dbSlug}.DATABASE_URL}` },
      { key: 'PUBLIC_URL', value: 'https://app.bench.example.com' },
    ];
    for (const v of vars) await must('POST', `/api/services/${id}/env`, v, 200);
    await must('POST', `/api/services/${id}/domains`, { hostname: 'app.bench.example.com' });
    const deployments: string[] = [];
    for (let d = 0; d < 3; d++) deployments.push((await must('POST', `/api/services/${id}/deployments`)).deployment.id);
    // Aborting a queued deployment: 200; 409 if a runner already finished it (not an error here).
    const abort = await call('POST', `/api/deployments/${deployments[0]}/abort`);
    if (abort.status !== 200 && abort.status !== 409) throw new Error(`abort answered ${abort.status}: ${abort.text.slice(0, 300)}`);
  };

  // A couple of clients at once keep the server busy while the other waits on its response.
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: SEED_CLIENTS }, async () => {
      while (next < PROJECTS) await seedProject(next++);
    }),
  );
  return { projectCount: PROJECTS, serviceCount, overviewServiceId, seconds: (performance.now() - started) / 1000 };
}

// ---------------------------------------------------------------------------------------------
// Load

interface Load {
  rps: number;
  p99: number;
  avg: number;
  total: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  cpuMsPerRequest: number;
  cpuBusy: number;
  /** CPU used meanwhile by processes other than the bench and the server under test, in cores. */
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
    headers: token ? { authorization: `Bearer ${token}` } : {},
    // Long enough that a slow server is measured, not timed out and flooded with retries.
    timeout: REQUEST_TIMEOUT_S,
  });
  const wallMs = performance.now() - started;
  const cpu = cpuMs(pid) - cpuBefore;
  const otherCores = (machineBusyMs() - machineBefore - cpu - (cpuMs(process.pid) - selfBefore)) / wallMs;
  // Requests still in flight when autocannon stops are abandoned, not cancelled: let the
  // server finish them so the next run (or memory reading) starts from an idle server.
  await waitIdle(pid);
  return {
    rps: result.requests.average,
    p99: result.latency.p99,
    avg: result.latency.average,
    total: result.requests.total,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    cpuMsPerRequest: result.requests.total > 0 ? cpu / result.requests.total : Number.NaN,
    cpuBusy: cpu / wallMs,
    otherCores,
  };
}

// ---------------------------------------------------------------------------------------------
// Report

const fmt = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');
const fmtInt = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : 'n/a');

async function main(): Promise<void> {
  const runStarted = performance.now();
  const log = (msg: string) => process.stderr.write(`[bench ${fmt((performance.now() - runStarted) / 1000, 1)}s] ${msg}\n`);
  const workDir = mkdtempSync(path.join(tmpdir(), 'slipway-bench-'));
  const dataDir = path.join(workDir, 'data');
  const token = `boot_${randomBytes(16).toString('hex')}`;
  const load1 = loadavg()[0]!;

  let slipway: ServerProcess | undefined;
  let slipwayPid: number | undefined;
  let bare: BareKoa | undefined;
  const cleanup = async () => {
    await bare?.stop().catch(() => {});
    if (slipway) {
      await Promise.race([slipway.stop(), sleep(5000)]).catch(() => {});
      // SIGTERM reaches the server through tsx; make sure no orphan survives a failed stop.
      if (slipwayPid && alive(slipwayPid)) process.kill(slipwayPid, 'SIGKILL');
      await slipway.dispose().catch(() => {});
    }
    rmSync(workDir, { recursive: true, force: true });
  };
  const onSignal = () => void cleanup().finally(() => process.exit(130));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  try {
    // 1. The real server, started as `npm start` does.
    log('starting slipway as `npm start` does and, idle until needed, the bare koa baseline');
    const bareStarting = startBareKoa().then((b) => (bare = b));
    // The seed makes 1,000 services, each with a host port: the helper's default window of 200 runs out.
    slipway = await startServerProcess(
      { RATE_LIMIT_PER_MINUTE: '0', HOST_PORT_RANGE: ownPortRange(PROJECTS * SERVICES_PER_PROJECT * 2) },
      { dataDir, token },
    );
    await bareStarting;
    slipwayPid = serverPidUnder(slipway.child.pid!);
    await sleep(IDLE_SETTLE_MS);
    const rssStart = rssMb(slipwayPid);
    const bareRssStart = rssMb(bare!.pid);
    const launcherRss = slipwayPid !== slipway.child.pid ? rssMb(slipway.child.pid!) : Number.NaN;
    log(`slipway at ${slipway.url}, server pid ${slipwayPid}, RSS ${fmt(rssStart)} MB`);

    // 2. Seed.
    log(`seeding ${PROJECTS} projects x ${SERVICES_PER_PROJECT} services through the REST API`);
    const seeded = await seed(slipway.url, token);
    log(`seeded in ${fmt(seeded.seconds)} s`);

    const paths = { projects: '/api/projects', overview: `/api/services/${seeded.overviewServiceId}/overview` };
    const bodies: Record<string, unknown> = {};
    const sizes: Record<string, number> = {};
    for (const p of Object.values(paths)) {
      const res = await api(slipway.url, token)('GET', p);
      if (res.status !== 200) throw new Error(`GET ${p} answered ${res.status}: ${res.text.slice(0, 300)}`);
      bodies[p] = res.json;
      sizes[p] = Buffer.byteLength(res.text);
    }
    const listed = (bodies[paths.projects] as { projects: Array<{ services: unknown[] }> }).projects;
    const listedServices = listed.reduce((n, p) => n + p.services.length, 0);
    if (listed.length !== PROJECTS || listedServices !== PROJECTS * SERVICES_PER_PROJECT) {
      throw new Error(
        `GET /api/projects lists ${listed.length} projects / ${listedServices} services, expected ${PROJECTS} / ${PROJECTS * SERVICES_PER_PROJECT}`,
      );
    }

    // 3. Warm up, settle, measure memory, then load.
    log('warming up slipway');
    for (const p of Object.values(paths)) await load(slipway.url + p, token, WARMUP_S, slipwayPid, WARMUP_CONNECTIONS);
    await sleep(IDLE_SETTLE_MS);
    const rssWarm = rssMb(slipwayPid);
    log(`RSS after seeding + warm-up ${fmt(rssWarm)} MB; loading GET ${paths.projects}`);
    const sProjects = await load(slipway.url + paths.projects, token, DURATION_S, slipwayPid);
    log(`loading GET ${paths.overview}`);
    const sOverview = await load(slipway.url + paths.overview, token, DURATION_S, slipwayPid);
    await sleep(IDLE_SETTLE_MS);
    const rssAfterLoad = rssMb(slipwayPid);

    // Stop it so the baseline has the machine to itself.
    await slipway.stop();
    if (alive(slipwayPid)) process.kill(slipwayPid, 'SIGKILL');
    await slipway.dispose();
    slipway = undefined;

    // 4. The bare koa baseline, same paths, same bodies, same settings.
    log('loading the bare koa baseline with the same bodies');
    await bare!.load(bodies);
    for (const p of Object.values(paths)) await load(bare!.url + p, token, BARE_WARMUP_S, bare!.pid, WARMUP_CONNECTIONS);
    await sleep(IDLE_SETTLE_MS);
    const bareRssWarm = rssMb(bare!.pid);
    log('measuring bare koa');
    const bProjects = await load(bare!.url + paths.projects, token, DURATION_S, bare!.pid);
    const bOverview = await load(bare!.url + paths.overview, token, DURATION_S, bare!.pid);
    await sleep(IDLE_SETTLE_MS);
    const bareRssAfterLoad = rssMb(bare!.pid);
    await bare!.stop();
    bare = undefined;

    // 5. Report.
    const kb = (n: number) => `${fmt(n / 1024, 1)} KB`;
    const rows: string[][] = [['measure', 'slipway', 'bare koa', 'ratio', 'target']];
    const addLoad = (label: string, s: Load, b: Load) => {
      rows.push([`${label} throughput (req/s)`, fmt(s.rps), fmt(b.rps), fmt(s.rps / b.rps, 2), `ratio >= ${TARGET_RATIO}`]);
      rows.push([`${label} p99 latency (ms)`, fmt(s.p99, 0), fmt(b.p99, 0), fmt(s.p99 / b.p99, 1), `slipway < ${TARGET_P99_MS} ms`]);
      rows.push([`${label} mean latency (ms)`, fmt(s.avg), fmt(b.avg), fmt(s.avg / b.avg, 1), 'info']);
      rows.push([
        `${label} server CPU per request (ms)`,
        fmt(s.cpuMsPerRequest, 2),
        fmt(b.cpuMsPerRequest, 2),
        fmt(s.cpuMsPerRequest / b.cpuMsPerRequest, 1),
        'info',
      ]);
    };
    addLoad('GET /api/projects', sProjects, bProjects);
    addLoad('GET /api/services/:id/overview', sOverview, bOverview);
    rows.push([
      'RSS idle after start (MB)',
      fmt(rssStart),
      fmt(bareRssStart),
      fmt(rssStart / bareRssStart, 2),
      `slipway < ${TARGET_RSS_MB} MB`,
    ]);
    rows.push([
      'RSS idle after seeding + warm-up (MB)',
      fmt(rssWarm),
      fmt(bareRssWarm),
      fmt(rssWarm / bareRssWarm, 2),
      `slipway < ${TARGET_RSS_MB} MB`,
    ]);
    rows.push([
      'RSS idle after the load runs (MB)',
      fmt(rssAfterLoad),
      fmt(bareRssAfterLoad),
      fmt(rssAfterLoad / bareRssAfterLoad, 2),
      'info',
    ]);

    const verdict = (ok: boolean) => (ok ? 'PASS' : 'FAIL');
    const checks: Array<[string, boolean, string]> = [
      ['projects ratio', sProjects.rps / bProjects.rps >= TARGET_RATIO, fmt(sProjects.rps / bProjects.rps, 2)],
      ['projects p99', sProjects.p99 < TARGET_P99_MS, `${fmt(sProjects.p99, 0)} ms`],
      ['overview ratio', sOverview.rps / bOverview.rps >= TARGET_RATIO, fmt(sOverview.rps / bOverview.rps, 2)],
      ['overview p99', sOverview.p99 < TARGET_P99_MS, `${fmt(sOverview.p99, 0)} ms`],
      ['RSS after start', rssStart < TARGET_RSS_MB, `${fmt(rssStart)} MB`],
      ['RSS after seed+warm-up', rssWarm < TARGET_RSS_MB, `${fmt(rssWarm)} MB`],
    ];
    const problems = [
      ...(
        [
          ['slipway projects', sProjects],
          ['slipway overview', sOverview],
          ['bare projects', bProjects],
          ['bare overview', bOverview],
        ] as const
      )
        .filter(([, l]) => l.non2xx + l.errors + l.timeouts > 0)
        .map(([name, l]) => `${name}: ${l.non2xx} non-2xx, ${l.errors} errors, ${l.timeouts} timeouts`),
    ];

    const out: string[] = [];
    out.push('');
    out.push(
      `slipway API benchmark: autocannon, ${CONNECTIONS} connections, ${DURATION_S} s per run, Authorization: Bearer <key>, RATE_LIMIT_PER_MINUTE=0`,
    );
    out.push(
      `data: ${seeded.projectCount} projects x ${SERVICES_PER_PROJECT} services (seeded through REST by ${SEED_CLIENTS} clients in ${fmt(seeded.seconds)} s); ` +
        `GET /api/projects body ${kb(sizes[paths.projects]!)}, overview body ${kb(sizes[paths.overview]!)} (5 variables, 1 domain, 3 deployments)`,
    );
    out.push(
      'bare koa: a koa app in its own process answering the same paths with the same bodies, held in memory as objects and serialised per request',
    );
    out.push('ratio = slipway / bare koa; RSS = VmRSS of the server process (MiB)');
    out.push(
      `note: in a closed loop of ${CONNECTIONS} connections, latency ~ ${CONNECTIONS} / throughput: p99 < ${TARGET_P99_MS} ms needs about ${fmtInt((CONNECTIONS * 1000) / TARGET_P99_MS)} req/s`,
    );
    out.push('');
    out.push(table(rows));
    out.push('');
    out.push(
      `requests: slipway ${fmtInt(sProjects.total)} + ${fmtInt(sOverview.total)}, bare koa ${fmtInt(bProjects.total)} + ${fmtInt(bOverview.total)} (projects + overview); ` +
        `slipway server CPU busy ${fmt(sProjects.cpuBusy * 100, 0)}% / ${fmt(sOverview.cpuBusy * 100, 0)}% of one core`,
    );
    if (Number.isFinite(launcherRss))
      out.push(
        `note: started through tsx, the server has a launcher parent process too (${fmt(launcherRss)} MB RSS after start), not counted above`,
      );
    const others = [sProjects, sOverview, bProjects, bOverview].map((l) => l.otherCores);
    out.push(
      `machine: ${cpus().length} CPUs shared by autocannon and the server under test; load average ${fmt(load1, 2)} at start; ` +
        `CPU used by other processes during the runs (cores): slipway ${others
          .slice(0, 2)
          .map((x) => fmt(Math.max(0, x), 2))
          .join(' / ')}, ` +
        `bare koa ${others
          .slice(2)
          .map((x) => fmt(Math.max(0, x), 2))
          .join(' / ')}`,
    );
    if (others.some((x) => x > 0.25))
      out.push('WARNING: other processes used the CPUs during the runs: the figures are pessimistic and noisy; rerun on a quiet machine');
    if (problems.length > 0) out.push(`WARNING (responses that were not 2xx, errors or timeouts): ${problems.join('; ')}`);
    out.push(`total bench time ${fmt((performance.now() - runStarted) / 1000, 1)} s`);
    out.push('');
    out.push(
      `Targets: ${checks.map(([name, ok, value]) => `${name} ${verdict(ok)} (${value})`).join('; ')} -> ${checks.filter((c) => c[1]).length}/${checks.length} met`,
    );
    process.stdout.write(`${out.join('\n')}\n`);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await cleanup();
  }
}

if (process.argv[2] === '--bare-koa') {
  await runBareKoa();
} else {
  await runBench(main, WATCHDOG_MS);
}
