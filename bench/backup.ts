/**
 * Backup benchmark: `npm run bench:backup` (or `npx tsx bench/backup.ts`).
 *
 * In one run it
 *  1. starts the real server as `npm start` does, deploys a postgres database service through the
 *     API and fills it with BENCH_GB (default 1) GiB of table data through POST /database/query;
 *  2. backs it up by hand: `docker exec <container> pg_dump -Fc ...` with its stdout written to a file
 *     (the baseline), and through the platform: POST /backups {storage: disk}, timed from the POST to the
 *     backup's own `finishedAt` (the file is complete and renamed then), polled once a second: a tight
 *     poll loop is server work competing with pg_dump for the CPU (at 50 ms it cost the server more CPU
 *     than the backup itself), in BENCH_ROUNDS (5) rounds whose order
 *     alternates (by hand then platform, platform then by hand...): the dump is CPU-bound (zlib) on a
 *     shared machine, and whichever side always ran first or second would carry the machine's drift;
 *  3. compares each round's pair (the platform's time over the one by hand next to it) and takes the
 *     median of those ratios: a round that a burst of other work slowed is one ratio among several,
 *     not half of a total;
 *  4. samples the server's VmRSS every 200 ms and its CPU time during each platform backup;
 *  5. prints a table per round, then: measure | platform | by hand | ratio | target (<= 1.05x the time),
 *     and the RSS and CPU lines.
 * Knobs: BENCH_GB (1), BENCH_ROUNDS (5), BENCH_PROFILE_DIR (the server runs with --cpu-prof there; the
 * profile is written when it stops), BENCH_SERVER_NODE_OPTIONS (more NODE_OPTIONS for the server). Informational: whatever the figures, it exits 0 unless it crashes.
 */
