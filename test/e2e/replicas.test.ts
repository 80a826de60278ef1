import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { api, removeInstanceLeftovers, startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { docker, ownPortRange, provisionDocker } from '../helpers/docker.js';
import { deploy } from '../helpers/deployments.js';
import { requestVia, startCaddy, waitUntilServed, type CaddyProcess } from '../helpers/caddy.js';
import { Load } from '../helpers/load.js';
import { NODE_SERVER } from '../helpers/replica-server.js';

/**
 * Several replicas of one service on one server (issue 31), through a real Caddy and the real engine:
 * requests reach every replica; a redeploy under load, a replica killed under load, and scaling down
 * to 1 and to 0 drop no request. One platform, one Node service with 3 replicas. Names carry a random
 * suffix and ports are the file's own, so it runs beside other files.
 */
let caddy: CaddyProcess;
let server: ServerProcess;
let call: ReturnType<typeof api>;
let projectId: string;
let serviceId: string;
const hostname = `web-${randomBytes(4).toString('hex')}.replicas.test`;

/** Stops the load and says what it saw, with Caddy's errors when a request failed. */
async function stopLoad(load: Load, label: string): Promise<void> {
  await load.stop();
  console.log(`replicas: ${label}: ${load.total} requests, ${load.failures.length} failed`, load.failures.slice(0, 10));
  if (load.failures.length > 0)
    console.log(
      caddy
        .output()
        .split('\n')
        .filter((l) => /"level":"error"|502/.test(l))
        .slice(-6)
        .join('\n'),
    );
}

/** The service's running containers: name -> short id (what os.hostname() answers inside). */
async function running(): Promise<Map<string, string>> {
  const out = await docker('ps', '--filter', `label=slipway.service=${serviceId}`, '--format', '{{.Names}} {{.ID}}');
  return new Map(
    out
      .split('\n')
      .filter(Boolean)
      .map((line) => line.split(' ') as [string, string]),
  );
}

async function untilRunning(count: number, timeoutMs: number, ready?: (names: string[]) => boolean): Promise<Map<string, string>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const now = await running();
    if (now.size === count && (!ready || ready([...now.keys()]))) return now;
    if (Date.now() > deadline) throw new Error(`expected ${count} running replicas within ${timeoutMs} ms; have ${[...now.keys()]}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Distinct replicas answering through the proxy over `n` requests on new connections. */
async function hostsOver(n: number): Promise<Set<string>> {
  const hosts = new Set<string>();
  for (let i = 0; i < n; i++) {
    const answer = await requestVia(caddy.httpPort, hostname);
    const match = answer ? /^version \d+ (\S+)/.exec(answer.text.trim()) : null;
    if (match) hosts.add(match[1]!);
  }
  return hosts;
}

beforeAll(async () => {
  await provisionDocker();
  caddy = await startCaddy();
  server = await startServerProcess({
    ...caddy.platformEnv,
    BUILD_CONCURRENCY: '1',
    STOP_GRACE_SECONDS: '1',
    HEALTH_TIMEOUT_MS: '20000',
    HOST_PORT_RANGE: ownPortRange(),
  });
  call = api(server.url, server.token);
  projectId = (await call('POST', '/api/projects', { name: `replicas-${randomBytes(3).toString('hex')}` })).json.project.id;
  const created = await call('POST', `/api/projects/${projectId}/services`, {
    name: 'web',
    repoUrl: 'container-image',
    containerImage: 'node:22-bookworm-slim',
    startCommand: `exec node -e '${NODE_SERVER}'`,
    internalPort: 3000,
    replicas: 3,
    env: [{ key: 'VERSION', value: '1' }],
  });
  expect(created.status, created.text).toBe(201);
  serviceId = created.json.service.id;
  expect(created.json.service.replicas).toBe(3);
}, 10 * 60_000);

afterAll(async () => {
  if (call && projectId) await call('DELETE', `/api/projects/${projectId}`).catch(() => {});
  await server?.dispose();
  if (server) {
    rmSync(server.dataDir, { recursive: true, force: true });
    await removeInstanceLeftovers(server.output());
  }
  await caddy?.stop();
});

it('runs 3 replicas, named by index, and requests through the proxy reach all three', async () => {
  const first = await deploy(call, serviceId, 60_000);
  expect(first.deployment.status, first.logs.join('\n')).toBe('succeeded');
  const name = first.deployment.containerName!;
  const domain = await call('POST', `/api/services/${serviceId}/domains`, { hostname });
  expect(domain.status, domain.text).toBe(201);
  await waitUntilServed(caddy.httpPort, hostname, { status: 200, text: /^version 1 / });
  const replicas = await running();
  expect([...replicas.keys()].sort()).toEqual([name, `${name}-r1`, `${name}-r2`]);
  expect(name.startsWith('slipway-')).toBe(true);
  expect([...(await hostsOver(30))].sort()).toEqual([...replicas.values()].sort());
}, 90_000);

it('redeploys under load, one replica at a time, with no failed request', async () => {
  const set = await call('POST', `/api/services/${serviceId}/env`, { key: 'VERSION', value: '2' });
  expect(set.status, set.text).toBeLessThan(300);
  const load = new Load(caddy.httpPort, hostname, 6);
  load.start();
  let result!: Awaited<ReturnType<typeof deploy>>;
  try {
    result = await deploy(call, serviceId, 90_000);
    await new Promise((r) => setTimeout(r, 300));
  } finally {
    await stopLoad(load, 'a redeploy of 3 replicas');
  }
  expect(result.deployment.status, result.logs.join('\n')).toBe('succeeded');
  expect(result.logs.some((l) => l.startsWith('Routes switched to 3 replicas'))).toBe(true);
  expect(load.failures).toEqual([]);
  expect(load.total).toBeGreaterThan(50);
  const name = result.deployment.containerName!;
  expect([...(await running()).keys()].sort()).toEqual([name, `${name}-r1`, `${name}-r2`]);
  expect((await requestVia(caddy.httpPort, hostname))?.text).toMatch(/^version 2 /);
}, 120_000);

it('a killed replica costs no GET and no POST but those dialed to it as it died (a 502, see docs/cluster.md), and comes back', async () => {
  const before = await running();
  const victim = [...before.keys()].find((n) => n.endsWith('-r1'))!;
  const load = new Load(caddy.httpPort, hostname, 6);
  load.start();
  try {
    await new Promise((r) => setTimeout(r, 300));
    await docker('kill', victim);
    // Back (started again by Docker or replaced by the platform's pass) and serving.
    await untilRunning(3, 30_000, (names) => names.includes(victim));
    await waitUntilServed(caddy.httpPort, hostname, { status: 200, text: /^version 2 / });
    await new Promise((r) => setTimeout(r, 500));
  } finally {
    await stopLoad(load, 'one replica killed');
  }
  expect(load.failures.filter((f) => !f.startsWith('POST'))).toEqual([]);
  // Known limit (docs/cluster.md): Caddy 2.6.2 retries a request whose dial failed on the next replica, but
  // sends a POST's retry with its body already closed, so a POST dialed to the replica in the moment
  // between its death and Docker's `die` event (which takes it out of the routes) is answered 502: never
  // sent twice, never with another request's body.
  expect(load.failures.every((f) => f === 'POST: 502 ')).toBe(true);
  console.log(`replicas: POSTs answered 502 after the kill: ${load.failures.length} of ${load.total} requests`);
}, 60_000);

it('scales to 1 and to 0 without a redeploy: no failed request while scaling down, then stopped and kept', async () => {
  const load = new Load(caddy.httpPort, hostname, 6);
  load.start();
  try {
    const one = await call('PATCH', `/api/services/${serviceId}`, { replicas: 1 });
    expect(one.status, one.text).toBe(200);
    await untilRunning(1, 30_000);
    await new Promise((r) => setTimeout(r, 300));
  } finally {
    await stopLoad(load, 'scaled from 3 to 1');
  }
  expect(load.failures).toEqual([]);
  expect(await hostsOver(5)).toHaveProperty('size', 1);

  const zero = await call('PATCH', `/api/services/${serviceId}`, { replicas: 0 });
  expect(zero.status, zero.text).toBe(200);
  expect(zero.json.service).toMatchObject({ replicas: 0, status: 'stopped' });
  await untilRunning(0, 30_000);
  await waitUntilServed(caddy.httpPort, hostname, { status: 503 });
  const refused = await call('POST', `/api/services/${serviceId}/deployments`);
  expect(refused.status, refused.text).toBe(409);
}, 90_000);
