import { appendFileSync, readFileSync } from 'node:fs';
import { ownPortRange } from '../test/helpers/docker.js';

/** The middle value; the mean of the two middle ones for an even count. */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** A markdown table, columns padded to their widest cell; the first row is the header. */
export function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  const line = (r: string[]) => `| ${r.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  const sep = `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`;
  return [line(rows[0]!), sep, ...rows.slice(1).map(line)].join('\n');
}

/** VmRSS of a process in MiB (NaN when it is not readable). */
export function rssMb(pid: number): number {
  const m = /^VmRSS:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : Number.NaN;
}

/** User plus system CPU time of a process so far, in seconds (/proc/<pid>/stat, in clock ticks of 1/100 s). */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may hold spaces) in parentheses: utime and stime are the 12th and 13th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** The same in ms. */
export function cpuMs(pid: number): number {
  return cpuSeconds(pid) * 1000;
}

/** One line of `npm run bench`'s table: a figure, the baseline measured in the same run, their ratio and the target. */
export interface BenchRow {
  measure: string;
  value: string;
  baseline: string;
  /** value / baseline (or baseline / value for times, so that higher is better); null when there is none. */
  ratio: number | null;
  target: string;
  /** Whether the target is met; null for figures given for information. */
  met: boolean | null;
}

/**
 * Hands a bench's rows to `npm run bench` (bench/all.ts), which names a file in BENCH_RESULTS: one JSON
 * line per bench. Run alone, a bench prints its own table and this does nothing.
 */
export function recordRows(part: string, rows: BenchRow[]): void {
  const file = process.env.BENCH_RESULTS;
  if (file) appendFileSync(file, `${JSON.stringify({ part, rows })}\n`);
}

/** The rows as the table every bench prints: measure | slipway | baseline | ratio | target | met. */
export function rowsTable(rows: BenchRow[], baselineName = 'baseline'): string {
  const fmtRatio = (r: number | null) => (r === null || !Number.isFinite(r) ? '-' : `${r.toFixed(2)}x`);
  const verdict = (m: boolean | null) => (m === null ? 'info' : m ? 'yes' : 'NO');
  return table([
    ['measure', 'slipway', baselineName, 'ratio', 'target', 'met'],
    ...rows.map((r) => [r.measure, r.value, r.baseline, fmtRatio(r.ratio), r.target, verdict(r.met)]),
  ]);
}

/** BENCH_SIZE=tiny: the size `npm test` runs each bench at, to prove it runs, not to measure. */
export const TINY = process.env.BENCH_SIZE === 'tiny';

/** The parts of `npm run bench` (bench/all.ts), each bench/<part>.ts. */
export const BENCH_PARTS = ['api', 'deploy', 'proxy', 'db-admin'] as const;
export type BenchPart = (typeof BENCH_PARTS)[number];

/**
 * A host port window for a part's server. Parts run side by side (bench/all.ts with BENCH_JOBS) each get a
 * slot (BENCH_PORT_SLOT) and pick only among its windows, so two parts of one run never share a window;
 * run alone, any window of the test installs' (ownPortRange).
 */
export function benchPortRange(size = 200): string {
  const slot = Number(process.env.BENCH_PORT_SLOT ?? Number.NaN);
  if (!Number.isInteger(slot) || slot < 0 || slot >= BENCH_PARTS.length) return ownPortRange(size);
  // Among the windows of the test worker that runs the bench (ownPortRange), those of this slot.
  return ownPortRange(size, slot, BENCH_PARTS.length);
}

/** A repository of a busybox httpd app serving `message` (the nonce unless given) on port 3000; the nonce makes each build new. */
export function busyboxApp(nonce: string, message = nonce): Record<string, string> {
  return {
    Dockerfile: [
      'FROM busybox:latest',
      `RUN echo ${nonce} > /nonce`,
      'COPY www/ /www/',
      'CMD ["httpd", "-f", "-p", "3000", "-h", "/www"]',
      '',
    ].join('\n'),
    'www/index.html': `${message}\n`,
  };
}

/**
 * Creates `bench (id bigint PRIMARY KEY, payload text)` through `sql` and fills it with `rows` rows of 992
 * characters in batches of 100,000: md5s of the id, little a compressor can do, so a dump or a base backup
 * is about as big as the table.
 */
export async function fillBenchTable(sql: (statement: string) => Promise<unknown>, rows: number): Promise<void> {
  await sql('CREATE TABLE bench (id bigint PRIMARY KEY, payload text NOT NULL)');
  const BATCH = 100_000;
  for (let from = 1; from <= rows; from += BATCH) {
    const to = Math.min(rows, from + BATCH - 1);
    await sql(
      `INSERT INTO bench SELECT g, (SELECT string_agg(md5(g::text || ':' || i), '') FROM generate_series(1, 31) i) FROM generate_series(${from}, ${to}) g`,
    );
  }
}
