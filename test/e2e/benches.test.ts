import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { BENCH_PARTS as PARTS } from '../../bench/bench-support.js';

/*
 * A bench that crashes is a failing test (issue 32): each part of `npm run bench` runs here once, at a
 * tiny size (BENCH_SIZE=tiny: a smoke run of every step, a few requests per load, no restart, no second
 * build to warm a cache), through bench/all.ts as `npm run bench -- <part>` runs it. Nothing here looks at
 * a figure: the benches measure, tests never assert timings. The parts run one after another: four servers
 * starting at once on a loaded 2-core machine outlasted the start helper's 30 s.
 */
const ROOT = path.resolve(import.meta.dirname, '../..');
const run = promisify(execFile);

describe('npm run bench, each part at a tiny size', () => {
  for (const part of PARTS) {
    it(`${part} runs to its end and hands its rows to the table`, { timeout: 600_000 }, async () => {
      const { stdout } = await run(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bench', 'all.ts'), part], {
        cwd: ROOT,
        env: { ...process.env, BENCH_SIZE: 'tiny' },
        maxBuffer: 64 * 1024 * 1024,
        timeout: 590_000,
      }).catch((error: { stdout?: string; stderr?: string; message: string }) => {
        throw new Error(`bench ${part} failed: ${error.message}\n${error.stdout ?? ''}\n${error.stderr ?? ''}`.slice(-8000));
      });
      expect(stdout).toContain('== slipway benchmarks (issue 32)');
      expect(stdout).not.toContain('FAILED:');
      expect(stdout).toMatch(new RegExp(`\\| ${part}: `));
    });
  }
});
