import { Agent, request } from 'node:http';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, removeInstanceLeftovers, startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { containersWithLabel, docker, ownPortRange, provisionDocker } from '../helpers/docker.js';
import { deploy, waitForDeployment, waitForLogLine } from '../helpers/deployments.js';
import { adminGet, requestVia, startCaddy, waitUntilServed, type CaddyProcess } from '../helpers/caddy.js';

/**
 * Zero-downtime redeploys through a real Caddy: a keep-alive load runs against the domain while the
 * service is redeployed, and not one request may fail, whether the new container takes over or
 * never becomes healthy.
 *
 * A failure is an answer other than 200 `version N`, or a network error of any kind: a reset on a
 * new connection, and a reset of a reused keep-alive connection too (a POST that gets one is lost;
 * clients resend only idempotent requests). Nothing is sent twice. Caddy's routes are files: a domain
 * change, a new service, and a cutover (to the new container's traffic slot, or to its address when
 * there are no slots) change files in Caddy's routes directory, and none reloads Caddy (which would
 * rebind its listener and close its idle client connections, whatever their hostname).
 */
let caddy: CaddyProcess;
let server: ServerProcess;
let serverEnv: Record<string, string>;
let call: ReturnType<typeof api>;
let projectId: string;
let service: { id: string; hostPort: number };
let liveContainer: string;
const hostname = `web-${randomBytes(4).toString('hex')}.zero-downtime.test`;
// Generous: a node container took more than 6 s to answer on this shared 2-core machine under load (average 22).
const HEALTH_TIMEOUT_MS = 20_000;

/**
 * A keep-alive HTTP server on $PORT (Node from the node stand-in image) answering `version $VERSION`;
 * it closes gracefully on SIGTERM. Single quotes for sh: node reads VERSION from its environment.
 */
const NODE_SERVER = [
  'const http = require("http");',
  'const server = http.createServer((req, res) => { res.setHeader("content-type", "text/plain"); res.end("version " + process.env.VERSION + "\\n"); });',
  'server.listen(Number(process.env.PORT));',
  'process.on("SIGTERM", () => server.close(() => process.exit(0)));',
].join(' ');
const START_COMMAND = `exec node -e '${NODE_SERVER}'`;

interface Failure {
  at: number;
  loop: number;
  detail: string;
}

/**
 * `loops` clients, each sending one request after the other on keep-alive connections to Caddy's
 * HTTP port with the domain as Host, recording every answer that is not a 200 and every network error.
 */
class LoadGenerator {
  total = 0;
  readonly failures: Failure[] = [];
  /** Moments worth seeing next to failures (when the routes were switched), printed with them. */
  readonly marks: Array<{ at: number; label: string }> = [];
  /** Per loop: the versions answered, in order. */
  readonly versions: number[][];
  private running = false;
  private loopsDone: Promise<void>[] = [];
  private readonly agent: Agent;
  private startedAt = 0;
  private stoppedAt = 0;

  constructor(
    private readonly port: number,
    private readonly host: string,
    private readonly loops = 16,
    /** `new`: every request on a connection of its own (`Connection: close`), as clients without keep-alive do. */
    private readonly connections: 'keep-alive' | 'new' = 'keep-alive',
  ) {
    this.agent = new Agent({ keepAlive: connections === 'keep-alive', maxSockets: loops });
    this.versions = Array.from({ length: loops }, () => []);
  }

  start(): void {
    this.running = true;
    this.startedAt = performance.now();
    this.loopsDone = Array.from({ length: this.loops }, (_, i) => this.loop(i));
  }

  /** Stops the loops once their requests in flight are answered, and prints the figures. */
  async stop(label: string): Promise<void> {
    this.running = false;
    await Promise.all(this.loopsDone);
    this.stoppedAt = performance.now();
    this.agent.destroy();
    const seconds = (this.stoppedAt - this.startedAt) / 1000;
    console.log(
      `zero-downtime: ${label}: ${this.total} requests in ${seconds.toFixed(1)} s (${(this.total / seconds).toFixed(0)} req/s, ` +
        `${this.loops} ${this.connections === 'keep-alive' ? 'keep-alive clients' : 'clients with a new connection per request'}), ${this.failures.length} failed`,
    );
    const nearest = (at: number) => {
      const mark = [...this.marks].sort((a, b) => Math.abs(a.at - at) - Math.abs(b.at - at))[0];
      return mark ? ` (${at - mark.at >= 0 ? '+' : ''}${at - mark.at} ms from ${mark.label})` : '';
    };
    if (this.failures.length > 0)
      console.log(
        'failed:',
        this.failures.slice(0, 20).map((f) => `${new Date(f.at).toISOString()} loop ${f.loop}: ${f.detail}${nearest(f.at)}`),
      );
  }

