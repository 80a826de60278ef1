import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** `docker` through argv, for checks from outside the platform. */
export async function docker(...args: string[]): Promise<string> {
  const { stdout } = await run('docker', args, { maxBuffer: 16 * 1024 * 1024 });
  return stdout.trim();
}

/** Names of the containers (running or not) carrying a label, e.g. `slipway.service=<id>`. */
export async function containersWithLabel(label: string, all = true): Promise<string[]> {
  const out = await docker('ps', ...(all ? ['-a'] : []), '--filter', `label=${label}`, '--format', '{{.Names}}');
  return out ? out.split('\n').sort() : [];
}

export async function imageTags(prefix: string): Promise<string[]> {
  const out = await docker('images', '--format', '{{.Repository}}:{{.Tag}}');
  return out.split('\n').filter((t) => t.startsWith(prefix));
}

/**
 * Provisions the engine and the stand-in images the deployment tests need; throws when it cannot.
 * Under `npm test` (SLIPWAY_TEST_PROVISIONED=1, set by test/run-all.sh once it has provisioned the engine
 * and every stand-in image) there is nothing left to do: images.sh, even when all is cached, takes seconds
 * per file and one file at a time (its lock), and some 30 files call this.
 */
export async function provisionDocker(options: { images?: string } = {}): Promise<void> {
  if (process.env.SLIPWAY_TEST_PROVISIONED === '1') return;
  await run('bash', ['test/provision/docker.sh'], { maxBuffer: 16 * 1024 * 1024 });
  const env = options.images ? { ...process.env, SLIPWAY_TEST_IMAGES: options.images } : process.env;
  await run('bash', ['test/provision/images.sh'], { maxBuffer: 64 * 1024 * 1024, timeout: 20 * 60_000, env });
}

export async function httpText(url: string, timeoutMs = 5000): Promise<{ status: number; text: string } | null> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    return { status: res.status, text: await res.text() };
  } catch {
    return null;
  }
}

/**
 * A host port range of its own for a test install, in 14000-19999: below the ephemeral ports, away
 * from the default 20000-29999 that every other install on this host allocates from (two installs
 * probing the same free port at once would both take it, and the second deployment fail with
 * EADDRINUSE), and away from quietPort's 10000-13999 (another test's Caddy took a port of a killed
 * platform's window before it restarted). A platform that never deploys (API tests) binds none of
 * its ports: a large window costs nobody.
 */
export function ownPortRange(size = 200, lane = 0, lanes = 1): string {
  // The files of one run that run at the same time are in different vitest workers: each worker owns one
  // contiguous region of 14000-19999, and every window it hands out lies inside it, whatever its size or lane,
  // so two files beside each other never share a port. (Windows numbered across the whole range and dealt
  // out by index did not: a bench part's lane of worker 2 was a window that worker 1's plain calls also got,
  // and bench:proxy failed with "host port ... is in use by another program".) `lane`/`lanes` split a worker's
  // windows further (bench parts side by side).
  const workers = Math.max(1, Number(process.env.SLIPWAY_TEST_WORKERS ?? '2') || 2);
  const pool = Number(process.env.VITEST_POOL_ID ?? Number.NaN);
  const worker = Number.isInteger(pool) && pool >= 1 ? (pool - 1) % workers : Math.floor(Math.random() * workers);
  const region = Math.floor(6_000 / workers);
  const regionBase = 14_000 + worker * region;
  const width = Math.min(size, region);
  const count = Math.floor(region / width);
  const windows = Array.from({ length: count }, (_, i) => i);
  // Too few windows for every lane: lanes share them (a bench run alone has one part at a time).
  const laneOwn = windows.filter((i) => i % lanes === lane % lanes);
  const mine = laneOwn.length > 0 ? laneOwn : windows;
  const base = regionBase + width * mine[Math.floor(Math.random() * mine.length)]!;
  return `${base}-${base + width - 1}`;
}
