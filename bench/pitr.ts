/**
 * Point-in-time recovery benchmark: `npm run bench:pitr` (or `npx tsx bench/pitr.ts`).
 *
 * In one run it
 *  1. starts the real server as `npm start` does, deploys a postgres database service, fills it with
 *     BENCH_MB (default 1024) MiB of table data through POST /database/query, turns point-in-time recovery
 *     on (disk) and redeploys it (archive_mode needs a restart); the platform takes the base backup of the
 *     filled database;
 *  2. writes BENCH_ROWS_PER_SECOND (1,000) rows of ~1 KiB a second for BENCH_WRITE_SECONDS (60) through
 *     the API, reading GET .../pitr once a second: the archive's lag (`lag.seconds`, the oldest WAL still
 *     in the spool) and the recovery point (now minus the window's last second: what a restore could not
 *     reach; before the window opens, now minus the base backup's end), against their bound, the
 *     shipping interval plus PostgreSQL's archive_timeout (60 s): a
 *     segment is switched at least that often under writes and shipped by the next pass;
 *  3. restores the same base backup, in BENCH_ROUNDS (3) rounds whose order alternates, twice: to the
 *     window's first second (the baseline: the base backup alone, recovered to consistency and promoted at
 *     once, a plain restore of it; the same WAL files are copied in, none replayed past the backup's end) and
 *     to its last second (every WAL segment the write load left replayed on top), each into a
 *     new service through POST .../pitr/restore, timed by the restore's own startedAt and finishedAt, the
 *     new service deleted after; the median of the rounds' ratios is the cost of the replay;
 *  4. prints the lag samples' table, then: measure | point-in-time | baseline | ratio.
 * Knobs: BENCH_MB (1024), BENCH_ROWS_PER_SECOND (1000), BENCH_WRITE_SECONDS (60), BENCH_ROUNDS (3),
 * BENCH_PITR_INTERVAL_MS (the platform's PITR_INTERVAL_MS, default its own 10,000). Informational: whatever
 * the figures, it exits 0 unless it crashes.
 */
import { deploy } from '../test/helpers/deployments.js';
import { provisionDocker } from '../test/helpers/docker.js';
import { api, startServerProcess, type ServerProcess } from '../test/helpers/server-process.js';
import { benchPortRange, fillBenchTable, median, table } from './bench-support.js';
import { runBench } from './run-bench.js';

const MB = Number(process.env.BENCH_MB ?? 1024);
const RATE = Number(process.env.BENCH_ROWS_PER_SECOND ?? 1000);
const WRITE_SECONDS = Number(process.env.BENCH_WRITE_SECONDS ?? 60);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const INTERVAL_MS = Number(process.env.BENCH_PITR_INTERVAL_MS ?? 10_000);
/** PostgreSQL's archive_timeout as the platform starts it (src/deployments/container-launch.ts). */
const ARCHIVE_TIMEOUT_S = 60;
/** Rows of ~1 KiB of table data each (a text column of 992 md5 characters plus the tuple). */
const FILL_ROWS = Math.max(1, Math.round((MB * 1024 * 1024) / 1100));
const WATCHDOG_MS = 120 * 60_000;
const suffix = Math.random().toString(16).slice(2, 8);

