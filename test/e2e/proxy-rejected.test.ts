import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { api, startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { provisionDocker } from '../helpers/docker.js';
import { deploy } from '../helpers/deployments.js';
import { adminGet, requestVia, startCaddy, waitUntilServed, type CaddyProcess, quietPort } from '../helpers/caddy.js';

/**
 * A configuration Caddy refuses (here: its new HTTP port is taken by another process) leaves the last
 * good one serving; the platform says so, keeps the change, and loads it once Caddy can take it.
 */
const run = promisify(execFile);
const env = { BUILD_CONCURRENCY: '2', STOP_GRACE_SECONDS: '1' };

let caddy: CaddyProcess;
const servers: ServerProcess[] = [];
let blocker: Server | null = null;
let live: ReturnType<typeof api> | null = null;
let projectId: string | null = null;

beforeAll(async () => {
  // Both throw when Docker or caddy cannot be had: this test never skips.
  await provisionDocker();
  await run('bash', ['test/provision/caddy.sh']);
  caddy = await startCaddy();
}, 20 * 60_000);

afterAll(async () => {
  try {
    if (live && projectId) await live('DELETE', `/api/projects/${projectId}`).catch(() => undefined);
  } finally {
    if (blocker?.listening) await new Promise((resolve) => blocker!.close(resolve));
    // The restarted server shares the first one's data directory: the first one removes it, last.
    for (const server of servers.reverse()) await server.dispose();
    await caddy?.stop();
  }
}, 60_000);

/** Listens on all interfaces, as a web server that got there first would. */
function occupy(port: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer((socket) => socket.destroy());
    server.once('error', reject);
    server.listen(port, '0.0.0.0', () => resolve(server));
  });
}

async function waitForOutput(server: ServerProcess, pattern: RegExp, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!pattern.test(server.output())) {
    if (Date.now() > deadline) throw new Error(`no output matching ${pattern} within ${timeoutMs} ms:\n${server.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** What the running Caddy serves on, read from its admin API. */
async function caddyListen(): Promise<unknown> {
  const res = await adminGet(caddy.adminUrl, '/config/apps/http/servers/slipway/listen');
  expect(res.status).toBe(200);
  return res.body;
}

it('keeps the last good configuration when Caddy rejects one, and loads the table once it can, with no API call', async () => {
  const oldPort = await quietPort();

  // Platform A: one service with one domain, served on the first port.
  const first = await startServerProcess({ ...caddy.platformEnv, ...env, PROXY_HTTP_PORT: String(oldPort) });
  servers.push(first);
  live = api(first.url, first.token);
  projectId = (await live('POST', '/api/projects', { name: `rejected-${Date.now()}` })).json.project.id;
  const created = await live('POST', `/api/projects/${projectId}/services`, {
    name: 'web',
    repoUrl: 'container-image',
    containerImage: 'busybox:latest',
    internalPort: 3000,
    startCommand: 'mkdir -p /www && echo kept-serving > /www/index.html && exec httpd -f -p 3000 -h /www',
  });
  expect(created.status, created.text).toBe(201);
  const serviceId: string = created.json.service.id;
  const result = await deploy(live, serviceId, 60_000);
  expect(result.deployment.status, result.logs.join('\n')).toBe('succeeded');
  const good = await live('POST', `/api/services/${serviceId}/domains`, { hostname: 'first.example.test' });
  expect(good.status, good.text).toBe(201);
  expect(good.json.proxy.ok, good.json.proxy.detail).toBe(true);
  const served = await requestVia(oldPort, 'first.example.test');
  expect(served?.status).toBe(200);
  expect(served?.text.trim()).toBe('kept-serving');

  // A stops (Caddy and the container keep running); someone else takes the port B is configured for.
  expect(await first.stop()).toBe(0);
  live = null;
  const newPort = await quietPort();
  blocker = await occupy(newPort);

  const second = await startServerProcess(
    { ...caddy.platformEnv, ...env, PROXY_HTTP_PORT: String(newPort) },
    { dataDir: first.dataDir, token: first.token },
  );
  servers.push(second);
  live = api(second.url, second.token);
  // B's reconcile loop has tried its table (so the runner knows the containers) and Caddy refused it.
  await waitForOutput(second, /"msg":"routes not loaded".*address already in use/, 15_000);

  // The change is saved; the proxy part says Caddy rejected it and why.
  const rejected = await live('POST', `/api/services/${serviceId}/domains`, { hostname: 'second.example.test' });
  expect(rejected.status, rejected.text).toBe(201);
  expect(rejected.json.ok).toBe(true);
  expect(rejected.json.domain.hostname).toBe('second.example.test');
  expect(rejected.json.proxy.ok).toBe(false);
  expect(rejected.json.proxy.detail).toMatch(/^Caddy rejected the configuration, and keeps serving the previous one: /);
  expect(rejected.json.proxy.detail).toMatch(/rejected/);
  expect(rejected.json.proxy.detail).toMatch(/address already in use/);
  const view = (await live('GET', `/api/services/${serviceId}/overview`)).json;
  expect(view.domains.map((d: { hostname: string }) => d.hostname).sort()).toEqual(['first.example.test', 'second.example.test']);

  // Caddy kept the last good configuration: the old port, the old table (the new domain is not in it).
  expect(await caddyListen()).toEqual([`:${oldPort}`]);
  const stillServed = await requestVia(oldPort, 'first.example.test');
  expect(stillServed?.status).toBe(200);
  expect(stillServed?.text.trim()).toBe('kept-serving');
  expect((await requestVia(oldPort, 'second.example.test'))?.status).toBe(404);
  // ...also after the loop's next refused attempts (every 2 s).
  await new Promise((resolve) => setTimeout(resolve, 2_500));
  expect((await requestVia(oldPort, 'first.example.test'))?.text.trim()).toBe('kept-serving');
  expect(await requestVia(newPort, 'first.example.test', '/', 1_000)).toBeNull();

  // The port comes free: the reconcile loop loads the whole table on it by itself.
  await new Promise((resolve) => blocker!.close(resolve));
  const [a, b] = await Promise.all([
    waitUntilServed(newPort, 'first.example.test', { status: 200, text: /kept-serving/ }, 15_000),
    waitUntilServed(newPort, 'second.example.test', { status: 200, text: /kept-serving/ }, 15_000),
  ]);
  expect(a.afterMs).toBeLessThan(10_000);
  expect(b.afterMs).toBeLessThan(10_000);
  expect(await caddyListen()).toEqual([`:${newPort}`]);
  expect((await requestVia(newPort, 'unknown.example.test'))?.status).toBe(404);
  await waitForOutput(second, /"msg":"routes loaded: the routing table changed"/, 5_000);
}, 60_000);
