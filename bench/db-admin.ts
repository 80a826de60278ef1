/**
 * Database admin benchmark: `npm run bench:db-admin` (or `npx tsx bench/db-admin.ts`).
 *
 * In one run it
 *  1. starts the real server as `npm start` does (test/helpers/server-process.ts), deploys a
 *     postgres database service through the API, and fills `public.bench` with 1,000,000 rows through
 *     POST /database/query (then ANALYZE, so the planner's estimate stands for the total as it would
 *     once autovacuum ran);
 *  2. pages it with GET /api/services/:id/database/rows?limit=500 (slipway) and with the `pg` driver
 *     straight to the same container on its project-network address (pg direct): the same SELECT the
 *     adapter runs (columns ORDER BY the key LIMIT/OFFSET, array rows) plus the total it answers with
 *     (pg_class.reltuples, the estimate the adapter reads above EXACT_COUNT_LIMIT), on a pool of the
 *     adapter's size (3), by the same number of concurrent pagers over the same pages, paired in time:
 *     each page set runs in chunks of 20 pages, both back to back on each chunk (which goes first
 *     alternating), so the load of a shared machine, which moves within seconds, weighs on both alike;
 *  3. pages through ALL 2,000 pages once through the platform, sampling the server's VmRSS every 200 ms;
 *  4. prints a table: measure | slipway | pg direct | ratio | target (>= 0.8x throughput), and the RSS line.
 *
 * OFFSET paging of every page is quadratic, so throughput is measured on two fixed page sets:
 *  - "prefix": the first 200 pages (offsets 0..99,500), where the engine's work per page is small and
 *    the platform's own cost shows most;
 *  - "spread": 200 pages spread evenly over the table (every 10th page), where the engine's OFFSET
 *    scan dominates.
 * Knobs: BENCH_ROUNDS (3), BENCH_PAGERS (4), BENCH_FULL_PAGES (all), BENCH_CPU_PROF=<dir> (a CPU profile of the server).
 * It is informational: whatever the figures, it exits 0 unless it crashes.
 */
import { execFile } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import Docker from 'dockerode';
import pg from 'pg';
import { api, startServerProcess, type ServerProcess } from '../test/helpers/server-process.js';
import { provisionDocker } from '../test/helpers/docker.js';
import { deploy } from '../test/helpers/deployments.js';
import { LABELS } from '../src/deployments/container-engine.port.js';
import { runBench } from './run-bench.js';
import { type BenchRow, benchPortRange, cpuMs, recordRows, rssMb, table, TINY } from './bench-support.js';

const run = promisify(execFile);

const ROWS = TINY ? 2_000 : 1_000_000;
const PAGE = 500;
const PAGES = ROWS / PAGE;
const SAMPLE_PAGES = TINY ? 2 : 200;
const PAGERS = Number(process.env.BENCH_PAGERS ?? 4);
const POOL_SIZE = 3; // SQL_ADMIN_DEFAULTS.maxConnections: the adapter's pool per service
const ROUNDS = TINY ? 1 : Number(process.env.BENCH_ROUNDS ?? 3);
/** Pages per paired chunk (slipway then direct, or the other way round). */
const CHUNK = 20;
const RSS_SAMPLE_MS = 200;
const TARGET_RATIO = 0.8;
const WATCHDOG_MS = 30 * 60_000;
const TABLE = 'public.bench';

const fmt = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');
const fmtInt = (n: number) => (Number.isFinite(n) ? Math.round(n).toLocaleString('en-US') : 'n/a');

/** utime + stime of a process, in ms. */

interface PassResult {
  rows: number;
  ms: number;
  /** Per-page latency, ms. */
  latencies: number[];
  serverCpuMs: number;
}

/** `pagers` workers take the next offset from the list until it is empty. */
async function pass(offsets: number[], pagers: number, page: (offset: number) => Promise<number>, serverPid: number): Promise<PassResult> {
  let next = 0;
  let rows = 0;
  const latencies: number[] = [];
  const cpuBefore = cpuMs(serverPid);
  const started = performance.now();
  await Promise.all(
    Array.from({ length: pagers }, async () => {
      while (next < offsets.length) {
        const offset = offsets[next++]!;
        const t = performance.now();
        const n = await page(offset);
        latencies.push(performance.now() - t);
        const expected = Math.min(PAGE, ROWS - offset);
        if (n !== expected) throw new Error(`page at offset ${offset} had ${n} rows, expected ${expected}`);
        rows += n;
      }
    }),
  );
  return { rows, ms: performance.now() - started, latencies, serverCpuMs: cpuMs(serverPid) - cpuBefore };
}