const fmt = (n: number, digits = 2) => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  await provisionDocker({ images: 'postgres' });
  const server: ServerProcess = await startServerProcess({
    BUILD_CONCURRENCY: '1',
    HEALTH_TIMEOUT_MS: '120000',
    DATABASE_QUERY_TIMEOUT_MS: '600000',
    PITR_INTERVAL_MS: String(INTERVAL_MS),
    STOP_GRACE_SECONDS: '5',
    HOST_PORT_RANGE: benchPortRange(),
  });
  const call = api(server.url, server.token);
  try {
    const project = (await call('POST', '/api/projects', { name: `bench-pitr-${suffix}` })).json.project;
    const created = await call('POST', `/api/projects/${project.id}/services`, {
      name: `bench-pitr-${suffix}`,
      repoUrl: 'database',
      repoFullName: 'database:postgres',
    });
    if (created.status !== 201) throw new Error(`service: ${created.status} ${created.text}`);
    const id = created.json.service.id as string;
    const deployed = await deploy(call, id, 5 * 60_000);
    if (deployed.deployment.status !== 'succeeded') throw new Error(`deploy failed:\n${deployed.logs.join('\n')}`);
    const sql = async (statement: string) => {
      const res = await fetch(`${server.url}/api/services/${id}/database/query`, {
        method: 'POST',
        headers: { authorization: `Bearer ${server.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ sql: statement }),
        signal: AbortSignal.timeout(3_600_000),
      });
      if (res.status !== 200) throw new Error(`${statement.slice(0, 80)}: ${res.status} ${await res.text()}`);
    };
    const pitr = async () => (await call('GET', `/api/services/${id}/database/pitr`)).json.pitr;
    const until = async <T>(what: string, check: () => Promise<T | null>, timeoutMs = 30 * 60_000): Promise<T> => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const value = await check();
        if (value) return value;
        if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs / 1000} s`);
        await sleep(500);
      }
    };

    process.stdout.write(`filling ${MB} MiB (${FILL_ROWS.toLocaleString('en-US')} rows)...\n`);
    await fillBenchTable(sql, FILL_ROWS);
    await sql('CHECKPOINT');
    const on = await call('PUT', `/api/services/${id}/database/pitr`, { enabled: true, storage: 'disk' });
    if (on.status !== 200) throw new Error(`pitr: ${on.status} ${on.text}`);
    const redeployed = await deploy(call, id, 5 * 60_000);
    if (redeployed.deployment.status !== 'succeeded') throw new Error(`redeploy failed:\n${redeployed.logs.join('\n')}`);
    const base = await until('the base backup', async () => {
      const b = (await pitr()).lastBaseBackup;
      return b?.status === 'succeeded' ? b : null;
    });
    process.stdout.write(`base backup: ${fmt(base.sizeBytes / 1048576, 0)} MiB\n`);
    await sleep(Math.max(0, Date.parse(base.finishedAt) + 1_100 - Date.now()));

    // The write load: RATE rows a second, in ten batches a second, each of ~1 KiB, for WRITE_SECONDS.
    await sql(
      'CREATE TABLE load (id bigserial PRIMARY KEY, payload text NOT NULL, written timestamptz NOT NULL DEFAULT clock_timestamp())',
    );
    const perBatch = Math.max(1, Math.round(RATE / 10));
    const samples: Array<{ t: number; lag: number; pending: number; rpo: number }> = [];
    const started = Date.now();
    let written = 0;
    let stop = false;
    const writer = (async () => {
      for (let tick = 0; !stop; tick++) {
        const due = started + tick * 100;
        await sleep(Math.max(0, due - Date.now()));
        await sql(
          `INSERT INTO load (payload) SELECT (SELECT string_agg(md5(g::text || ':' || i || '${tick}'), '') FROM generate_series(1, 31) i) FROM generate_series(1, ${perBatch}) g`,
        );
        written += perBatch;
      }
    })();
    const sampler = (async () => {
      while (!stop) {
        await sleep(1_000);
        const p = await pitr();
        const now = Date.now();
        samples.push({
          t: (now - started) / 1000,
          lag: p.lag.seconds,
          pending: p.lag.pendingSegments,
          // No window yet (the first segment after the base backup not shipped): all since the backup's end is at risk.
          rpo: (now - Date.parse(p.window?.latest ?? base.finishedAt)) / 1000,
        });
      }
    })();
    await sleep(WRITE_SECONDS * 1000);
    stop = true;
    await Promise.all([writer, sampler]);
    const elapsed = (Date.now() - started) / 1000;
    const achieved = written / elapsed;

    // The window's end past the load: a switch, and the archive shipped.
    const end = new Date(Math.floor(Date.now() / 1000) * 1000);
    await sql('SELECT pg_switch_wal()');
    const window = await until('the window past the load', async () => {
      const p = await pitr();
      return p.window && Date.parse(p.window.latest) >= end.getTime() && p.lag.pendingSegments === 0 ? p.window : null;
    });
    const { archivedSegments, archivedBytes } = await pitr();

    const restore = async (at: string): Promise<{ ms: number; reachedAt: string | null; wal: number }> => {
      const res = await call('POST', `/api/services/${id}/database/pitr/restore`, { at });
      if (res.status !== 201) throw new Error(`restore: ${res.status} ${res.text}`);
      const restoreId = res.json.restore.id as string;
      const done = await until(`restore ${restoreId}`, async () => {
        const r = ((await pitr()).restores as Array<Record<string, string | null>>).find((x) => x.id === restoreId);
        return r && r.status !== 'queued' && r.status !== 'running' ? r : null;
      });
      if (done.status !== 'succeeded') throw new Error(`restore ${restoreId} ${done.status}: ${done.error}`);
      const logs = (await call('GET', `/api/services/${id}/database/pitr/restores/${restoreId}/logs`)).json.logs as Array<{ line: string }>;
      const wal = Number(/(\d+) WAL files copied/.exec(logs.map((l) => l.line).join('\n'))?.[1] ?? Number.NaN);
      await call('DELETE', `/api/services/${res.json.restore.targetServiceId}`);
      return { ms: Date.parse(done.finishedAt!) - Date.parse(done.startedAt!), reachedAt: done.reachedAt ?? null, wal };
    };
    const rounds: Array<{ plain: Awaited<ReturnType<typeof restore>>; pitr: Awaited<ReturnType<typeof restore>> }> = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const plainFirst = round % 2 === 1;
      process.stdout.write(`round ${round}/${ROUNDS} (${plainFirst ? 'base backup first' : 'point in time first'})\n`);
      if (plainFirst) {
        const plain = await restore(window.earliest);
        rounds.push({ plain, pitr: await restore(window.latest) });
      } else {
        const later = await restore(window.latest);
        rounds.push({ plain: await restore(window.earliest), pitr: later });
      }
      const last = rounds.at(-1)!;
      process.stdout.write(
        `  base backup alone: ${fmt(last.plain.ms / 1000)} s (${last.plain.wal} WAL files); to ${window.latest}: ${fmt(last.pitr.ms / 1000)} s (${last.pitr.wal} WAL files, reached ${last.pitr.reachedAt})\n`,
      );
    }
    const ratios = rounds.map((r) => r.pitr.ms / r.plain.ms);
    const bound = INTERVAL_MS / 1000 + ARCHIVE_TIMEOUT_S;
    const lags = samples.map((s) => s.lag);
    const rpos = samples.map((s) => s.rpo).filter(Number.isFinite);
    process.stdout.write(
      `\n${table([
        ['t (s)', 'lag (s)', 'WAL waiting', 'recovery point (s behind)'],
        ...samples
          .filter((_, i) => i % Math.max(1, Math.round(samples.length / 20)) === 0)
          .map((s) => [fmt(s.t, 0), String(s.lag), String(s.pending), fmt(s.rpo, 1)]),
      ])}\n\n${table([
        ['measure', 'point-in-time', 'baseline', 'ratio', 'bound'],
        [
          `archive lag under ${fmt(achieved, 0)} rows/s of ~1 KiB for ${fmt(elapsed, 0)} s (max of 1 s samples, s; baseline: the bound)`,
          String(Math.max(0, ...lags)),
          fmt(bound, 0),
          `${fmt(Math.max(0, ...lags) / bound, 3)}x`,
          `<= 1x ${Math.max(0, ...lags) <= bound ? 'met' : 'NOT met'}`,
        ],
        [
          'recovery point under that load (max s behind now; baseline: the bound)',
          fmt(Math.max(0, ...rpos), 1),
          fmt(bound, 0),
          `${fmt(Math.max(0, ...rpos) / bound, 3)}x`,
          `<= 1x ${Math.max(0, ...rpos) <= bound ? 'met' : 'NOT met'}`,
        ],
        [
          `restore of a ${fmt(base.sizeBytes / 1048576, 0)} MiB base backup + ${archivedSegments} WAL files (${fmt(archivedBytes / 1048576, 0)} MiB stored) to the window's end vs the base backup alone (median of ${ROUNDS}, s)`,
          fmt(median(rounds.map((r) => r.pitr.ms)) / 1000),
          fmt(median(rounds.map((r) => r.plain.ms)) / 1000),
          `${fmt(median(ratios), 3)}x`,
          'informational',
        ],
      ])}\n`,
    );
    await call('DELETE', `/api/projects/${project.id}`);
  } finally {
    await server.dispose();
  }
}

await runBench(main, WATCHDOG_MS);
