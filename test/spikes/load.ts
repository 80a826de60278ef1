/**
 * A load client for the cluster spike (docs/cluster-findings.md): `connections` keep-alive clients, half
 * POSTing a body, against a proxy address with a Host header, while a command runs. Every answer that is
 * not a 200 from the app, every network error, and every POST whose body did not arrive whole is a failure;
 * nothing is retried by the client. Prints the totals, the failures with their time from the command's
 * start, per-second counts and slow requests, and which replica (hostname) answered, per second.
 *
 *   bash scripts/ensure-node.sh npx tsx test/spikes/load.ts --target 100.64.21.10:8080 --host web.test \
 *     [--connections 16] [--before 3] [--after 10] [--new-connections] -- docker -H ... service update ...
 */
import { spawn } from 'node:child_process';
import { Agent, request } from 'node:http';

const args = process.argv.slice(2);
const split = args.indexOf('--');
const options = split >= 0 ? args.slice(0, split) : args;
const command = split >= 0 ? args.slice(split + 1) : [];
const option = (name: string, fallback: string) => {
  const i = options.indexOf(`--${name}`);
  return i >= 0 ? options[i + 1]! : fallback;
};
const [targetHost, targetPort] = option('target', '127.0.0.1:8080').split(':') as [string, string];
const hostHeader = option('host', 'web.test');
const connections = Number(option('connections', '16'));
const beforeMs = Number(option('before', '3')) * 1000;
const afterMs = Number(option('after', '10')) * 1000;
const fresh = options.includes('--new-connections');
const BODY = 'x'.repeat(2048);

interface Sample {
  start: number;
  ms: number;
  method: string;
  ok: boolean;
  detail: string;
  by: string;
}
const samples: Sample[] = [];
const agent = new Agent({ keepAlive: !fresh, maxSockets: connections });
let running = true;

function once(method: 'GET' | 'POST'): Promise<Sample> {
  const start = performance.now();
  return new Promise((resolve) => {
    const done = (ok: boolean, detail: string, by = '') => resolve({ start, ms: performance.now() - start, method, ok, detail, by });
    const req = request(
      {
        host: targetHost,
        port: Number(targetPort),
        path: '/',
        method,
        agent,
        headers: { Host: hostHeader, 'content-type': 'text/plain', ...(fresh ? { connection: 'close' } : {}) },
        timeout: 15_000,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          const m = /^version (\S+) (\S+)(?: posted (\d+))?$/.exec(text.trim());
          if (res.statusCode !== 200 || !m) return done(false, `${res.statusCode} ${text.slice(0, 120).trim()}`);
          if (method === 'POST' && Number(m[3]) !== BODY.length) return done(false, `POST body lost: posted ${m[3]}`, m[2]);
          done(true, '', m[2]);
        });
        res.on('error', (e) => done(false, `response ${e.message}`));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout 15 s')));
    req.on('error', (e: NodeJS.ErrnoException) =>
      done(false, `${e.code ?? ''} ${e.message} (${req.reusedSocket ? 'reused' : 'new'} connection)`),
    );
    req.end(method === 'POST' ? BODY : undefined);
  });
}

async function loop(index: number): Promise<void> {
  while (running) {
    const s = await once(index % 2 === 1 ? 'POST' : 'GET');
    samples.push(s);
    if (!s.ok) await new Promise((r) => setTimeout(r, 10));
  }
}

const t0 = performance.now();
const loops = Array.from({ length: connections }, (_, i) => loop(i));
await new Promise((r) => setTimeout(r, beforeMs));
const commandStart = performance.now();
let commandEnd = commandStart;
if (command.length > 0) {
  await new Promise<void>((resolve) => {
    const child = spawn(command[0]!, command.slice(1), { stdio: ['ignore', 'inherit', 'inherit'] });
    child.on('exit', (code) => {
      commandEnd = performance.now();
      console.log(`command exited ${code} after ${((commandEnd - commandStart) / 1000).toFixed(1)} s`);
      resolve();
    });
  });
}
await new Promise((r) => setTimeout(r, afterMs));
running = false;
await Promise.all(loops);
agent.destroy();

const rel = (t: number) => ((t - commandStart) / 1000).toFixed(2);
const failures = samples.filter((s) => !s.ok);
const seconds = (performance.now() - t0) / 1000;
console.log(
  `${samples.length} requests in ${seconds.toFixed(1)} s (${(samples.length / seconds).toFixed(0)} req/s, ${connections} ${fresh ? 'new-connection' : 'keep-alive'} clients, half POST), ` +
    `${failures.length} failed (${failures.filter((f) => f.method === 'POST').length} POST)`,
);
for (const f of failures.slice(0, 30)) console.log(`  failed at ${rel(f.start)} s (+${f.ms.toFixed(0)} ms) ${f.method}: ${f.detail}`);
const slow = samples.filter((s) => s.ms > 500);
console.log(`${slow.length} requests over 500 ms; the last started at ${slow.length ? rel(slow.at(-1)!.start) : '-'} s`);
const buckets = new Map<number, { n: number; failed: number; slow: number; max: number; by: Set<string> }>();
for (const s of samples) {
  const k = Math.floor((s.start - commandStart) / 1000);
  const b = buckets.get(k) ?? { n: 0, failed: 0, slow: 0, max: 0, by: new Set<string>() };
  b.n++;
  if (!s.ok) b.failed++;
  if (s.ms > 500) b.slow++;
  b.max = Math.max(b.max, s.ms);
  if (s.by) b.by.add(s.by.slice(0, 6));
  buckets.set(k, b);
}
console.log('second  requests failed slow(>500ms) max_ms  replicas answering');
for (const [k, b] of [...buckets].sort((a, b) => a[0] - b[0]))
  console.log(
    `${String(k).padStart(6)} ${String(b.n).padStart(9)} ${String(b.failed).padStart(6)} ${String(b.slow).padStart(6)} ${b.max.toFixed(0).padStart(9)}  ${[...b.by].sort().join(' ')}`,
  );
const seen = new Map<string, { first: number; last: number; n: number }>();
for (const s of samples) {
  if (!s.by) continue;
  const e = seen.get(s.by) ?? { first: s.start, last: s.start, n: 0 };
  e.first = Math.min(e.first, s.start);
  e.last = Math.max(e.last, s.start);
  e.n++;
  seen.set(s.by, e);
}
console.log('replica       first_s   last_s  requests');
for (const [by, e] of [...seen].sort((a, b) => a[1].first - b[1].first))
  console.log(`${by.padEnd(12)} ${rel(e.first).padStart(8)} ${rel(e.last).padStart(8)} ${String(e.n).padStart(9)}`);
console.log(`command started at ${new Date(Date.now() - (performance.now() - commandStart)).toISOString()}`);
process.exit(0);
