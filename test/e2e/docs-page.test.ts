import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type IsolatedChromium, isolatedChromium } from '../helpers/isolated-chromium.js';
import { startServerProcess, type ServerProcess } from '../helpers/server-process.js';

/**
 * /api/docs in a real browser: Debian's headless Chromium (test/provision/chromium.sh) loads the page
 * with no network but the server's, and every documented path of /api/openapi.json is on the rendered page.
 */
const ROOT = path.resolve(import.meta.dirname, '../..');
const run = promisify(execFile);
let server: ServerProcess;
let chromium = '';
let profile = '';
let browser: IsolatedChromium | undefined;

beforeAll(async () => {
  chromium = (await run('bash', ['test/provision/chromium.sh'], { cwd: ROOT, timeout: 10 * 60_000 })).stdout.trim();
  profile = mkdtempSync(path.join(tmpdir(), 'slipway-chromium-'));
  server = await startServerProcess();
  // Its own network namespace: Docker's interface changes (other files' containers) fail a browser's pending requests (isolatedChromium).
  browser = await isolatedChromium(chromium, [Number(new URL(server.url).port)]);
}, 11 * 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.dispose();
  if (profile) rmSync(profile, { recursive: true, force: true });
});

/** The DOM once the page has rendered (Chromium's virtual time lets scripts and layout finish first). */
async function renderedDom(url: string): Promise<string> {
  const { stdout } = await run(
    browser!.executablePath,
    [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage',
      `--user-data-dir=${profile}`,
      '--virtual-time-budget=5000',
      '--dump-dom',
      url,
    ],
    { timeout: 60_000, maxBuffer: 32 * 1024 * 1024 },
  );
  return stdout;
}

describe('the reference page in a browser', () => {
  it('renders every operation of the OpenAPI document', async () => {
    const doc = (await (await fetch(`${server.url}/api/openapi.json`, { signal: AbortSignal.timeout(10_000) })).json()) as {
      paths: Record<string, Record<string, unknown>>;
    };
    const operations = Object.entries(doc.paths).flatMap(([p, item]) =>
      Object.keys(item)
        .filter((m) => ['get', 'post', 'put', 'patch', 'delete'].includes(m))
        .map((m) => ({ method: m.toUpperCase(), path: p })),
    );
    expect(operations.length).toBeGreaterThan(30);

    const dom = await renderedDom(`${server.url}/api/docs`);
    expect(dom).toContain('<h1>Slipway Platform API');
    // Each operation is a table row: its method, then its path.
    const rows = [...dom.matchAll(/<tr><td><code class="m \w+">(\w+)<\/code><\/td><td><code>([^<]+)<\/code><\/td>/g)].map(
      (m) => `${m[1]} ${m[2]!.replace(/&amp;/g, '&')}`,
    );
    const missing = operations.map((o) => `${o.method} ${o.path}`).filter((o) => !rows.includes(o));
    expect(missing).toEqual([]);
    expect(rows).toHaveLength(operations.length);
  }, 120_000);
});