  /** The version each loop saw last, and whether any loop went back to an older one after a newer. */
  summary(): { seen: number[]; wentBack: string[] } {
    const seen = new Set<number>();
    const wentBack: string[] = [];
    this.versions.forEach((list, loop) => {
      for (let i = 0; i < list.length; i++) {
        seen.add(list[i]!);
        if (i > 0 && list[i]! < list[i - 1]!) wentBack.push(`loop ${loop}: ${list[i - 1]} then ${list[i]}`);
      }
    });
    return { seen: [...seen].sort((a, b) => a - b), wentBack };
  }

  private async loop(index: number): Promise<void> {
    while (this.running) {
      // Half the clients POST: a POST that meets a reset is lost, no client sends it again.
      const answer = await this.once(index % 2 === 1 ? 'POST' : 'GET');
      this.total++;
      if ('error' in answer) {
        this.failures.push({ at: Date.now(), loop: index, detail: answer.error });
        await new Promise((r) => setTimeout(r, 10)); // no busy loop should the proxy be down
        continue;
      }
      const match = /^version (\d+)$/.exec(answer.text.trim());
      if (answer.status !== 200 || !match) {
        this.failures.push({ at: Date.now(), loop: index, detail: `${answer.status} ${answer.text.slice(0, 200)}` });
        continue;
      }
      const version = Number(match[1]);
      const list = this.versions[index]!;
      if (list.at(-1) !== version) list.push(version);
    }
  }

  private once(method: 'GET' | 'POST'): Promise<{ status: number; text: string } | { error: string }> {
    return new Promise((resolve) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: this.port,
          path: '/',
          method,
          headers: { Host: this.host, 'content-type': 'text/plain' },
          agent: this.agent,
          timeout: 10_000,
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (text += chunk));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
          res.on('error', (error) => resolve({ error: `response: ${error.message} (${req.reusedSocket ? 'reused' : 'new'} connection)` }));
        },
      );
      req.on('timeout', () => req.destroy(new Error('timed out after 10 s')));
      req.on('error', (error: NodeJS.ErrnoException) =>
        resolve({ error: `${error.code ?? ''} ${error.message} (${req.reusedSocket ? 'reused' : 'new'} connection)` }),
      );
      req.end(method === 'POST' ? 'order=1' : undefined);
    });
  }
}

beforeAll(async () => {
  await provisionDocker();
  caddy = await startCaddy();
  serverEnv = {
    ...caddy.platformEnv,
    BUILD_CONCURRENCY: '2',
    STOP_GRACE_SECONDS: '1',
    HEALTH_TIMEOUT_MS: String(HEALTH_TIMEOUT_MS),
    // Host ports of its own: another install on this host taking 20000 meanwhile failed a cutover with EADDRINUSE.
    HOST_PORT_RANGE: ownPortRange(),
  };
  server = await startServerProcess(serverEnv);
  call = api(server.url, server.token);
  const served = await servedWebService(call, `zero-downtime-${Date.now()}`, caddy, hostname);
  ({ projectId, service, liveContainer } = served);
  expect(served.proxy.ok, served.proxy.detail).toBe(true);
}, 20 * 60_000);

afterAll(async () => {
  if (call && projectId) await call('DELETE', `/api/projects/${projectId}`).catch(() => {});
  await server?.dispose();
  // The restarted process reused the data directory: it is this test's to remove.
  if (server) {
    rmSync(server.dataDir, { recursive: true, force: true });
    await removeInstanceLeftovers(server.output());
  }
  await caddy?.stop();
});

