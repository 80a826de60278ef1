/**
 * What the shared authentication limits cost a sign-in: `npm run bench:signin`.
 *
 * The per-address budget of the authentication endpoints, the failed-authentication count and the
 * per-account backoff live in the database (so every platform process sees them). In one run, on
 * SQLite (a file, as `npm start` keeps it) and on PostgreSQL (the tests' server, a scratch database),
 * this measures, one call at a time:
 *  - a successful sign-in (`AccountService.signin`: argon2id verification, the session row, and the
 *    backoff check it makes), the baseline;
 *  - the limit work of a successful sign-in: the address's budget (one upsert, one sum) and the
 *    account's backoff check (one read), each on an address of its own so that none is refused;
 *  - the limit work of a failed one: the same plus the backoff's count (one upsert).
 * The table gives milliseconds per call (median of rounds) and the limit work as a share of the
 * sign-in. Informational: exits 0 unless it crashes.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createRateLimiter } from '../adapters/http/rate-limiter.js';
import { SigninBackoff } from '../src/accounts/signin-backoff.js';
import { createHarness } from '../test/helpers/harness.js';
import { createScratchDatabase } from '../test/helpers/postgres.js';
import { median, table } from './bench-support.js';
import { runBench } from './run-bench.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const SIGNINS = Number(process.env.BENCH_SIGNINS ?? 20);
const CHECKS = Number(process.env.BENCH_CHECKS ?? 200);

let ipSeq = 0;
const nextIp = () => {
  ipSeq++;
  return `10.${(ipSeq >> 16) & 255}.${(ipSeq >> 8) & 255}.${ipSeq & 255}`;
};

async function perCall(count: number, call: (i: number) => Promise<unknown>): Promise<number> {
  const started = process.hrtime.bigint();
  for (let i = 0; i < count; i++) await call(i);
  return Number(process.hrtime.bigint() - started) / 1e6 / count;
}

async function measure(target: { databaseUrl?: string; dataDir?: string }): Promise<{ signin: number; success: number; failure: number }> {
  const h = await createHarness(target);
  try {
    const owner = { email: 'owner@bench.test', password: 'owner password long', name: 'Owner' };
    await h.services.accounts.signup(owner);
    const store = () => h.database.store.authLimits;
    const limiter = createRateLimiter({ requestsPerMinute: 0, authFailuresPerMinute: 1_000_000, store });
    const backoff = new SigninBackoff(store, Date.now);
    const rounds = { signin: [] as number[], success: [] as number[], failure: [] as number[] };
    // One warm-up round, not counted.
    for (let round = 0; round <= ROUNDS; round++) {
      const signin = await perCall(SIGNINS, () => h.services.accounts.signin({ email: owner.email, password: owner.password }));
      const success = await perCall(CHECKS, async () => {
        await limiter.assertAuthAttempt('signin', nextIp());
        await backoff.assertAllowed(owner.email);
      });
      const failure = await perCall(CHECKS, async (i) => {
        const email = `nobody${round}-${i}@bench.test`;
        await limiter.assertAuthAttempt('signin', nextIp());
        await backoff.assertAllowed(email);
        await backoff.failed(email);
      });
      if (round === 0) continue;
      rounds.signin.push(signin);
      rounds.success.push(success);
      rounds.failure.push(failure);
    }
    return { signin: median(rounds.signin), success: median(rounds.success), failure: median(rounds.failure) };
  } finally {
    await h.close();
  }
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(tmpdir(), 'slipway-bench-signin-'));
  const scratch = await createScratchDatabase();
  const rows = [['database', 'sign-in (ms)', 'limits, successful (ms)', 'share', 'limits, failed (ms)', 'share']];
  try {
    for (const [name, target] of [
      ['SQLite (file)', { dataDir: dir }],
      ['PostgreSQL', { databaseUrl: scratch.url }],
    ] as const) {
      const { signin, success, failure } = await measure(target);
      rows.push([
        name,
        signin.toFixed(2),
        success.toFixed(3),
        `${((success / signin) * 100).toFixed(1)}%`,
        failure.toFixed(3),
        `${((failure / signin) * 100).toFixed(1)}%`,
      ]);
    }
  } finally {
    await scratch.drop();
    rmSync(dir, { recursive: true, force: true });
  }
  process.stdout.write(
    `Shared authentication limits per sign-in (${ROUNDS} rounds of ${SIGNINS} sign-ins and ${CHECKS} limit checks, medians)\n${table(rows)}\n`,
  );
}

await runBench(main, 300_000);
