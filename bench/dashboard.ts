/**
 * What a long build log and a long list cost the dashboard in a real browser: `npm run bench:dashboard`.
 *
 * The built dashboard (dist/dashboard: `npm run build:dashboard` first) is served by a small static
 * server whose /trpc answers are fixtures in the platform's wire format (superjson, batches), so that
 * only the page is measured, in Debian's Chromium (test/provision/chromium.sh) driven by playwright-core:
 *  - a deployment's build log of 1,000 lines (the baseline) and of 100,000 lines, read as the page
 *    reads it (pages of `deployments.logs`, then the stream resumed after the last line): the time until
 *    the page says it holds every line, the longest task meanwhile (how long the page could not answer
 *    input) and a search of every line;
 *  - a project of 1,000 services scrolled end to end a screen per frame: the frame interval, against
 *    frames of the same page with nothing scrolling (the baseline).
 * The table gives medians of rounds and the ratios to each baseline. Informational: exits 0 unless it crashes.
 */
import { execFileSync } from 'node:child_process';
import { createReadStream, existsSync, statSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { chromium, type Page } from 'playwright-core';
import superjson from 'superjson';
import { median, table } from './bench-support.js';
import { runBench } from './run-bench.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const DIST = process.env.DASHBOARD_DIR ?? path.join(ROOT, 'dist', 'dashboard');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const LONG = Number(process.env.BENCH_LOG_LINES ?? 100_000);
const SHORT = 1_000;

type Line = { id: number; deploymentId: string; line: string; stream: 'stdout' | 'stderr'; createdAt: string };
const logs = new Map<string, Line[]>();
for (const n of [SHORT, LONG]) {
  const createdAt = new Date().toISOString();
  logs.set(
    `d${n}`,
    Array.from({ length: n }, (_, i) => ({
      id: i + 1,
      deploymentId: `d${n}`,
      line: `step ${i + 1}: module ${i % 997}${i % 10_000 === 4_321 ? ' NEEDLE' : ''}`,
      stream: i % 50 === 0 ? 'stderr' : 'stdout',
      createdAt,
    })),
  );
}

const now = new Date().toISOString();
const service = {
  id: 's1',
  name: 'web',
  projectId: 'p1',
  environmentId: 'e1',
  status: 'running',
  repoUrl: 'https://git.example/web.git',
  repoFullName: null,
};
const fixtures: Record<string, (input: Record<string, unknown>) => unknown> = {
  'user.me': () => ({ user: { id: 'u1', name: 'Bench', email: 'bench@example.com', role: 'owner', twoFactorEnabled: false } }),
  'system.public': () => ({ ownerExists: true }),
  'services.overview': () => ({ service, domains: [], deployments: [], metrics: null, url: null }),
  'projects.bySlug': () => ({
    project: {
      id: 'p1',
      slug: 'shop',
      name: 'Shop',
      description: null,
      services: Array.from({ length: 1000 }, (_, i) => ({ ...service, id: `s${i}`, name: `svc-${String(i).padStart(4, '0')}` })),
    },
  }),
  'environments.list': () => ({ environments: [{ id: 'e1', name: 'production', isDefault: true }] }),
  'variables.shared': () => ({ env: {} }),
  'deployments.get': (input) => ({
    deployment: {
      id: input.deploymentId,
      serviceId: 's1',
      status: 'succeeded',
      trigger: 'manual',
      commitSha: null,
      imageTag: null,
      startedAt: now,
      finishedAt: now,
      rollbackOf: null,
    },
  }),
  'deployments.logs': (input) => {
    const all = logs.get(String(input.deploymentId)) ?? [];
    const afterId = Number(input.afterId ?? 0);
    // Ids are 1..n: the lines after `afterId` start at that index.
    return { logs: all.slice(afterId, afterId + Number(input.limit ?? all.length)) };
  },
};

function serve(): Promise<http.Server> {
  const types: Record<string, string> = { '.js': 'text/javascript', '.css': 'text/css', '.html': 'text/html', '.svg': 'image/svg+xml' };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://bench');
    if (url.pathname.startsWith('/trpc/')) {
      const procedures = decodeURIComponent(url.pathname.slice('/trpc/'.length)).split(',');
      const inputs = JSON.parse(url.searchParams.get('input') ?? '{}') as Record<string, { json?: Record<string, unknown> }>;
      if (procedures[0] === 'deployments.stream') {
        // The stream after the last line read: nothing more, and the deployment has finished.
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.end(
          `event: connected\ndata: {}\n\ndata: ${JSON.stringify(superjson.serialize({ type: 'snapshot', lines: [] }))}\nid: 0\n\nevent: return\ndata: \n\n`,
        );
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify(
          procedures.map((name, i) => {
            const fixture = fixtures[name];
            return fixture
              ? { result: { data: superjson.serialize(fixture(inputs[i]?.json ?? {})) } }
              : { error: { json: { message: `no fixture for ${name}`, code: -32004, data: { code: 'NOT_FOUND', httpStatus: 404 } } } };
          }),
        ),
      );
      return;
    }
    let file = path.join(DIST, path.normalize(url.pathname));
    if (!file.startsWith(DIST) || !existsSync(file) || statSync(file).isDirectory()) file = path.join(DIST, 'index.html');
    res.writeHead(200, { 'content-type': types[path.extname(file)] ?? 'application/octet-stream' });
    createReadStream(file).pipe(res);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

async function longestTask(page: Page): Promise<number> {
  return page.evaluate(() => Math.max(0, ...(window as unknown as { longTasks: number[] }).longTasks));
}

async function openLog(page: Page, base: string, lines: number) {
  const started = performance.now();
  await page.goto(`${base}/services/s1/deployments/d${lines}`);
  await page.getByText(`${lines} lines`, { exact: true }).waitFor({ timeout: 120_000 });
  const shownMs = performance.now() - started;
  const longestMs = await longestTask(page);
  const searchStarted = performance.now();
  await page.getByLabel('Search log').fill('needle');
  await page.getByText(/^\d+ matching lines$/).waitFor();
  return { shownMs, longestMs, searchMs: performance.now() - searchStarted };
}

async function scrollList(page: Page, base: string) {
  await page.goto(`${base}/projects/shop`);
  await page.getByRole('region', { name: 'Services (1000)' }).waitFor();
  // No named functions inside: tsx's keepNames would wrap them in a `__name` the page does not have.
  return page.evaluate(async () => {
    const el = document.querySelector('.vlist') as HTMLElement;
    const idle: number[] = [];
    let last = await new Promise<number>((r) => requestAnimationFrame(r));
    for (let i = 0; i < 60; i++) {
      const t = await new Promise<number>((r) => requestAnimationFrame(r));
      idle.push(t - last);
      last = t;
    }
    const scrolling: number[] = [];
    last = await new Promise<number>((r) => requestAnimationFrame(r));
    while (el.scrollTop + el.clientHeight < el.scrollHeight - 1) {
      el.scrollTop += el.clientHeight;
      const t = await new Promise<number>((r) => requestAnimationFrame(r));
      scrolling.push(t - last);
      last = t;
    }
    idle.sort((a, b) => a - b);
    scrolling.sort((a, b) => a - b);
    return {
      idleMs: idle[Math.floor(idle.length / 2)] ?? 0,
      scrollMs: scrolling[Math.floor(scrolling.length / 2)] ?? 0,
      scrollP90Ms: scrolling[Math.floor(scrolling.length * 0.9)] ?? 0,
      frames: scrolling.length,
    };
  });
}

async function main(): Promise<void> {
  if (!existsSync(path.join(DIST, 'index.html'))) throw new Error(`${DIST}/index.html is missing: run npm run build:dashboard first`);
  const executablePath = execFileSync('bash', [path.join(ROOT, 'test/provision/chromium.sh')], { encoding: 'utf8' }).trim();
  const server = await serve();
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const browser = await chromium.launch({ executablePath, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.addInitScript(() => {
      const w = window as unknown as { longTasks: number[] };
      w.longTasks = [];
      new PerformanceObserver((list) => {
        for (const e of list.getEntries()) w.longTasks.push(e.duration);
      }).observe({ type: 'longtask', buffered: true });
    });
    const short: Array<Awaited<ReturnType<typeof openLog>>> = [];
    const long: Array<Awaited<ReturnType<typeof openLog>>> = [];
    const lists: Array<Awaited<ReturnType<typeof scrollList>>> = [];
    for (let round = 0; round < ROUNDS; round++) {
      short.push(await openLog(page, base, SHORT));
      long.push(await openLog(page, base, LONG));
      lists.push(await scrollList(page, base));
    }
    const m = <T>(rows: T[], pick: (row: T) => number) => median(rows.map(pick));
    const ms = (v: number) => `${v.toFixed(0)} ms`;
    const ratio = (a: number, b: number) => (b > 0 ? `${(a / b).toFixed(1)}x` : '-');
    type LogFigures = (typeof short)[number];
    /** One measure of both logs, the short one the baseline. */
    const logRow = (label: string, pick: (row: LogFigures) => number) => [
      label,
      ms(m(short, pick)),
      ms(m(long, pick)),
      ratio(m(long, pick), m(short, pick)),
    ];
    console.log(`dashboard: ${ROUNDS} rounds, medians (Chromium ${browser.version()})`);
    console.log(
      table([
        ['measure', `log of ${SHORT.toLocaleString('en')} lines (baseline)`, `log of ${LONG.toLocaleString('en')} lines`, 'ratio'],
        logRow('shown (every line held)', (r) => r.shownMs),
        logRow('longest task meanwhile', (r) => r.longestMs),
        logRow('search of every line', (r) => r.searchMs),
      ]),
    );
    console.log(
      table([
        ['1,000 services', 'idle frame (baseline)', 'frame while scrolling (median)', 'p90', 'ratio (median)'],
        [
          `${lists[0]?.frames ?? 0} screens`,
          `${m(lists, (r) => r.idleMs).toFixed(1)} ms`,
          `${m(lists, (r) => r.scrollMs).toFixed(1)} ms`,
          `${m(lists, (r) => r.scrollP90Ms).toFixed(1)} ms`,
          ratio(
            m(lists, (r) => r.scrollMs),
            m(lists, (r) => r.idleMs),
          ),
        ],
      ]),
    );
  } finally {
    await browser.close();
    server.close();
  }
}

await runBench(main, 10 * 60_000);