it('serves every request during 5 consecutive redeploys, moving from each version to the next', async () => {
  const load = new LoadGenerator(caddy.httpPort, hostname);
  load.start();
  const outcomes: Array<{ status: string; logs: string[] }> = [];
  try {
    for (let version = 1; version <= 5; version++) {
      const set = await call('POST', `/api/services/${service.id}/env`, { key: 'VERSION', value: String(version) });
      expect(set.status, set.text).toBeLessThan(300);
      const result = await deploy(call, service.id, 60_000);
      outcomes.push({ status: result.deployment.status, logs: result.logs });
      expect(result.deployment.status, result.logs.join('\n')).toBe('succeeded');
      const name = result.deployment.containerName!;
      expect(
        result.logs.some((l) => l.startsWith(`Routes switched to ${name}: `)),
        result.logs.join('\n'),
      ).toBe(true);
      expect(
        result.logs.some((l) => new RegExp(`^Stopping the previous container ${liveContainer} \\(drained in \\d+ ms\\)$`).test(l)),
        result.logs.join('\n'),
      ).toBe(true);
      liveContainer = name;
      const lines = (await call('GET', `/api/deployments/${result.deployment.id}/logs`)).json.logs as Array<{
        line: string;
        createdAt: string;
      }>;
      const switched = lines.find((l) => l.line.startsWith('Routes switched to'));
      if (switched) load.marks.push({ at: Date.parse(switched.createdAt), label: `routes switched to version ${version}` });
      // Once the deployment is over, the new version is what the domain serves.
      expect((await requestVia(caddy.httpPort, hostname))?.text.trim()).toBe(`version ${version}`);
    }
    await new Promise((r) => setTimeout(r, 300));
  } finally {
    await load.stop('5 redeploys');
  }
  expect(outcomes.map((o) => o.status)).toEqual(['succeeded', 'succeeded', 'succeeded', 'succeeded', 'succeeded']);
  expect(load.failures).toEqual([]);
  const { seen, wentBack } = load.summary();
  expect(seen).toEqual([0, 1, 2, 3, 4, 5]);
  // A client that got the new version never gets the old one again.
  expect(wentBack).toEqual([]);
  expect(load.versions.every((list) => list.at(-1) === 5)).toBe(true);
  expect(await containersWithLabel(`slipway.service=${service.id}`)).toEqual([liveContainer]);
}, 240_000);

it('fails a redeploy whose container never answers, and the old container serves throughout', async () => {
  // Runs, but never listens: the health check cannot pass.
  const patched = await call('PATCH', `/api/services/${service.id}`, { startCommand: 'exec sleep 600' });
  expect(patched.status, patched.text).toBe(200);
  const load = new LoadGenerator(caddy.httpPort, hostname);
  load.start();
  let result!: Awaited<ReturnType<typeof deploy>>;
  try {
    result = await deploy(call, service.id, 60_000);
    await new Promise((r) => setTimeout(r, 300));
  } finally {
    await load.stop('a redeploy that never becomes healthy');
  }
  expect(result.deployment.status, result.logs.join('\n')).toBe('failed');
  expect(result.logs.join('\n')).toContain(
    `Deployment failed: The container did not answer on port 3000 within ${HEALTH_TIMEOUT_MS / 1000} s`,
  );
  expect(result.logs.some((l) => l.startsWith('Routes switched to'))).toBe(false);
  expect(load.failures).toEqual([]);
  const { seen } = load.summary();
  expect(seen).toEqual([5]);
  expect(await containersWithLabel(`slipway.service=${service.id}`)).toEqual([liveContainer]);
  expect((await requestVia(caddy.httpPort, hostname))?.text.trim()).toBe('version 5');
}, 120_000);