import { spawn } from 'node:child_process';
import { createWriteStream, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import Docker from 'dockerode';
import { LABELS } from '../src/deployments/container-engine.port.js';
import { deploy } from '../test/helpers/deployments.js';
import { provisionDocker } from '../test/helpers/docker.js';
import { api, startServerProcess, type ServerProcess } from '../test/helpers/server-process.js';
import { runBench } from './run-bench.js';
import { benchPortRange, cpuSeconds, fillBenchTable, median, rssMb, table } from './bench-support.js';

const GB = Number(process.env.BENCH_GB ?? 1);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const PROFILE_DIR = process.env.BENCH_PROFILE_DIR;
const POLL_MS = 1_000;
/** Rows of ~1 KiB of table data each (a text column of 1,000 random-ish characters plus the tuple). */
const ROWS = Math.round((GB * 1024 * 1024 * 1024) / 1100);
const TARGET = 1.05;
const RSS_SAMPLE_MS = 200;
const WATCHDOG_MS = 90 * 60_000;

const fmt = (n: number, digits = 2) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');

async function main(): Promise<void> {
  await provisionDocker({ images: 'busybox,debian,postgres' });
  const server: ServerProcess = await startServerProcess({
    BUILD_CONCURRENCY: '1',
    HEALTH_TIMEOUT_MS: '120000',
    DATABASE_QUERY_TIMEOUT_MS: '600000',
    HOST_PORT_RANGE: benchPortRange(),
    ...(PROFILE_DIR || process.env.BENCH_SERVER_NODE_OPTIONS
      ? {
          NODE_OPTIONS: [PROFILE_DIR ? `--cpu-prof --cpu-prof-dir=${PROFILE_DIR}` : '', process.env.BENCH_SERVER_NODE_OPTIONS ?? '']
            .join(' ')
            .trim(),
        }
      : {}),
  });
  const call = api(server.url, server.token);
  const scratch = path.join(tmpdir(), `slipway-bench-backup-${process.pid}.dump`);
  try {
    const project = (await call('POST', '/api/projects', { name: `bench-backup-${Date.now()}` })).json.project;
    const created = await call('POST', `/api/projects/${project.id}/services`, {
      name: 'bench db',
      repoUrl: 'database',
      repoFullName: 'database:postgres',
    });
    const serviceId = created.json.service.id as string;
    const deployed = await deploy(call, serviceId, 5 * 60_000);
    if (deployed.deployment.status !== 'succeeded') throw new Error(`deploy failed:\n${deployed.logs.join('\n')}`);
    const env: Record<string, string> = {};
    for (const v of (await call('GET', `/api/services/${serviceId}/overview`)).json.env as Array<{ id: string; key: string }>)
      env[v.key] = (await call('POST', `/api/services/${serviceId}/env/${v.id}/reveal`)).json.value;

    process.stdout.write(`filling ${GB} GiB (${ROWS.toLocaleString('en-US')} rows)...\n`);
    const long = (sql: string) =>
      fetch(`${server.url}/api/services/${serviceId}/database/query`, {
        method: 'POST',
        headers: { authorization: `Bearer ${server.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ sql }),
        signal: AbortSignal.timeout(3_600_000),
      }).then(async (res) => {
        if (res.status !== 200) throw new Error(`${sql}: ${res.status} ${await res.text()}`);
      });
    await fillBenchTable(long, ROWS);
    await long('VACUUM ANALYZE bench');

    const docker = new Docker();
    const [container] = await docker.listContainers({ filters: { label: [`${LABELS.service}=${serviceId}`] } });
    if (!container) throw new Error('no running container of the database');

    const byHand = async (): Promise<number> => {
      const started = performance.now();
      const child = spawn(
        'docker',
        [
          'exec',
          '-e',
          `PGPASSWORD=${env.POSTGRES_PASSWORD}`,
          container.Id,
          'pg_dump',
          '--format=custom',
          '-U',
          env.POSTGRES_USER!,
          '-d',
          env.POSTGRES_DB!,
        ],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      // The CPU of this side for comparison: the docker CLI (its last sample before it exits) and this process's piping.
      const own = process.cpuUsage();
      let cli = 0;
      const cliSampler = setInterval(() => {
        try {
          cli = cpuSeconds(child.pid!);
        } catch {}
      }, RSS_SAMPLE_MS);
      const exited = new Promise<number | null>((resolve, reject) => {
        child.once('error', reject);
        child.once('exit', (code) => resolve(code));
      });
      // Both the file written to its end and the tool's exit, in whichever order they come.
      await pipeline(child.stdout, createWriteStream(scratch));
      const code = await exited;
      clearInterval(cliSampler);
      if (code !== 0) throw new Error(`pg_dump exited ${code}`);
      const ms = performance.now() - started;
      const piping = process.cpuUsage(own);
      process.stdout.write(
        `  by hand: ${fmt(ms / 1000)} s, ${fmt(statSync(scratch).size / 1048576, 0)} MiB, CPU: docker CLI ${fmt(cli)} s (or more), piping to the file ${fmt((piping.user + piping.system) / 1e6)} s\n`,
      );
      rmSync(scratch, { force: true });
      return ms;
    };
    const pid = server.child.pid!;
    const platform = async (): Promise<{ ms: number; rssBefore: number; rssPeak: number; size: number; cpu: number }> => {
      const rssBefore = rssMb(pid);
      let rssPeak = rssBefore;
      const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, rssMb(pid))), RSS_SAMPLE_MS);
      const cpuBefore = cpuSeconds(pid);
      const started = Date.now();
      const res = await call('POST', `/api/services/${serviceId}/database/backups`, { storage: 'disk' });
      if (res.status !== 201) throw new Error(`backup: ${res.status} ${res.text}`);
      let backup = res.json.backup;
      while (backup.status === 'running') {
        await new Promise((r) => setTimeout(r, POLL_MS));
        backup = (
          (await call('GET', `/api/services/${serviceId}/database/backups`)).json.backups as Array<{ id: string; finishedAt: string }>
        ).find((b) => b.id === res.json.backup.id);
      }
      // The server's own end mark, on the same machine's clock: the poll interval adds nothing.
      const ms = Date.parse(backup.finishedAt) - started;
      const cpu = cpuSeconds(pid) - cpuBefore;
      clearInterval(sampler);
      if (backup.status !== 'succeeded') throw new Error(`backup failed: ${backup.error}`);
      // Where the time went, from the backup's own log (each line's time, from the POST): the fixed costs around the dump.
      const logs = (await call('GET', `/api/services/${serviceId}/database/backups/${backup.id}/logs`)).json.logs as Array<{
        line: string;
        createdAt: string;
      }>;
      const at = (pattern: RegExp) => {
        const line = logs.find((l) => pattern.test(l.line));
        return line ? `${fmt((Date.parse(line.createdAt) - started) / 1000)} s` : 'n/a';
      };
      process.stdout.write(
        `  platform: ${fmt(ms / 1000)} s, ${fmt(backup.sizeBytes / 1048576, 0)} MiB, RSS ${fmt(rssBefore, 0)} -> peak ${fmt(rssPeak, 0)} MiB, server CPU ${fmt(cpu)} s (started ${at(/^Backup .+ started/)}, pg_dump running ${at(/^Running pg_dump/)}, succeeded ${at(/^Backup succeeded/)}, finished ${fmt(ms / 1000)} s)\n`,
      );
      await call('DELETE', `/api/services/${serviceId}/database/backups/${backup.id}`);
      return { ms, rssBefore, rssPeak, size: backup.sizeBytes, cpu };
    };

    // What the server costs at rest (reconcile passes, metrics, the job runners' polls): part of every backup's CPU line.
    const restBefore = cpuSeconds(pid);
    await new Promise((r) => setTimeout(r, 10_000));
    const rest = cpuSeconds(pid) - restBefore;

    const rounds: Array<{ hand: number; ours: Awaited<ReturnType<typeof platform>> }> = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const handFirst = round % 2 === 1;
      process.stdout.write(`round ${round}/${ROUNDS} (${handFirst ? 'by hand first' : 'platform first'})\n`);
      if (handFirst) {
        const hand = await byHand();
        rounds.push({ hand, ours: await platform() });
      } else {
        const ours = await platform();
        rounds.push({ hand: await byHand(), ours });
      }
    }
    const ratios = rounds.map((r) => r.ours.ms / r.hand);
    const ratio = median(ratios);
    const handMs = median(rounds.map((r) => r.hand));
    const ourMs = median(rounds.map((r) => r.ours.ms));
    const rssGrowth = Math.max(...rounds.map((r) => r.ours.rssPeak - r.ours.rssBefore));
    const size = rounds[0]!.ours.size;
    process.stdout.write(
      `\n${table([
        ['round', 'order', 'platform (s)', 'pg_dump -Fc by hand (s)', 'ratio'],
        ...rounds.map((r, i) => [
          String(i + 1),
          i % 2 === 0 ? 'by hand, platform' : 'platform, by hand',
          fmt(r.ours.ms / 1000),
          fmt(r.hand / 1000),
          `${fmt(ratios[i]!, 3)}x`,
        ]),
      ])}\n\n${table([
        ['measure', 'platform', 'pg_dump -Fc by hand', 'ratio', 'target'],
        [
          `backup of ${GB} GiB of table data (median of ${ROUNDS} rounds, s; ratio: median of the rounds' ratios)`,
          fmt(ourMs / 1000),
          fmt(handMs / 1000),
          `${fmt(ratio, 3)}x`,
          `<= ${TARGET}x ${ratio <= TARGET ? 'met' : 'NOT met'}`,
        ],
      ])}\n\nserver RSS during the platform backups: at most +${fmt(rssGrowth, 0)} MiB over the ${fmt(rounds[0]!.ours.rssBefore, 0)} MiB before (dump ${fmt(size / 1048576, 0)} MiB)\nserver CPU per platform backup: ${rounds.map((r) => fmt(r.ours.cpu)).join(', ')} s (${fmt(median(rounds.map((r) => r.ours.cpu)) / (size / 1073741824))} s per GiB of dump; at rest it uses ${fmt(rest)} s per 10 s)\n`,
    );
    await call('DELETE', `/api/projects/${project.id}`);
  } finally {
    rmSync(scratch, { force: true });
    // SIGTERM first: a --cpu-prof profile is written when the process exits on its own.
    if (PROFILE_DIR) await server.stop();
    await server.dispose();
  }
}

await runBench(main, WATCHDOG_MS);
