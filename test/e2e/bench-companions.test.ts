import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { BENCH_PARTS } from '../../bench/bench-support.js';

/*
 * The benches that are not parts of `npm run bench`'s one table (bench/all.ts runs api, deploy, proxy and
 * db-admin; test/e2e/benches.test.ts runs those): each is run once here, as `npm run bench:<name>` runs it,
 * with its own knobs turned down to a smoke size. A bench that crashes is a failing test; nothing here
 * looks at a figure. Two at a time: each takes its ports from a window of its lane (benchPortRange) or port 0,
 * and names with a random suffix.
 */
const ROOT = path.resolve(import.meta.dirname, '../..');
const run = promisify(execFile);

/** Each companion bench with the knobs that make it small (see the header of each file). */
const COMPANIONS: Record<string, Record<string, string>> = {
  events: { BENCH_EVENTS: '50', BENCH_ROUNDS: '1', BENCH_SMALL: '1' },
  signin: { BENCH_CHECKS: '5', BENCH_ROUNDS: '1', BENCH_SIGNINS: '5' },
  'route-pool': { BENCH_DURATION_S: '1', BENCH_HOSTNAMES: '5', BENCH_ROUNDS: '1' },
  metrics: { BENCH_CONTAINERS: '2', BENCH_WINDOW_S: '2', BENCH_WARMUP_S: '1' },
  'push-to-deploy': { BENCH_FETCHES: '2', BENCH_QUEUED: '2', BENCH_ROUNDS: '1' },
  dashboard: { BENCH_LOG_LINES: '1000', BENCH_ROUNDS: '1' },
  backup: { BENCH_GB: '0.002', BENCH_ROUNDS: '1' },
  restart: { BENCH_SERVICES: '3' },
  pitr: { BENCH_MB: '2', BENCH_WRITE_SECONDS: '3', BENCH_ROUNDS: '1', BENCH_PITR_INTERVAL_MS: '1000' },
  soak: { BENCH_SOAK_MINUTES: '0.1', BENCH_SSE_CLIENTS: '2', BENCH_READS: '4' },
  cluster: { BENCH_SIZE: 'tiny' },
};

const results = new Map<string, Promise<{ ok: boolean; output: string }>>();
/** Every bench's run, queued two at a time in the order above; each test awaits its own. */
function start(): void {
  // Each of the two running at a time holds a lane (BENCH_PORT_SLOT): its host port window is never the other's.
  const lanes = [0, 1];
  const waiting: Array<(lane: number) => void> = [];
  const slot = async (): Promise<number> => {
    const lane = lanes.shift();
    if (lane !== undefined) return lane;
    return new Promise<number>((resolve) => waiting.push(resolve));
  };
  const free = (lane: number) => {
    const next = waiting.shift();
    if (next) next(lane);
    else lanes.push(lane);
  };
  for (const [name, knobs] of Object.entries(COMPANIONS)) {
    results.set(
      name,
      slot().then((lane) =>
        run(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bench', `${name}.ts`)], {
          cwd: ROOT,
          env: { ...process.env, ...knobs, BENCH_PORT_SLOT: String(lane) },
          maxBuffer: 32 * 1024 * 1024,
          timeout: 8 * 60_000,
        })
          .then(
            ({ stdout, stderr }) => ({ ok: true, output: `${stdout}\n${stderr}` }),
            (error: { stdout?: string; stderr?: string; message: string }) => ({
              ok: false,
              output: `${error.message}\n${error.stdout ?? ''}\n${error.stderr ?? ''}`.slice(-8000),
            }),
          )
          .finally(() => free(lane)),
      ),
    );
  }
}

describe('the benches outside the one table, each at a smoke size', () => {
  it('names every bench file: the table parts, these, and the helpers', async () => {
    const { readdirSync } = await import('node:fs');
    const benches = readdirSync(path.join(ROOT, 'bench'))
      .filter((f) => f.endsWith('.ts'))
      .map((f) => f.slice(0, -3));
    const helpers = ['all', 'autocannon', 'bench-support', 'run-bench'];
    const covered = new Set([...BENCH_PARTS, ...Object.keys(COMPANIONS), ...helpers]);
    // swarm-runtime measures a Swarm service's start on the host engine's own swarm: it needs a swarm this
    // suite never makes on the host engine (the test cluster is namespaced engines), so it is named here only.
    expect(benches.filter((b) => !covered.has(b) && b !== 'swarm-runtime')).toEqual([]);
    start();
  });

  for (const name of Object.keys(COMPANIONS)) {
    it(`bench:${name} runs to its end`, { timeout: 10 * 60_000 }, async () => {
      const result = await results.get(name)!;
      expect(result.ok, result.output).toBe(true);
      // It printed a table of figures (a header row and its rule).
      expect(result.output, result.output).toMatch(/^(\|.*\|\s*\n\|[-|]+\||.+\n-+ +-+)/m);
    });
  }
});