it('drops no request of a hostname while domains of another service are added and removed, and a service is created, deployed and deleted (no Caddy reload)', async () => {
  // Another web service, deployed, with a domain of its own.
  const created = await call('POST', `/api/projects/${projectId}/services`, {
    name: 'other',
    repoUrl: 'container-image',
    containerImage: 'node:22-bookworm-slim',
    startCommand: START_COMMAND,
    internalPort: 3000,
    env: [{ key: 'VERSION', value: '100' }],
  });
  expect(created.status, created.text).toBe(201);
  const other = created.json.service as { id: string };
  const deployed = await deploy(call, other.id, 60_000);
  expect(deployed.deployment.status, deployed.logs.join('\n')).toBe('succeeded');
  const permanent = `other-${randomBytes(3).toString('hex')}.zero-downtime.test`;
  const first = await call('POST', `/api/services/${other.id}/domains`, { hostname: permanent });
  expect(first.status, first.text).toBe(201);
  expect(first.json.proxy.ok, first.json.proxy.detail).toBe(true);
  await waitUntilServed(caddy.httpPort, permanent, { status: 200, text: /^version 100$/m });
  const configBefore = (await adminGet(caddy.adminUrl, '/config/')).body;

  const keepAlive = new LoadGenerator(caddy.httpPort, hostname);
  const fresh = new LoadGenerator(caddy.httpPort, hostname, 8, 'new');
  keepAlive.start();
  fresh.start();
  const ROUNDS = 25;
  const servedAfterMs: number[] = [];
  let changes = 0;
  try {
    for (let round = 0; round < ROUNDS; round++) {
      const name = `other-${round}-${randomBytes(3).toString('hex')}.zero-downtime.test`;
      const added = await call('POST', `/api/services/${other.id}/domains`, { hostname: name });
      expect(added.status, added.text).toBe(201);
      expect(added.json.proxy.ok, added.json.proxy.detail).toBe(true);
      expect(added.json.proxy.detail).toMatch(/; hostnames updated without a reload$/);
      changes++;
      for (const load of [keepAlive, fresh]) load.marks.push({ at: Date.now(), label: `domain ${round} added` });
      // Routed when the answer comes: the file is there.
      servedAfterMs.push((await waitUntilServed(caddy.httpPort, name, { status: 200, text: /^version 100$/m }, 5_000)).afterMs);
      await new Promise((r) => setTimeout(r, 100));
      const removed = await call('DELETE', `/api/services/${other.id}/domains/${added.json.domain.id}`);
      expect(removed.status, removed.text).toBe(200);
      expect(removed.json.proxy.ok, removed.json.proxy.detail).toBe(true);
      expect(removed.json.proxy.detail).toMatch(/; hostnames updated without a reload$/);
      changes++;
      for (const load of [keepAlive, fresh]) load.marks.push({ at: Date.now(), label: `domain ${round} removed` });
      expect((await requestVia(caddy.httpPort, name))?.status).toBe(404);
      await new Promise((r) => setTimeout(r, 100));
    }
    // A new service: waiting for its container (503), then deployed into a free pair, then deleted.
    const third = await call('POST', `/api/projects/${projectId}/services`, {
      name: 'third',
      repoUrl: 'container-image',
      containerImage: 'node:22-bookworm-slim',
      startCommand: START_COMMAND,
      internalPort: 3001,
      env: [{ key: 'VERSION', value: '200' }],
    });
    expect(third.status, third.text).toBe(201);
    const thirdHost = `third-${randomBytes(3).toString('hex')}.zero-downtime.test`;
    const thirdDomain = await call('POST', `/api/services/${third.json.service.id}/domains`, { hostname: thirdHost });
    expect(thirdDomain.status, thirdDomain.text).toBe(201);
    expect(thirdDomain.json.proxy.detail).toMatch(/; hostnames updated without a reload$/);
    expect((await requestVia(caddy.httpPort, thirdHost))?.status).toBe(503);
    for (const load of [keepAlive, fresh]) load.marks.push({ at: Date.now(), label: 'third service created' });
    const thirdDeployed = await deploy(call, third.json.service.id, 60_000);
    expect(thirdDeployed.deployment.status, thirdDeployed.logs.join('\n')).toBe('succeeded');
    for (const load of [keepAlive, fresh]) load.marks.push({ at: Date.now(), label: 'third service deployed' });
    await waitUntilServed(caddy.httpPort, thirdHost, { status: 200, text: /^version 200$/m }, 5_000);
    const thirdGone = await call('DELETE', `/api/services/${third.json.service.id}`);
    expect(thirdGone.status, thirdGone.text).toBe(200);
    for (const load of [keepAlive, fresh]) load.marks.push({ at: Date.now(), label: 'third service deleted' });
    expect((await requestVia(caddy.httpPort, thirdHost))?.status).toBe(404);
    changes += 3;
  } finally {
    await Promise.all([keepAlive.stop(`${changes} domain and service changes`), fresh.stop(`${changes} domain and service changes`)]);
  }
  console.log(`zero-downtime: ${changes} domain and service changes; a new domain answered after ${Math.max(...servedAfterMs)} ms at most`);
  expect(changes).toBe(2 * ROUNDS + 3);
  expect(keepAlive.failures).toEqual([]);
  expect(fresh.failures).toEqual([]);
  expect(keepAlive.total).toBeGreaterThan(0);
  expect(fresh.total).toBeGreaterThan(0);
  expect(keepAlive.summary().seen).toEqual([5]);
  expect(fresh.summary().seen).toEqual([5]);
  // Caddy was never given another configuration: the routes are files.
  expect((await adminGet(caddy.adminUrl, '/config/')).body).toEqual(configBefore);
  expect((await requestVia(caddy.httpPort, permanent))?.text.trim()).toBe('version 100');
}, 180_000);

