/**
 * What metrics sampling costs, in one run with 50 running service containers:
 *   platform idle, sampling on (METRICS_INTERVAL_MS=10000)  vs  the same platform, sampling off (0)
 * as CPU of the platform process (utime + stime from /proc) over a window, in % of one core; and one
 * sampling pass (list + 50 one-shot stats) timed in this process: wall time and CPU. The bar:
 * the platform idle with 50 containers under 2 % of one core. Run: npm run bench:metrics
 * (BENCH_CONTAINERS, BENCH_WINDOW_S, BENCH_WARMUP_S to change the defaults 50, 60 and 15).
 */
import { rmSync } from 'node:fs';
import Docker from 'dockerode';
import { DockerContainerStatsSource } from '../adapters/docker/docker.container-stats-source.js';
import { deploy } from '../test/helpers/deployments.js';
import { provisionDocker } from '../test/helpers/docker.js';
import { api, startServerProcess, type ServerProcess } from '../test/helpers/server-process.js';
import { runBench } from './run-bench.js';
import { cpuSeconds, median } from './bench-support.js';

const CONTAINERS = Number(process.env.BENCH_CONTAINERS ?? 50);
const WINDOW_S = Number(process.env.BENCH_WINDOW_S ?? 60);
/** Seconds given to start-up work to settle before each window (BENCH_WARMUP_S). */
const WARMUP_S = Number(process.env.BENCH_WARMUP_S ?? 15);
const INTERVAL_MS = 10_000;

const env = (interval: number) => ({
  BUILD_CONCURRENCY: '4',
  WORKER_SETTLE_MS: '200',
  STOP_GRACE_SECONDS: '1',
  METRICS_INTERVAL_MS: String(interval),
});

/** utime + stime of a process, in ms. */
const cpuMsOf = (pid: number): number => cpuSeconds(pid) * 1000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The platform's CPU over the window, after a warm-up that lets start-up work settle. */
async function idleCpu(server: ServerProcess): Promise<number> {
  await sleep(WARMUP_S * 1000);
  const pid = server.child.pid!;
  const before = cpuMsOf(pid);
  const started = Date.now();
  await sleep(WINDOW_S * 1000);
  return ((cpuMsOf(pid) - before) / (Date.now() - started)) * 100;
}

async function main(): Promise<void> {
  await provisionDocker();
  let server = await startServerProcess(env(INTERVAL_MS));
  let call = api(server.url, server.token);
  const instanceId = /"instanceId":"([a-z0-9]+)"/.exec(server.output())?.[1];
  if (!instanceId) throw new Error('the server did not log its instanceId');
  const projectId = (await call('POST', '/api/projects', { name: `bench-metrics-${Date.now()}` })).json.project.id as string;
  try {
    process.stdout.write(`starting ${CONTAINERS} busybox workers through the platform...\n`);
    const ids: string[] = [];
    for (let i = 0; i < CONTAINERS; i++) {
      const res = await call('POST', `/api/projects/${projectId}/services`, {
        name: `w${i}`,
        repoUrl: 'container-image',
        containerImage: 'busybox:latest',
        runtimeMode: 'worker',
        startCommand: "trap 'exit 0' TERM; while true; do sleep 1; done",
      });
      if (res.status !== 201) throw new Error(`${res.status} ${res.text}`);
      ids.push(res.json.service.id);
    }
    for (let i = 0; i < ids.length; i += 5) {
      const done = await Promise.all(ids.slice(i, i + 5).map((id) => deploy(call, id, 120_000)));
      for (const d of done) if (d.deployment.status !== 'succeeded') throw new Error(d.logs.join('\n'));
    }

    const on = await idleCpu(server);
    // The first sample comes one interval after start: a short warm-up and window may end before it.
    let metrics = (await call('GET', `/api/services/${ids[0]}/metrics`)).json;
    for (const until = Date.now() + 3 * INTERVAL_MS; !metrics.running && Date.now() < until; ) {
      await sleep(500);
      metrics = (await call('GET', `/api/services/${ids[0]}/metrics`)).json;
    }
    if (!metrics.running) throw new Error(`sampling is on but the service reads as stopped: ${JSON.stringify(metrics)}`);

    await server.stop();
    server = await startServerProcess(env(0), { dataDir: server.dataDir, token: server.token });
    call = api(server.url, server.token);
    const off = await idleCpu(server);

    // One pass as the sampler makes it, in this process.
    const source = new DockerContainerStatsSource(
      new Docker({ socketPath: process.env.DOCKER_SOCKET ?? '/var/run/docker.sock' }),
      instanceId,
    );
    await source.sample(AbortSignal.timeout(30_000)); // warms the restart-count cache, as the sampler's first tick does
    const passes: Array<{ wall: number; cpu: number; n: number }> = [];
    for (let i = 0; i < 5; i++) {
      const cpu = process.cpuUsage();
      const started = performance.now();
      const n = (await source.sample(AbortSignal.timeout(30_000))).length;
      const used = process.cpuUsage(cpu);
      passes.push({ wall: performance.now() - started, cpu: (used.user + used.system) / 1000, n });
    }
    const passCpu = median(passes.map((p) => p.cpu));

    const rows = [
      ['measure', 'value'],
      ['running service containers', String(passes[0]!.n)],
      [`platform idle, sampling every ${INTERVAL_MS / 1000} s (% of one core, ${WINDOW_S} s)`, on.toFixed(2)],
      [`platform idle, sampling off (% of one core, ${WINDOW_S} s)`, off.toFixed(2)],
      ['sampling cost (on - off, % of one core)', (on - off).toFixed(2)],
      ['one pass: wall time, median of 5 (ms)', median(passes.map((p) => p.wall)).toFixed(1)],
      ['one pass: CPU in this process, median of 5 (ms)', passCpu.toFixed(1)],
      [`one pass every ${INTERVAL_MS / 1000} s as % of one core`, ((passCpu / INTERVAL_MS) * 100).toFixed(2)],
      ['bar: platform idle with sampling under 2 %', on < 2 ? 'met' : 'NOT met'],
    ];
    const width = Math.max(...rows.map((r) => r[0]!.length));
    for (const [i, [k, v]] of rows.entries()) {
      process.stdout.write(`${k!.padEnd(width)}  ${v}\n`);
      if (i === 0) process.stdout.write(`${'-'.repeat(width)}  -----\n`);
    }
  } finally {
    await call('DELETE', `/api/projects/${projectId}`).catch(() => {});
    await server.dispose();
    rmSync(server.dataDir, { recursive: true, force: true });
  }
}

await runBench(main, 20 * 60_000);