function combine(results: PassResult[]): PassResult {
  return {
    rows: results.reduce((s, r) => s + r.rows, 0),
    ms: results.reduce((s, r) => s + r.ms, 0),
    latencies: results.flatMap((r) => r.latencies),
    serverCpuMs: results.reduce((s, r) => s + r.serverCpuMs, 0),
  };
}

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

async function main(): Promise<void> {
  const runStarted = performance.now();
  const log = (msg: string) => process.stderr.write(`[bench ${fmt((performance.now() - runStarted) / 1000, 1)}s] ${msg}\n`);
  const load1 = loadavg()[0]!;

  log('provisioning Docker and the stand-in images');
  await provisionDocker({ images: 'busybox,debian,postgres' });
  const server: ServerProcess = await startServerProcess({
    HOST_PORT_RANGE: benchPortRange(),
    BUILD_CONCURRENCY: '2',
    HEALTH_TIMEOUT_MS: '120000',
    STOP_GRACE_SECONDS: '5',
    RATE_LIMIT_PER_MINUTE: '0',
    DATABASE_QUERY_TIMEOUT_MS: '600000',
    // BENCH_CPU_PROF=<dir>: the server writes a V8 CPU profile there when it stops (SIGTERM at the end).
    ...(process.env.BENCH_CPU_PROF ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${process.env.BENCH_CPU_PROF}` } : {}),
  });
  const serverPid = server.child.pid!;
  const call = api(server.url, server.token);
  const auth = { authorization: `Bearer ${server.token}` };
  let projectId: string | undefined;
  let direct: pg.Pool | undefined;
  const onSignal = () => void cleanup().finally(() => process.exit(130));
  const cleanup = async () => {
    await direct?.end().catch(() => undefined);
    direct = undefined;
    if (projectId) {
      const id = projectId;
      projectId = undefined;
      await call('DELETE', `/api/projects/${id}`).catch(() => undefined);
    }
    if (process.env.BENCH_CPU_PROF) await server.stop();
    await server.dispose();
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  try {
    projectId = (await call('POST', '/api/projects', { name: `bench-db-${Date.now()}` })).json.project.id as string;
    const created = await call('POST', `/api/projects/${projectId}/services`, {
      name: 'bench db',
      repoUrl: 'database',
      repoFullName: 'database:postgres',
      branch: 'main',
    });
    if (created.status !== 201) throw new Error(`create service: ${created.status} ${created.text}`);
    const serviceId = created.json.service.id as string;
    log('deploying postgres');
    const deployed = await deploy(call, serviceId, 5 * 60_000);
    if (deployed.deployment.status !== 'succeeded') throw new Error(`deploy ${deployed.deployment.status}:\n${deployed.logs.join('\n')}`);

    // Statements through the platform, with a long client timeout (the api helper gives up after 15 s).
    const sql = async (statement: string) => {
      const res = await fetch(`${server.url}/api/services/${serviceId}/database/query`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ sql: statement }),
        signal: AbortSignal.timeout(600_000),
      });
      const text = await res.text();
      if (res.status >= 300) throw new Error(`${statement.slice(0, 60)}: ${res.status} ${text.slice(0, 500)}`);
      return JSON.parse(text) as { rowCount: number };
    };
    log(`filling ${TABLE} with ${fmtInt(ROWS)} rows through POST /database/query`);
    const fillStarted = performance.now();
    await sql('CREATE TABLE bench (id bigint PRIMARY KEY, name text, n integer, at timestamptz)');
    const inserted = await sql(`INSERT INTO bench SELECT g, md5(g::text), g % 1000, now() FROM generate_series(1, ${ROWS}) g`);
    if (inserted.rowCount !== ROWS) throw new Error(`INSERT answered rowCount ${inserted.rowCount}`);
    await sql('ANALYZE bench');
    const fillS = (performance.now() - fillStarted) / 1000;

    // The direct baseline: the same container on its project-network address, as the platform reaches it.
    const env: Record<string, string> = {};
    for (const v of (await call('GET', `/api/services/${serviceId}/overview`)).json.env as Array<{ id: string; key: string }>) {
      env[v.key] = (await call('POST', `/api/services/${serviceId}/env/${v.id}/reveal`)).json.value;
    }
    const service = (await call('GET', `/api/services/${serviceId}/overview`)).json.service as { internalPort: number };
    const { stdout } = await run('docker', [
      'inspect',
      '--format',
      '{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}',
      deployed.deployment.containerName!,
    ]);
    const host = stdout.trim().split(/\s+/).find(Boolean);
    if (!host) throw new Error(`no IP address for ${deployed.deployment.containerName}`);
    const user = env.POSTGRES_USER || 'postgres';
    direct = new pg.Pool({
      host,
      port: service.internalPort || 5432,
      user,
      password: env.POSTGRES_PASSWORD ?? '',
      database: env.POSTGRES_DB || user,
      max: POOL_SIZE,
      keepAlive: true,
    });
    const pool = direct;

    const viaPlatform = async (offset: number): Promise<number> => {
      const res = await fetch(
        `${server.url}/api/services/${serviceId}/database/rows?table=${encodeURIComponent(TABLE)}&limit=${PAGE}&offset=${offset}`,
        { headers: auth, signal: AbortSignal.timeout(120_000) },
      );
      const text = await res.text();
      if (res.status !== 200) throw new Error(`rows at ${offset}: ${res.status} ${text.slice(0, 300)}`);
      const body = JSON.parse(text) as { rows: unknown[]; total: number };
      if (body.total < ROWS * 0.9) throw new Error(`total ${body.total}`);
      return body.rows.length;
    };
    const viaPg = async (offset: number): Promise<number> => {
      const client = await pool.connect();
      try {
        const page = await client.query({
          text: 'SELECT "id", "name", "n", "at" FROM "public"."bench" ORDER BY "id" LIMIT $1 OFFSET $2',
          values: [PAGE, offset],
          rowMode: 'array',
        });
        const total = await client.query<{ estimate: number }>(
          "SELECT reltuples::float8 AS estimate FROM pg_class WHERE oid = 'public.bench'::regclass",
        );
        if (total.rows[0]!.estimate < ROWS * 0.9) throw new Error(`estimate ${total.rows[0]!.estimate}`);
        return page.rows.length;
      } finally {
        client.release();
      }
    };

    const prefix = Array.from({ length: SAMPLE_PAGES }, (_, i) => i * PAGE);
    const spread = Array.from({ length: SAMPLE_PAGES }, (_, i) => Math.floor((i * PAGES) / SAMPLE_PAGES) * PAGE);
    const all = Array.from({ length: PAGES }, (_, i) => i * PAGE);

    log('warming up both (20 pages each)');
    await pass(prefix.slice(0, 20), PAGERS, viaPlatform, serverPid);
    await pass(prefix.slice(0, 20), PAGERS, viaPg, serverPid);

    const measured: Record<'prefix' | 'spread', { slipway: PassResult[]; direct: PassResult[] }> = {
      prefix: { slipway: [], direct: [] },
      spread: { slipway: [], direct: [] },
    };
    // Paired in time: each page set is run in chunks of CHUNK pages, slipway and direct back to back on
    // the same chunk (which goes first alternating), so the load of a shared machine, which moves within
    // seconds, weighs on both alike.
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, offsets] of [
        ['prefix', prefix],
        ['spread', spread],
      ] as const) {
        const before = { slipway: measured[name].slipway.length, direct: measured[name].direct.length };
        for (let start = 0, chunk = 0; start < offsets.length; start += CHUNK, chunk++) {
          const part = offsets.slice(start, start + CHUNK);
          const order = (round + chunk) % 2 === 0 ? (['slipway', 'direct'] as const) : (['direct', 'slipway'] as const);
          for (const who of order) measured[name][who].push(await pass(part, PAGERS, who === 'slipway' ? viaPlatform : viaPg, serverPid));
        }
        const s = combine(measured[name].slipway.slice(before.slipway));
        const d = combine(measured[name].direct.slice(before.direct));
        log(
          `round ${round + 1}/${ROUNDS} ${name}: slipway ${fmtInt((s.rows / s.ms) * 1000)} rows/s, direct ${fmtInt((d.rows / d.ms) * 1000)} rows/s, ${fmt(s.rows / s.ms / (d.rows / d.ms), 2)}x`,
        );
      }
    }

    // Where a page's fixed cost goes: one-row pages one at a time (no queueing), and the Docker
    // container list the platform's locator asks for on every database request (same filter).
    const docker = new Docker();
    const sequential = async (fn: () => Promise<unknown>, n = 40): Promise<number[]> => {
      const out: number[] = [];
      for (let i = 0; i < n; i++) {
        const t = performance.now();
        await fn();
        out.push(performance.now() - t);
      }
      return out;
    };
    const onePlatform = await sequential(async () => {
      const res = await fetch(`${server.url}/api/services/${serviceId}/database/rows?table=${encodeURIComponent(TABLE)}&limit=1&offset=0`, {
        headers: auth,
      });
      if (res.status !== 200) throw new Error(`rows limit=1: ${res.status}`);
      await res.arrayBuffer();
    });
    const oneDirect = await sequential(async () => {
      const client = await pool.connect();
      try {
        await client.query({
          text: 'SELECT "id", "name", "n", "at" FROM "public"."bench" ORDER BY "id" LIMIT $1 OFFSET $2',
          values: [1, 0],
          rowMode: 'array',
        });
        await client.query("SELECT reltuples::float8 AS estimate FROM pg_class WHERE oid = 'public.bench'::regclass");
      } finally {
        client.release();
      }
    });
    // The adapter's catalog lookup (PostgresDatabaseAdmin.table), run straight on the pool: kept per table
    // for 2 s (TableCache), so most pages no longer pay it.
    const catalog = await sequential(async () => {
      await pool.query(
        `SELECT c.relkind, c.reltuples::float8 AS estimate,
                coalesce(json_agg(json_build_object('name', a.attname, 'type', format_type(a.atttypid, a.atttypmod), 'json', a.atttypid IN (114, 3802),
                  'key', array_position(i.indkey::int2[], a.attnum)) ORDER BY a.attnum) FILTER (WHERE a.attnum IS NOT NULL), '[]') AS columns
           FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           LEFT JOIN pg_index i ON i.indrelid = c.oid AND i.indisprimary
           LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
          WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
          GROUP BY c.oid, c.relkind, c.reltuples`,
        ['public', 'bench'],
      );
    });
    const dockerList = await sequential(() => docker.listContainers({ all: true, filters: { label: [`${LABELS.service}=${serviceId}`] } }));

    // Memory while paging everything once through the platform.
    log(`paging all ${fmtInt(PAGES)} pages through the platform, sampling VmRSS every ${RSS_SAMPLE_MS} ms`);
    await sleep(500);
    const rssStart = rssMb(serverPid);
    const samples: number[] = [rssStart];
    const sampler = setInterval(() => samples.push(rssMb(serverPid)), RSS_SAMPLE_MS);
    let full: PassResult;
    try {
      // BENCH_FULL_PAGES=<n>: only the first n pages (a quick run while profiling).
      full = await pass(all.slice(0, Number(process.env.BENCH_FULL_PAGES ?? PAGES)), PAGERS, viaPlatform, serverPid);
    } finally {
      clearInterval(sampler);
    }
    const rssEnd = rssMb(serverPid);
    samples.push(rssEnd);
    const rssMax = Math.max(...samples);
    const quarter = (i: number) =>
      Math.max(...samples.slice(Math.floor((i * samples.length) / 4), Math.floor(((i + 1) * samples.length) / 4)));

    // Report.
    const rows: string[][] = [['measure', 'slipway', 'pg direct', 'ratio', 'target']];
    const ratios: Array<[string, number]> = [];
    const benchRows: BenchRow[] = [];
    for (const name of ['prefix', 'spread'] as const) {
      const s = combine(measured[name].slipway);
      const d = combine(measured[name].direct);
      const sRate = (s.rows / s.ms) * 1000;
      const dRate = (d.rows / d.ms) * 1000;
      ratios.push([name, sRate / dRate]);
      const label = name === 'prefix' ? `first ${SAMPLE_PAGES} pages` : `${SAMPLE_PAGES} pages spread`;
      rows.push([`${label}: throughput (rows/s)`, fmtInt(sRate), fmtInt(dRate), `${fmt(sRate / dRate, 2)}x`, `>= ${TARGET_RATIO}x`]);
      benchRows.push({
        measure: `database rows, ${label} of ${PAGE}: rows/s`,
        value: fmtInt(sRate),
        baseline: `${fmtInt(dRate)} (pg driver)`,
        ratio: sRate / dRate,
        target: `>= ${TARGET_RATIO}x`,
        met: sRate / dRate >= TARGET_RATIO,
      });
      rows.push([
        `${label}: page p50 / p99 (ms)`,
        `${fmt(quantile(s.latencies, 0.5))} / ${fmt(quantile(s.latencies, 0.99))}`,
        `${fmt(quantile(d.latencies, 0.5))} / ${fmt(quantile(d.latencies, 0.99))}`,
        `${fmt(quantile(s.latencies, 0.5) / quantile(d.latencies, 0.5), 2)}x`,
        'info',
      ]);
      rows.push([`${label}: server CPU per page (ms)`, fmt(s.serverCpuMs / s.latencies.length, 2), '-', '-', 'info']);
    }
    rows.push([
      'one-row page, one at a time: p50 (ms)',
      fmt(quantile(onePlatform, 0.5), 2),
      fmt(quantile(oneDirect, 0.5), 2),
      `${fmt(quantile(onePlatform, 0.5) / quantile(oneDirect, 0.5), 1)}x`,
      'info',
    ]);
    rows.push([
      '  Docker container list as the locator asks it (from the bench), p50 (ms)',
      fmt(quantile(dockerList, 0.5), 2),
      '-',
      '-',
      'info',
    ]);
    rows.push([
      "  the adapter's catalog lookup, once per table per 2 s (pg, from the bench), p50 (ms)",
      fmt(quantile(catalog, 0.5), 2),
      '-',
      '-',
      'info',
    ]);
    rows.push([`all ${fmtInt(PAGES)} pages once: throughput (rows/s)`, fmtInt((full.rows / full.ms) * 1000), '-', '-', 'info']);

    const out: string[] = [];
    out.push('');
    out.push(
      `slipway database admin benchmark: GET /api/services/:id/database/rows?table=${TABLE}&limit=${PAGE} vs. the pg driver straight to the same container, same run`,
    );
    out.push(
      `data: ${fmtInt(ROWS)} rows (id bigint PK, name text, n integer, at timestamptz), filled through POST /database/query in ${fmt(fillS)} s, then ANALYZE; ` +
        `${PAGERS} concurrent pagers; pool of ${POOL_SIZE} connections each; ${ROUNDS} rounds per page set, each in chunks of ${CHUNK} pages run by both back to back (order alternating)`,
    );
    out.push(
      `pg direct: the adapter's page SELECT (ORDER BY id LIMIT/OFFSET, array rows) + the total (pg_class.reltuples) on ${host}:${service.internalPort || 5432}, the address the platform uses; no HTTP, no JSON`,
    );
    out.push(
      `page sets: "first ${SAMPLE_PAGES} pages" = offsets 0..${fmtInt((SAMPLE_PAGES - 1) * PAGE)}; "${SAMPLE_PAGES} pages spread" = every ${PAGES / SAMPLE_PAGES}th page over the whole table`,
    );
    out.push('');
    out.push(table(rows));
    out.push('');
    out.push(
      `RSS (server VmRSS, MiB) paging all ${fmtInt(PAGES)} pages (${fmtInt(full.rows)} rows in ${fmt(full.ms / 1000)} s, ${samples.length} samples): ` +
        `start ${fmt(rssStart)}, max ${fmt(rssMax)}, end ${fmt(rssEnd)}, max-start ${fmt(rssMax - rssStart)}; max per quarter ${[0, 1, 2, 3].map((i) => fmt(quarter(i))).join(' / ')}`,
    );
    out.push(`machine: ${cpus().length} CPUs shared by the bench, the server and PostgreSQL; load average ${fmt(load1, 2)} at start`);
    out.push(`total bench time ${fmt((performance.now() - runStarted) / 1000)} s`);
    out.push('');
    out.push(
      `Target throughput >= ${TARGET_RATIO}x pg direct: ${ratios.map(([n, r]) => `${n} ${fmt(r, 2)}x ${r >= TARGET_RATIO ? 'PASS' : 'MISS'}`).join('; ')}`,
    );
    recordRows('db-admin', benchRows);
    process.stdout.write(`${out.join('\n')}\n`);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await cleanup();
  }
}

await runBench(main, WATCHDOG_MS);