/**
 * A project with the web service answering `version 0`, deployed once and served through `proxy` at
 * `host`: what each install of this file starts from.
 */
async function servedWebService(client: ReturnType<typeof api>, projectName: string, proxy: CaddyProcess, host: string) {
  const project: string = (await client('POST', '/api/projects', { name: projectName })).json.project.id;
  const created = await client('POST', `/api/projects/${project}/services`, {
    name: 'web',
    repoUrl: 'container-image',
    containerImage: 'node:22-bookworm-slim',
    startCommand: START_COMMAND,
    internalPort: 3000,
    env: [{ key: 'VERSION', value: '0' }],
  });
  if (created.status !== 201) throw new Error(`${created.status} ${created.text}`);
  const web: { id: string; hostPort: number } = created.json.service;
  const first = await deploy(client, web.id, 60_000);
  if (first.deployment.status !== 'succeeded') throw new Error(first.logs.join('\n'));
  const domain = await client('POST', `/api/services/${web.id}/domains`, { hostname: host });
  if (domain.status !== 201) throw new Error(`${domain.status} ${domain.text}`);
  await waitUntilServed(proxy.httpPort, host, { status: 200, text: /^version 0$/m });
  return {
    projectId: project,
    service: web,
    liveContainer: first.deployment.containerName!,
    proxy: domain.json.proxy as { ok: boolean; detail?: string },
  };
}

/** A busybox httpd answering `text`: deploys in a couple of seconds. */
function textService(projectId: string, name: string, text: string) {
  return call('POST', `/api/projects/${projectId}/services`, {
    name,
    repoUrl: 'container-image',
    containerImage: 'busybox:latest',
    internalPort: 3000,
    startCommand: `mkdir -p /www && echo ${text} > /www/index.html && exec httpd -f -p 3000 -h /www`,
  });
}

