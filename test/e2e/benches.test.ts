import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { BENCH_PARTS as PARTS } from '../../bench/bench-support.js';

/*
 * A bench that crashes is a failing test (issue 32): `npm run bench` runs here once, every part at a
 * tiny size (BENCH_SIZE=tiny: a smoke run of every step, a few requests per load, no warm-up, no restart,
 * no second build to warm a cache), two parts at once (BENCH_JOBS=2, the longest first: three at once outlasted the start helper's 30 s at load 17, one run in three), through
 * bench/all.ts as `npm run bench` runs it. Each part then has its own test: it ended, and its rows are in
 * the one table. Nothing here looks at a figure: the benches measure, tests never assert timings.
 * Side by side with other files: each part's servers take ports from a random window of their own
 * (ownPortRange) or port 0, and names with a random suffix.
 */
const ROOT = path.resolve(import.meta.dirname, '../..');
const run = promisify(execFile);

describe('npm run bench, every part at a tiny size', () => {
  let stdout = '';
  let failure = '';

  beforeAll(async () => {
    const result = await run(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bench', 'all.ts')], {
      cwd: ROOT,
      env: { ...process.env, BENCH_SIZE: 'tiny', BENCH_JOBS: '2' },
      maxBuffer: 64 * 1024 * 1024,
      timeout: 590_000,
    }).catch((error: { stdout?: string; stderr?: string; message: string }) => {
      failure = `npm run bench failed: ${error.message}\n${error.stderr ?? ''}`.slice(-8000);
      return { stdout: error.stdout ?? '' };
    });
    stdout = result.stdout;
    // The one table in the test's log: which parts ran, with the load and each part's time beside them.
    console.log(stdout.slice(stdout.indexOf('== slipway benchmarks')));
  }, 600_000);

  it('prints the one table', () => {
    expect(stdout, failure).toContain('== slipway benchmarks (issue 32)');
  });

  for (const part of PARTS) {
    it(`${part} runs to its end and hands its rows to the table`, () => {
      expect(stdout, failure).not.toMatch(new RegExp(`FAILED:.*\\b${part} \\(exit`));
      expect(stdout, failure).toMatch(new RegExp(`\\| ${part}: `));
    });
  }
});
