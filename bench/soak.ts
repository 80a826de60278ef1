/**
 * Heap soak (issue 32: "no growth over a 30-minute soak of deploys, log streams and API reads"): one server
 * started as `npm start` starts it, warmed by one cycle, a heap snapshot, then cycles of a redeploy (a changed
 * commit every fifth, an unchanged one between) followed by SSE clients, with API reads beside it, until the
 * time is up, then a second snapshot. Prints RSS and heap before and after and the snapshots' diff by
 * constructor (self size and count), largest growth first. Run: npm run bench:soak
 *
 * Knobs: BENCH_SOAK_MINUTES (30), BENCH_SSE_CLIENTS (5 per deployment), BENCH_READS (20 reads per cycle).
 * The snapshots are written by the server itself (`--heapsnapshot-signal`, each after a full GC) into a
 * temporary directory, summarised, then removed unless BENCH_KEEP_SNAPSHOTS=1.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { loadavg } from 'node:os';
import { startServerProcess } from '../test/helpers/server-process.js';
import { readResponse, type ApiResponse } from '../test/helpers/http.js';
import { provisionDocker } from '../test/helpers/docker.js';
import { waitForDeployment } from '../test/helpers/deployments.js';
import { startGitServer } from '../test/helpers/git-server.js';
import { readSse } from '../test/helpers/sse.js';
import { benchPortRange, busyboxApp, rssMb, table } from './bench-support.js';
import { runBench } from './run-bench.js';

const MINUTES = Number(process.env.BENCH_SOAK_MINUTES ?? 30);
const SSE_CLIENTS = Number(process.env.BENCH_SSE_CLIENTS ?? 5);
const READS = Number(process.env.BENCH_READS ?? 20);

/**
 * The tests' API helper with a longer timeout: over half an hour on a loaded machine a request (a snapshot being
 * written blocks the server) can outlast the tests' 15 s, and the soak is about memory, not latency.
 */