it('drops no request of a hostname while web services are deployed past the first 16 traffic slot pairs (no Caddy reload)', async () => {
  // Before, Caddy held a route per slot pair for a pool of 16, 32, ... pairs, and the 17th pair in use was a load.
  const configBefore = (await adminGet(caddy.adminUrl, '/config/')).body;
  const nonce = randomBytes(3).toString('hex');
  const FILLERS = 17;
  const fillers: Array<{ id: string; host: string }> = [];
  for (let i = 0; i < FILLERS; i++) {
    const created = await textService(projectId, `fill-${i}`, `fill-${i}`);
    expect(created.status, created.text).toBe(201);
    const host = `fill-${i}-${nonce}.zero-downtime.test`;
    const domain = await call('POST', `/api/services/${created.json.service.id}/domains`, { hostname: host });
    expect(domain.status, domain.text).toBe(201);
    fillers.push({ id: created.json.service.id, host });
  }
  const keepAlive = new LoadGenerator(caddy.httpPort, hostname);
  const fresh = new LoadGenerator(caddy.httpPort, hostname, 8, 'new');
  keepAlive.start();
  fresh.start();
  try {
    // Two at a time, as BUILD_CONCURRENCY runs them.
    for (let i = 0; i < FILLERS; i += 2) {
      const batch = fillers.slice(i, i + 2);
      const results = await Promise.all(batch.map((f) => deploy(call, f.id, 60_000)));
      for (const [k, result] of results.entries()) {
        expect(result.deployment.status, result.logs.join('\n')).toBe('succeeded');
        expect(result.logs.join('\n')).toMatch(
          /Routes switched to .*: traffic slot [\d.]+ opened; Caddy serves .*; hostnames updated without a reload/,
        );
        for (const load of [keepAlive, fresh]) load.marks.push({ at: Date.now(), label: `fill-${i + k} deployed` });
      }
      for (const [k, f] of batch.entries())
        await waitUntilServed(caddy.httpPort, f.host, { status: 200, text: new RegExp(`^fill-${i + k}$`, 'm') }, 5_000);
    }
  } finally {
    await Promise.all([keepAlive.stop(`${FILLERS} web services deployed`), fresh.stop(`${FILLERS} web services deployed`)]);
  }
  // Every web service of the install holds a pair of its own: more than 16 pairs are in use.
  const slots = await docker(
    'ps',
    '--filter',
    `label=slipway.slot`,
    '--filter',
    `label=slipway.service`,
    '--format',
    '{{.Label "slipway.slot"}} {{.Label "slipway.service"}}',
  );
  const ours = new Set([service.id, ...fillers.map((f) => f.id)]);
  const pairs = new Set(
    slots
      .split('\n')
      .map((line) => line.split(' '))
      .filter(([, id]) => ours.has(id!))
      .map(([ip]) => Math.floor(Number(ip!.split('.').reduce((n, part) => n * 256 + Number(part), 0)) / 2)),
  );
  expect(pairs.size).toBeGreaterThan(16);
  expect(keepAlive.failures).toEqual([]);
  expect(fresh.failures).toEqual([]);
  expect(keepAlive.total).toBeGreaterThan(0);
  expect(fresh.total).toBeGreaterThan(0);
  expect((await adminGet(caddy.adminUrl, '/config/')).body).toEqual(configBefore);
  for (const f of fillers) expect((await call('DELETE', `/api/services/${f.id}`)).status).toBe(200);
}, 600_000);

it('keeps serving when the platform is killed in the middle of a cutover, and sorts it out on restart', async () => {
  // The previous test left a start command that never listens: back to the server, version 6.
  expect((await call('PATCH', `/api/services/${service.id}`, { startCommand: START_COMMAND })).status).toBe(200);
  expect((await call('POST', `/api/services/${service.id}/env`, { key: 'VERSION', value: '6' })).status).toBeLessThan(300);
  const redeployed = await deploy(call, service.id, 60_000);
  expect(redeployed.deployment.status, redeployed.logs.join('\n')).toBe('succeeded');
  liveContainer = redeployed.deployment.containerName!;
  expect((await call('POST', `/api/services/${service.id}/env`, { key: 'VERSION', value: '7' })).status).toBeLessThan(300);
  const load = new LoadGenerator(caddy.httpPort, hostname);
  load.start();
  let deploymentId = '';
  try {
    const created = await call('POST', `/api/services/${service.id}/deployments`);
    expect(created.status, created.text).toBe(201);
    deploymentId = created.json.deployment.id;
    // The new container serves and the cutover has begun: its slot opens next.
    await waitForLogLine(call, deploymentId, /^Host port 127\.0\.0\.1:\d+ now forwards to /, 60_000);
    await server.kill();
    load.marks.push({ at: Date.now(), label: 'platform killed' });
    // Caddy and the traffic gate keep serving without the platform.
    await new Promise((r) => setTimeout(r, 2_000));
    server = await startServerProcess(serverEnv, { dataDir: server.dataDir, token: server.token });
    call = api(server.url, server.token);
    load.marks.push({ at: Date.now(), label: 'platform restarted' });
    const ended = await waitForDeployment(call, deploymentId, 60_000);
    expect(ended.deployment.status, ended.logs.join('\n')).toBe('failed');
    expect(ended.logs.join('\n')).toContain('The server stopped while this deployment was running');
    // The interrupted container is drained and removed; only the live one is left.
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline && (await containersWithLabel(`slipway.service=${service.id}`)).length > 1)
      await new Promise((r) => setTimeout(r, 250));
    await new Promise((r) => setTimeout(r, 500));
  } finally {
    await load.stop('a cutover cut short by SIGKILL, then a restart');
  }
  expect(load.failures).toEqual([]);
  expect(await containersWithLabel(`slipway.service=${service.id}`)).toEqual([liveContainer]);
  expect((await requestVia(caddy.httpPort, hostname))?.text.trim()).toBe('version 6');
  // And the next deployment runs through normally.
  const next = await deploy(call, service.id, 60_000);
  expect(next.deployment.status, next.logs.join('\n')).toBe('succeeded');
  expect((await requestVia(caddy.httpPort, hostname))?.text.trim()).toBe('version 7');
}, 180_000);

