/**
 * `npm run bench`: every part of issue 32's targets in one run, then ONE table of ratios against baselines
 * measured in the same run (each part measures its own baseline beside it, so the load of a shared machine
 * weighs on both). Each part still runs alone (`npm run bench:api`, `bench:deploy`, `bench:proxy`,
 * `bench:db-admin`) and prints its own detail; here they run one after the other, each in its own process,
 * and hand their rows over through a file (BENCH_RESULTS, see recordRows).
 *
 *   npm run bench                  every part
 *   npm run bench -- api db-admin  some parts
 *   BENCH_SIZE=tiny npm run bench  each part at a tiny size (what `npm test` runs: proof that it runs, no figures)
 *   BENCH_JOBS=2                   two parts at once, the longest first (for a tiny run only: parts side by side
 *                                  measure each other, so a measuring run keeps the default of one)
 *
 * Exits 1 when a part crashes (a crashing bench is a failing test); never because of a figure.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { type BenchRow, type BenchPart, BENCH_PARTS as PARTS, rowsTable } from './bench-support.js';

type Part = BenchPart;

/** The parts by how long each takes at any size, longest first (bench:deploy builds images four times). */
const LONGEST_FIRST: readonly Part[] = ['deploy', 'db-admin', 'proxy', 'api'];

const ROOT = path.resolve(import.meta.dirname, '..');

function runPart(part: Part, results: string): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bench', `${part}.ts`)], {
      cwd: ROOT,
      env: { ...process.env, BENCH_RESULTS: results, BENCH_PORT_SLOT: String(PARTS.indexOf(part)) },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    child.once('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1)));
  });
}

async function main(): Promise<number> {
  const asked = process.argv.slice(2);
  const unknown = asked.filter((a) => !(PARTS as readonly string[]).includes(a));
  if (unknown.length > 0) {
    process.stderr.write(`unknown bench part(s): ${unknown.join(', ')} (parts: ${PARTS.join(', ')})\n`);
    return 2;
  }
  const parts = asked.length > 0 ? (asked as Part[]) : [...PARTS];
  const dir = mkdtempSync(path.join(tmpdir(), 'slipway-bench-all-'));
  const results = path.join(dir, 'results.jsonl');
  const loads: string[] = [];
  const failed: string[] = [];
  const started = performance.now();
  const jobs = Math.max(1, Math.min(parts.length, Number(process.env.BENCH_JOBS ?? 1) || 1));
  // Longest first, so that with several jobs the others fill in beside it.
  const queue = jobs > 1 ? [...parts].sort((a, b) => LONGEST_FIRST.indexOf(a) - LONGEST_FIRST.indexOf(b)) : [...parts];
  try {
    await Promise.all(
      Array.from({ length: jobs }, async () => {
        for (let part = queue.shift(); part !== undefined; part = queue.shift()) {
          const load = loadavg()[0]!.toFixed(2);
          const began = performance.now();
          process.stderr.write(`\n== bench ${part}\n`);
          const code = await runPart(part, results);
          loads.push(`${part} ${load} (${((performance.now() - began) / 1000).toFixed(0)} s)`);
          if (code !== 0) failed.push(`${part} (exit ${code})`);
        }
      }),
    );
    let text = '';
    try {
      text = readFileSync(results, 'utf8');
    } catch {
      // no part recorded anything
    }
    const rows: BenchRow[] = [];
    const recorded = text
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { part: Part; rows: BenchRow[] })
      .sort((a, b) => PARTS.indexOf(a.part) - PARTS.indexOf(b.part));
    for (const { part, rows: partRows } of recorded) for (const row of partRows) rows.push({ ...row, measure: `${part}: ${row.measure}` });
    const met = rows.filter((r) => r.met === true).length;
    const targets = rows.filter((r) => r.met !== null).length;
    const out = [
      '',
      '== slipway benchmarks (issue 32): each figure against its baseline, measured in the same run',
      process.env.BENCH_SIZE === 'tiny' ? '(BENCH_SIZE=tiny: a proof that every part runs; the figures mean nothing)' : '',
      '',
      rows.length > 0 ? rowsTable(rows) : '(no rows)',
      '',
      `targets met: ${met} of ${targets}; ratio > 1 is better than the baseline for throughput, the baseline's share for times`,
      `machine: ${cpus().length} CPUs; load average (1 min) as each part began (and its time): ${loads.join(', ')}; now ${loadavg()[0]!.toFixed(2)}`,
      `total ${((performance.now() - started) / 1000).toFixed(0)} s`,
      ...(failed.length > 0 ? [`FAILED: ${failed.join(', ')}`] : []),
    ];
    process.stdout.write(`${out.filter((l, i) => l !== '' || out[i - 1] !== '').join('\n')}\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return failed.length > 0 ? 1 : 0;
}

process.exitCode = await main();