function soakApi(base: string, token: string) {
  return async (method: string, pathname: string, body?: unknown): Promise<ApiResponse> => {
    const res = await fetch(`${base}${pathname}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(120_000),
    });
    return readResponse(res);
  };
}

interface HeapSummary {
  totalBytes: number;
  nodes: number;
  byClass: Map<string, { size: number; count: number }>;
}

/** Self size and count per (node type, constructor name) of a .heapsnapshot file. */
function summarise(file: string): HeapSummary {
  const snapshot = JSON.parse(readFileSync(file, 'utf8')) as {
    snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } };
    nodes: number[];
    strings: string[];
  };
  const fields = snapshot.snapshot.meta.node_fields;
  const types = snapshot.snapshot.meta.node_types[0];
  const width = fields.length;
  const typeAt = fields.indexOf('type');
  const nameAt = fields.indexOf('name');
  const sizeAt = fields.indexOf('self_size');
  const byClass = new Map<string, { size: number; count: number }>();
  let totalBytes = 0;
  for (let i = 0; i < snapshot.nodes.length; i += width) {
    const type = types[snapshot.nodes[i + typeAt]!]!;
    // Strings and code by type only: their names are their contents.
    const name = type === 'object' || type === 'native' || type === 'closure' ? snapshot.strings[snapshot.nodes[i + nameAt]!]! : '';
    const key = name ? `${type} ${name.slice(0, 60)}` : `(${type})`;
    const size = snapshot.nodes[i + sizeAt]!;
    totalBytes += size;
    const entry = byClass.get(key) ?? { size: 0, count: 0 };
    entry.size += size;
    entry.count++;
    byClass.set(key, entry);
  }
  return { totalBytes, nodes: snapshot.nodes.length / width, byClass };
}

/** Asks the server for a snapshot (SIGUSR2) and waits until the file is complete. */
async function snapshot(pid: number, dir: string, ping: () => Promise<unknown>): Promise<string> {
  const before = new Set(readdirSync(dir));
  process.kill(pid, 'SIGUSR2');
  const deadline = Date.now() + 120_000;
  for (;;) {
    const made = readdirSync(dir).find((f) => f.endsWith('.heapsnapshot') && !before.has(f));
    if (made) {
      // The server writes it synchronously: once it answers a request again, the file is whole. Writing
      // one can outlast a request's 15 s timeout on a loaded machine: a timed-out ping is asked again.
      await ping().catch((error: Error) => {
        if (error.name !== 'TimeoutError') throw error;
      });
      const file = path.join(dir, made);
      const size = statSync(file).size;
      await new Promise((r) => setTimeout(r, 200));
      if (statSync(file).size === size) return file;
    }
    if (Date.now() > deadline) throw new Error('no heap snapshot within 120 s');
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function main(): Promise<void> {
  await provisionDocker();
  const git = await startGitServer();
  const snapshots = mkdtempSync(path.join(tmpdir(), 'slipway-soak-'));
  const server = await startServerProcess({
    HOST_PORT_RANGE: benchPortRange(),
    BUILD_CONCURRENCY: '1',
    GIT_BASE_URL: git.url,
    STOP_GRACE_SECONDS: '1',
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${snapshots}`.trim(),
  });
  const call = soakApi(server.url, server.token);
  const pid = server.child.pid!;
  const load: number[] = [loadavg()[0]!];
  try {
    const project = (await call('POST', '/api/projects', { name: `soak-${randomBytes(3).toString('hex')}` })).json.project;
    await git.addRepo('soak/app', busyboxApp(randomBytes(6).toString('hex')));
    const service = (
      await call('POST', `/api/projects/${project.id}/services`, { name: 'app', repoFullName: 'soak/app', internalPort: 3000 })
    ).json.service;

    const counts = { deploys: 0, failed: 0, streams: 0, frames: 0, reads: 0 };
    const cycle = async (n: number): Promise<void> => {
      if (n % 5 === 0) await git.addRepo('soak/app', busyboxApp(randomBytes(6).toString('hex')));
      const created = await call('POST', `/api/services/${service.id}/deployments`);
      if (created.status !== 201) throw new Error(`deploy: ${created.status} ${created.text}`);
      const id = created.json.deployment.id as string;
      const streams = Array.from({ length: SSE_CLIENTS }, () =>
        readSse(`${server.url}/api/deployments/${id}/stream`, {
          token: server.token,
          timeoutMs: 120_000,
          until: () => false,
          onFrame: () => void counts.frames++,
        }).then(() => void counts.streams++),
      );
      const reads = (async () => {
        for (let i = 0; i < READS; i++) {
          const paths = [
            '/api/projects',
            `/api/services/${service.id}/overview`,
            `/api/services/${service.id}/deployments`,
            `/api/deployments/${id}/logs`,
          ];
          const res = await call('GET', paths[i % paths.length]!);
          if (res.status !== 200) throw new Error(`GET ${paths[i % paths.length]}: ${res.status}`);
          counts.reads++;
        }
      })();
      const done = await waitForDeployment(call, id, 180_000);
      counts.deploys++;
      if (done.deployment.status !== 'succeeded') counts.failed++;
      await Promise.all([reads, ...streams]);
    };

    await cycle(0); // warm: every path of the loop has run once before the first snapshot
    const ping = () => call('GET', '/api/projects');
    const first = await snapshot(pid, snapshots, ping);
    const rssStart = rssMb(pid);
    const started = Date.now();
    let n = 1;
    while (Date.now() - started < MINUTES * 60_000) {
      await cycle(n++);
      if (n % 20 === 0) load.push(loadavg()[0]!);
    }
    const elapsedMin = (Date.now() - started) / 60_000;
    const last = await snapshot(pid, snapshots, ping);
    const rssEnd = rssMb(pid);
    load.push(loadavg()[0]!);

    const a = summarise(first);
    const b = summarise(last);
    const diff = [...new Set([...a.byClass.keys(), ...b.byClass.keys()])]
      .map((key) => {
        const x = a.byClass.get(key) ?? { size: 0, count: 0 };
        const y = b.byClass.get(key) ?? { size: 0, count: 0 };
        return { key, size: y.size - x.size, count: y.count - x.count, end: y.size };
      })
      .filter((d) => d.size !== 0 || d.count !== 0)
      .sort((p, q) => Math.abs(q.size) - Math.abs(p.size));
    const kb = (bytes: number) => `${(bytes / 1024).toFixed(1)} KB`;
    console.log(
      `\nHeap soak: ${elapsedMin.toFixed(1)} min, ${counts.deploys} deploys (${counts.failed} not succeeded), ${counts.streams} SSE streams (${counts.frames} frames), ${counts.reads} API reads; load average ${load.map((l) => l.toFixed(1)).join(' -> ')}`,
    );
    console.log(
      table([
        ['measure', 'start (after one warm cycle)', 'end', 'change'],
        [
          'heap snapshot, live objects',
          kb(a.totalBytes),
          kb(b.totalBytes),
          `${kb(b.totalBytes - a.totalBytes)} (${(((b.totalBytes - a.totalBytes) / a.totalBytes) * 100).toFixed(1)}%)`,
        ],
        ['heap snapshot, nodes', String(a.nodes), String(b.nodes), String(b.nodes - a.nodes)],
        ['RSS', `${rssStart.toFixed(1)} MB`, `${rssEnd.toFixed(1)} MB`, `${(rssEnd - rssStart).toFixed(1)} MB`],
      ]),
    );
    console.log('\nLargest changes by constructor (self size; strings and code by type):');
    console.log(
      table([
        ['constructor', 'size change', 'count change', 'size at end'],
        ...diff.slice(0, 15).map((d) => [d.key, kb(d.size), String(d.count), kb(d.end)]),
      ]),
    );
    await call('DELETE', `/api/projects/${project.id}`);
  } finally {
    await server.dispose();
    await git.close();
    if (process.env.BENCH_KEEP_SNAPSHOTS === '1') console.log(`snapshots kept in ${snapshots}`);
    else if (existsSync(snapshots)) rmSync(snapshots, { recursive: true, force: true });
  }
}

await runBench(main, (MINUTES + 20) * 60_000);