describe('without traffic slots (a slot network that cannot be made: the proxy dials containers at their own addresses)', () => {
  let caddy2: CaddyProcess;
  let server2: ServerProcess;
  let call2: ReturnType<typeof api>;
  let project2: string;
  let service2: { id: string };
  const host2 = `plain-${randomBytes(4).toString('hex')}.zero-downtime.test`;

  beforeAll(async () => {
    caddy2 = await startCaddy();
    // Docker's default bridge holds this subnet: the slot network cannot be made, and stays unmade.
    const bridge = await docker('network', 'inspect', 'bridge', '-f', '{{(index .IPAM.Config 0).Subnet}}');
    server2 = await startServerProcess({
      ...caddy2.platformEnv,
      BUILD_CONCURRENCY: '2',
      STOP_GRACE_SECONDS: '1',
      HEALTH_TIMEOUT_MS: String(HEALTH_TIMEOUT_MS),
      HOST_PORT_RANGE: ownPortRange(),
      SLOT_SUBNET: bridge,
    });
    call2 = api(server2.url, server2.token);
    ({ projectId: project2, service: service2 } = await servedWebService(call2, `zero-downtime-plain-${Date.now()}`, caddy2, host2));
  }, 10 * 60_000);

  afterAll(async () => {
    if (call2 && project2) await call2('DELETE', `/api/projects/${project2}`).catch(() => {});
    await server2?.dispose();
    await caddy2?.stop();
  });

  it("serves every request during 5 redeploys, each a new address of the service's container, without a Caddy reload", async () => {
    expect(server2.output()).toContain('traffic slots unavailable');
    const configBefore = (await adminGet(caddy2.adminUrl, '/config/')).body;
    const keepAlive = new LoadGenerator(caddy2.httpPort, host2);
    const fresh = new LoadGenerator(caddy2.httpPort, host2, 8, 'new');
    keepAlive.start();
    fresh.start();
    const addresses = new Set<string>();
    try {
      for (let version = 1; version <= 5; version++) {
        const set = await call2('POST', `/api/services/${service2.id}/env`, { key: 'VERSION', value: String(version) });
        expect(set.status, set.text).toBeLessThan(300);
        const result = await deploy(call2, service2.id, 60_000);
        expect(result.deployment.status, result.logs.join('\n')).toBe('succeeded');
        const name = result.deployment.containerName!;
        expect(
          result.logs.some((l) => new RegExp(`^Routes switched to ${name}: Caddy serves .*; hostnames updated without a reload$`).test(l)),
          result.logs.join('\n'),
        ).toBe(true);
        for (const load of [keepAlive, fresh]) load.marks.push({ at: Date.now(), label: `version ${version} live` });
        addresses.add(await docker('inspect', '-f', '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}', name));
        expect((await requestVia(caddy2.httpPort, host2))?.text.trim()).toBe(`version ${version}`);
      }
      await new Promise((r) => setTimeout(r, 300));
    } finally {
      await Promise.all([keepAlive.stop('5 redeploys without traffic slots'), fresh.stop('5 redeploys without traffic slots')]);
    }
    // Each container had an address of its own (the old one still held its address while the new one started).
    expect(addresses.size).toBeGreaterThan(1);
    expect(keepAlive.failures).toEqual([]);
    expect(fresh.failures).toEqual([]);
    expect(keepAlive.summary().wentBack).toEqual([]);
    expect(keepAlive.summary().seen).toEqual([0, 1, 2, 3, 4, 5]);
    expect((await adminGet(caddy2.adminUrl, '/config/')).body).toEqual(configBefore);
  }, 180_000);
});
