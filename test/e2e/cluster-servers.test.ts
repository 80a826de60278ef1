import { execFile } from 'node:child_process';
import { request } from 'node:https';
import { promisify } from 'node:util';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { provisionDocker } from '../helpers/docker.js';
import { expectErrorShape } from '../helpers/error-bodies.js';
import { ok } from '../helpers/http.js';
import { api, startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { deploy } from '../helpers/deployments.js';
import { requestVia, startCaddy, waitUntilServed, type CaddyProcess } from '../helpers/caddy.js';
import { randomBytes } from 'node:crypto';
import { managerPlatformEnv, startTestCluster, type TestCluster } from '../helpers/test-cluster.js';
import { BUSYBOX_SERVER } from '../helpers/replica-server.js';
import { Load } from '../helpers/load.js';
import { readSse } from '../helpers/sse.js';

/*
 * Servers over real HTTP against a real cluster (issue 31, part A; docs/cluster.md): the platform
 * started as `npm start` starts it, its engine the manager of a test cluster of namespaced engines
 * (test/helpers/test-cluster.ts; the host's engine is never put in swarm mode), the nodes' engines
 * not yet in any swarm. The join command the API answers is run as a user would run it on the new
 * machine (in the node's network namespace, as root), and the platform forms the swarm, starts its
 * registry, hands the node its certificate, and shows it ready. Then a used token, drain, removal
 * through the node's own engine over mutual TLS, and the refusals.
 */
const run = promisify(execFile);
let cluster: TestCluster;
let server: ServerProcess;
let caddy: CaddyProcess;
let admin: ReturnType<typeof api>;
let scopedKey: string;
const timings: Record<string, number> = {};

/** The user pastes the command on the new machine as root: here, in the node's network namespace. */
async function runJoinCommand(node: string, command: string): Promise<{ code: number; output: string }> {
  const { argvPrefix, env } = cluster.joinEnvironment(node);
  try {
    const { stdout, stderr } = await run(argvPrefix[0]!, [...argvPrefix.slice(1), 'bash', '-c', command], {
      env: { ...process.env, ...env },
      timeout: 180_000,
      maxBuffer: 4 * 1024 * 1024,
    });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : 1, output: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}

type Server = {
  id: string;
  name: string;
  role: string;
  state: string;
  availability: string;
  address: string | null;
  engineVersion: string | null;
  labels: Record<string, string>;
  local: boolean;
  resources: { cpus: number; memoryMb: number } | null;
};

async function waitForServer(id: string, match: (s: Server) => boolean, timeoutMs = 60_000): Promise<Server> {
  const started = Date.now();
  let last: Server | undefined;
  while (Date.now() - started < timeoutMs) {
    const res = await admin('GET', `/api/servers/${id}`);
    if (res.status === 200) {
      last = res.json.server as Server;
      if (match(last)) return last;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(
    `server ${id} did not reach the expected state in ${timeoutMs} ms: ${JSON.stringify(last)}\n${server.output().slice(-3000)}`,
  );
}

/** An HTTPS call to a node's engine: with no client certificate it must be refused. */
function engineWithoutClientCertificate(address: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const req = request({ host: address, port, path: '/version', rejectUnauthorized: false, timeout: 10_000 }, (res) =>
      resolve(`answered ${res.statusCode}`),
    );
    req.on('error', (error) => resolve(`refused: ${error.message}`));
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end();
  });
}

beforeAll(async () => {
  await provisionDocker();
  await provisionDocker({ images: 'registry' });
  await provisionDocker({ images: 'busybox' });
  let started = performance.now();
  // The app's image is the manager's only: the platform pushes it to its registry and the workers pull it by digest.
  cluster = await startTestCluster({ nodes: ['m', 'w1', 'w2'], swarm: false, images: ['registry:2'] });
  await cluster.loadImages([APP_IMAGE], ['m']);
  caddy = await startCaddy();
  Object.assign(timings, cluster.timings);
  timings['cluster (engines, registry image)'] = Math.round(performance.now() - started);
  // The registry image is the manager's only: the nodes never need it.
  started = performance.now();
  server = await startServerProcess({
    ...caddy.platformEnv,
    BUILD_CONCURRENCY: '1',
    // busybox's httpd, PID 1 of its task, ignores SIGTERM: a removed task is killed after this.
    STOP_GRACE_SECONDS: '1',
    HEALTH_TIMEOUT_MS: '60000',
    ...(await managerPlatformEnv(cluster)),
    CLUSTER_MONITOR_INTERVAL_MS: '500',
    JOIN_TOKEN_TTL_SECONDS: '300',
  });
  timings['platform started'] = Math.round(performance.now() - started);
  admin = api(server.url, server.token);
  const project = (await ok(admin('POST', '/api/projects', { name: 'p1' }), 'project')).project;
  scopedKey = (await ok(admin('POST', '/api/api-keys', { name: 'scoped', access: 'write', projectIds: [project.id] }), 'key')).token;
}, 600_000);

afterAll(async () => {
  await server?.dispose();
  await caddy?.stop();
  await cluster?.down();
  console.log(`cluster-servers timings (ms): ${JSON.stringify(timings)}`);
}, 180_000);

describe('servers on a real cluster', () => {
  let w1: Server;

  it('lists the host as the only server, a ready manager, with the engine and its resources; no swarm yet', async () => {
    const { servers } = await ok(admin('GET', '/api/servers'), 'servers');
    expect(servers).toHaveLength(1);
    expect(servers[0]).toMatchObject({
      role: 'manager',
      local: true,
      state: 'ready',
      availability: 'active',
      address: cluster.manager.address,
      engineVersion: expect.stringMatching(/^\d+\.\d+/),
    });
    expect(servers[0].resources.cpus).toBeGreaterThan(0);
    expect(servers[0].resources.memoryMb).toBeGreaterThan(0);
    expect(await cluster.docker('m', 'info', '--format', '{{.Swarm.LocalNodeState}}')).toBe('inactive');
  }, 180_000);

  // A service deployed while the host is the only server: plain containers on the manager, moved to Swarm later.
  const early = { id: '', hostname: `early-${randomBytes(4).toString('hex')}.cluster.test` };
  it('deploys a service before the cluster forms: a plain container on the manager', async () => {
    const projectId = (await ok(admin('POST', '/api/projects', { name: `early-${randomBytes(3).toString('hex')}` }), 'project')).project.id;
    const created = await ok(
      admin('POST', `/api/projects/${projectId}/services`, {
        name: 'early',
        repoUrl: 'container-image',
        containerImage: APP_IMAGE,
        startCommand: BUSYBOX_SERVER,
        internalPort: 3000,
        env: [{ key: 'VERSION', value: '0' }],
      }),
      'early service',
    );
    early.id = created.service.id;
    const first = await deploy(admin, early.id, 120_000);
    expect(first.deployment.status, first.logs.join('\n')).toBe('succeeded');
    expect((await admin('POST', `/api/services/${early.id}/domains`, { hostname: early.hostname })).status).toBe(201);
    // A plain container on the manager's engine (no Swarm task). Caddy on the host cannot reach it here: the
    // manager's engine and its bridge live in a network namespace of their own (test/helpers/test-cluster.ts).
    const owners = await cluster.docker(
      'm',
      'ps',
      '--filter',
      `label=slipway.service=${early.id}`,
      '--format',
      'x{{.Label "com.docker.swarm.task.id"}}',
    );
    expect(owners).toBe('x');
  }, 180_000);

  it('joins a server with the one-line command: the swarm forms, the registry starts, the node is ready within seconds', async () => {
    const created = await admin('POST', '/api/servers', { name: 'worker-1', labels: { zone: 'a' } });
    expect(created.status, created.text).toBe(201);
    const { server: added, join } = created.json;
    expect(added).toMatchObject({ name: 'worker-1', role: 'worker', state: 'unknown', labels: { zone: 'a' } });
    expect(join.managerAddress).toBe(`${cluster.manager.address}:2377`);
    expect(join.command).toContain(join.token);
    // Shown once: no read shows the token again.
    expect((await admin('GET', '/api/servers')).text).not.toContain(join.token);

    const started = performance.now();
    const result = await runJoinCommand('w1', join.command);
    expect(result.code, result.output).toBe(0);
    expect(result.output).toContain('joined as worker-1');
    timings['join command (w1)'] = Math.round(performance.now() - started);
    const readyAt = performance.now();
    w1 = await waitForServer(added.id, (s) => s.state === 'ready', 30_000);
    timings['w1 ready after the command'] = Math.round(performance.now() - readyAt);
    expect(w1).toMatchObject({ role: 'worker', availability: 'active', address: cluster.node('w1').address, labels: { zone: 'a' } });
    expect(w1.engineVersion).toMatch(/^\d+\.\d+/);
    expect(await cluster.docker('m', 'info', '--format', '{{.Swarm.LocalNodeState}}')).toBe('active');
    // The swarm node carries the user's labels and the platform's link to the server.
    const labels = JSON.parse(await cluster.docker('m', 'node', 'inspect', '--format', '{{json .Spec.Labels}}', 'w1'));
    expect(labels).toEqual({ zone: 'a', 'slipway.server': added.id });

    // The platform's registry runs on the manager, answers with TLS from the install's CA, with authentication.
    const registry = await waitFor(async () => {
      const res = await admin('GET', '/api/registry');
      return res.json.registry?.running ? res.json.registry : null;
    }, 90_000);
    expect(registry).toMatchObject({ kind: 'platform', address: `${cluster.manager.address}:5000`, username: 'slipway', running: true });
    expect(JSON.stringify(registry)).not.toMatch(/password/i);
    // The node trusts it: its CA is in the node's certs.d for the registry's address.
    expect(await cluster.docker('w1', 'info', '--format', '{{.Swarm.LocalNodeState}}')).toBe('active');

    // The node's engine listens with mutual TLS only: no client certificate, no answer.
    expect(await engineWithoutClientCertificate(cluster.node('w1').address, 2376)).toMatch(/^refused/);
  }, 180_000);

  it('refuses the used token, a wrong one, and a malformed join', async () => {
    const publicCall = api(server.url, undefined);
    const used = await publicCall('POST', '/api/servers/join', {
      token: `slwj_${'A'.repeat(43)}`,
      csrBase64: Buffer.from('-----BEGIN CERTIFICATE REQUEST-----').toString('base64'),
      address: '100.64.0.99',
      hostname: 'x',
    });
    expectErrorShape(used, 401, 'wrong token');
    const missing = await publicCall('POST', '/api/servers/join', { token: 'slwj_x' });
    expect(missing.status).toBe(400);
    // A token exchanged once (as the join script does, with a real certificate request) is spent.
    const created = await ok(admin('POST', '/api/servers', { name: 'spent' }), 'spent');
    const key = await run(
      'openssl',
      ['req', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', '/dev/null', '-subj', '/CN=spent'],
      {
        encoding: 'utf8',
      },
    );
    const exchange = {
      token: created.join.token,
      csrBase64: Buffer.from(key.stdout).toString('base64'),
      address: '100.64.0.250',
      hostname: 'spent',
    };
    const first = await publicCall('POST', '/api/servers/join', exchange);
    expect(first.status, first.text).toBe(200);
    expect(first.json).toMatchObject({
      name: 'spent',
      managerAddress: `${cluster.manager.address}:2377`,
      swarmJoinToken: expect.stringMatching(/^SWMTKN-/),
    });
    const again = await publicCall('POST', '/api/servers/join', exchange);
    expectErrorShape(again, 401, 'used token');
    expect(again.json.message).toMatch(/already used/);
    // A server that never joined is removed at once.
    expect((await admin('DELETE', `/api/servers/${created.server.id}`)).status).toBe(200);
  }, 180_000);

  let w2Id: string;
  it('joins a second worker', async () => {
    const { server: added, join } = await ok(admin('POST', '/api/servers', { name: 'worker-2' }), 'add w2');
    const result = await runJoinCommand('w2', join.command);
    expect(result.code, result.output).toBe(0);
    await waitForServer(added.id, (s) => s.state === 'ready', 30_000);
    w2Id = added.id;
    const { servers } = await ok(admin('GET', '/api/servers'), 'servers');
    expect(servers.filter((s: Server) => s.state === 'ready').map((s: Server) => s.name)).toEqual(
      expect.arrayContaining(['worker-1', 'worker-2']),
    );
  }, 180_000);

  it('moves the service deployed before the cluster to Swarm without a redeploy by hand: its tasks serve, its plain container is gone', async () => {
    const started = performance.now();
    const moved = await waitFor(async () => {
      const { deployments } = (await admin('GET', `/api/services/${early.id}/deployments`)).json;
      const found = (deployments as Array<{ id: string; status: string; trigger: string; containerName: string | null }>).find(
        (d) => d.trigger === 'rollback' && ['succeeded', 'failed'].includes(d.status),
      );
      return found ?? null;
    }, 180_000);
    timings['moved to Swarm'] = Math.round(performance.now() - started);
    const logs = (await admin('GET', `/api/deployments/${moved.id}/logs`)).json.logs.map((l: { line: string }) => l.line).join('\n');
    expect(moved.status, logs).toBe('succeeded');
    expect(logs).toMatch(/Moving early to the cluster/);
    // Its Swarm service runs, and no plain container of it is left on the manager.
    const swarmServices = await cluster.docker(
      'm',
      'service',
      'ls',
      '--filter',
      `label=slipway.service=${early.id}`,
      '--format',
      '{{.Name}}',
    );
    expect(swarmServices.split('\n').filter(Boolean)).toEqual([moved.containerName]);
    const owners = await cluster.docker(
      'm',
      'ps',
      '--filter',
      `label=slipway.service=${early.id}`,
      '--format',
      'x{{.Label "com.docker.swarm.task.id"}}',
    );
    expect(owners.split('\n').filter((line) => line === 'x')).toEqual([]);
    await waitUntilServed(caddy.httpPort, early.hostname, { status: 200, text: /^version 0 / });
    expect((await admin('DELETE', `/api/services/${early.id}`)).status).toBeLessThan(300);
  }, 240_000);

  const hostname = `web-${randomBytes(4).toString('hex')}.cluster.test`;
  let serviceId: string;
  let serviceName: string;
  it('deploys a service with 3 replicas as a Swarm service over the 3 nodes; requests through Caddy reach all three', async () => {
    const projectId = (await ok(admin('POST', '/api/projects', { name: `swarm-${randomBytes(3).toString('hex')}` }), 'project')).project.id;
    const created = await ok(
      admin('POST', `/api/projects/${projectId}/services`, {
        name: 'web',
        repoUrl: 'container-image',
        containerImage: APP_IMAGE,
        startCommand: BUSYBOX_SERVER,
        internalPort: 3000,
        replicas: 3,
        env: [{ key: 'VERSION', value: '1' }],
      }),
      'service',
    );
    serviceId = created.service.id;
    const first = await deploy(admin, serviceId, 240_000);
    expect(first.deployment.status, first.logs.join('\n')).toBe('succeeded');
    expect(first.logs.join('\n')).toMatch(/Pushed to the cluster's registry/);
    // The deployment's own Swarm service, named as its container would be.
    expect(first.deployment.containerName).toBe(`slipway-${serviceId}-${first.deployment.id}`);
    const nodes = (
      await cluster.docker(
        'm',
        'service',
        'ps',
        first.deployment.containerName!,
        '--filter',
        'desired-state=running',
        '--format',
        '{{.Node}}',
      )
    )
      .split('\n')
      .filter(Boolean);
    expect(nodes.sort()).toEqual(['m', 'w1', 'w2']);
    expect((await admin('POST', `/api/services/${serviceId}/domains`, { hostname })).status).toBe(201);
    await waitUntilServed(caddy.httpPort, hostname, { status: 200, text: /^version 1 / });
    const hosts = new Set<string>();
    for (let i = 0; i < 30 && hosts.size < 3; i++) {
      const answer = await requestVia(caddy.httpPort, hostname);
      const match = answer ? /^version \d+ (\S+)/.exec(answer.text.trim()) : null;
      if (match) hosts.add(match[1]!);
    }
    expect(hosts.size).toBe(3);
  }, 300_000);

  it('placement: a label no server has is refused, listing those that exist; one that is set is taken by the next deployment', async () => {
    const refused = await admin('PATCH', `/api/services/${serviceId}`, { placement: { must: { zone: 'nowhere' } } });
    expectErrorShape(refused, 400, 'unknown placement label');
    expect(refused.json.message).toBe('No server has the label zone=nowhere; the labels that exist are: zone=a');
    // No server has zone=b: the tasks may still run on all three nodes.
    const set = await admin('PATCH', `/api/services/${serviceId}`, { placement: { mustNot: { zone: 'b' } } });
    expect(set.status, set.text).toBe(200);
    expect(set.json.service.placement).toEqual({ must: {}, mustNot: { zone: 'b' }, role: null });
  }, 60_000);

  it('redeploys under load with no failed request: a new Swarm service, the routes switched to it, then the old one drained and removed', async () => {
    const set = await admin('POST', `/api/services/${serviceId}/env`, { key: 'VERSION', value: '2' });
    expect(set.status, set.text).toBeLessThan(300);
    const load = new Load(caddy.httpPort, hostname);
    load.start();
    let second: Awaited<ReturnType<typeof deploy>>;
    const started = performance.now();
    try {
      second = await deploy(admin, serviceId, 240_000);
      // A moment on the new tasks alone, past the old service's removal.
      await new Promise((r) => setTimeout(r, 1_000));
    } finally {
      await load.stop();
    }
    timings['redeploy under load'] = Math.round(performance.now() - started);
    console.log(`cluster-servers: redeploy under load: ${load.total} requests, ${load.failures.length} failed`, load.failures.slice(0, 10));
    expect(second.deployment.status, second.logs.join('\n')).toBe('succeeded');
    expect(load.failures).toEqual([]);
    expect(load.total).toBeGreaterThan(50);
    // Both versions served during the run: the switch happened under the load.
    expect([...load.versions.keys()].sort()).toEqual(['1', '2']);
    const logs = second.logs.join('\n');
    expect(logs).toMatch(/Routes switched to the 3 task\(s\)/);
    // Removed only after the routes left it.
    expect(logs.indexOf('Removing the earlier Swarm service')).toBeGreaterThan(logs.indexOf('Routes switched to the 3 task(s)'));
    // The placement set before it is the new Swarm service's constraint.
    const constraints = await cluster.docker(
      'm',
      'service',
      'inspect',
      '--format',
      '{{json .Spec.TaskTemplate.Placement.Constraints}}',
      second.deployment.containerName!,
    );
    expect(JSON.parse(constraints)).toEqual(['node.labels.zone!=b']);
    const services = await cluster.docker('m', 'service', 'ls', '--filter', `label=slipway.service=${serviceId}`, '--format', '{{.Name}}');
    expect(services.split('\n').filter(Boolean)).toEqual([second.deployment.containerName]);
    const answer = await requestVia(caddy.httpPort, hostname);
    expect(answer?.text).toMatch(/^version 2 /);
    serviceName = second.deployment.containerName!;
  }, 300_000);

  it('loses a worker under load: failures end once its tasks leave the routes, its tasks run on the others within 30 s, the server shows down with an event', async () => {
    const name = (
      await cluster.docker('m', 'service', 'ls', '--filter', `label=slipway.service=${serviceId}`, '--format', '{{.Name}}')
    ).trim();
    const w1Address = cluster.node('w1').address;
    /** The upstreams the hostname's route files name now (Caddy reads them per request). */
    const routed = (): string[] => {
      const root = path.join(server.dataDir, 'caddy-routes');
      return readdirSync(root, { withFileTypes: true })
        .filter((d) => d.isDirectory())
        .flatMap((d) =>
          ['_upstream', '_replicas'].flatMap((dir) => {
            const at = path.join(root, d.name, dir, hostname);
            return existsSync(at) ? readdirSync(at).map((f) => f.replace(/^\d+-/, '')) : [];
          }),
        );
    };
    expect(routed().filter((u) => u.startsWith(`${w1Address}:`))).toHaveLength(1);
    const load = new Load(caddy.httpPort, hostname);
    load.start();
    const since: Record<string, number> = {};
    let killedAt = 0;
    try {
      // A moment of load with every node up: nothing fails.
      await new Promise((r) => setTimeout(r, 2_000));
      expect(load.failures).toEqual([]);
      killedAt = Date.now();
      // The routes and the rest are watched while the kill's script runs (it takes seconds on a loaded machine).
      const killed = cluster.kill('w1').then(
        () => void (since['kill done'] = Date.now() - killedAt),
        (error: Error) => error,
      );
      const deadline = killedAt + 60_000;
      while (Date.now() < deadline && Object.keys(since).length < 5) {
        const at = () => Date.now() - killedAt;
        if (!since['server down'] && (await admin('GET', `/api/servers/${w1.id}`)).json.server?.state === 'down')
          since['server down'] = at();
        const upstreams = routed();
        if (!since['routes without w1'] && upstreams.length > 0 && !upstreams.some((u) => u.startsWith(`${w1Address}:`)))
          since['routes without w1'] = at();
        const tasks = (
          await cluster.docker('m', 'service', 'ps', name, '--filter', 'desired-state=running', '--format', '{{.Node}} {{.CurrentState}}')
        )
          .split('\n')
          .filter((line) => / Running /.test(line));
        if (!since['3 tasks on m and w2'] && tasks.length === 3 && tasks.every((line) => !line.startsWith('w1 ')))
          since['3 tasks on m and w2'] = at();
        if (
          since['3 tasks on m and w2'] &&
          !since['routes name the 3 tasks'] &&
          upstreams.length === 3 &&
          !upstreams.some((u) => u.startsWith(`${w1Address}:`))
        )
          since['routes name the 3 tasks'] = at();
        await new Promise((r) => setTimeout(r, 250));
      }
      const failedKill = await killed;
      if (failedKill) throw failedKill;
      // Load on the new tasks alone for a while: none of it may fail.
      await new Promise((r) => setTimeout(r, 3_000));
    } finally {
      await load.stop();
    }
    const sent = load.failedSentAt.map((t) => Math.round(t - killedAt)).sort((a, b) => a - b);
    const figures = {
      requests: load.total,
      failed: load.failures.length,
      // From the kill's call: the script freezes the node first, after its own start (slow on a loaded machine).
      'failed requests sent (ms after the kill)': sent,
      'first to last failed request sent (ms)': sent.length ? sent[sent.length - 1]! - sent[0]! : null,
      ...Object.fromEntries(Object.entries(since).map(([k, v]) => [`${k} (ms after the kill)`, Math.round(v)])),
    };
    console.log(`cluster-servers: w1 lost under load: ${JSON.stringify(figures)}`, load.failures.slice(0, 10));
    console.log(
      server
        .output()
        .split('\n')
        .filter((l) => /do not answer|check of the cluster|server down|reconcile failed/.test(l))
        .slice(-8)
        .join('\n'),
    );
    timings['w1 down after its kill'] = Math.round(since['server down'] ?? -1);
    // The bounds: the server down, every task running again on the other nodes within 30 s, and routed.
    expect(since['server down'], server.output().slice(-3000)).toBeDefined();
    expect(since['3 tasks on m and w2']).toBeLessThan(30_000);
    expect(since['routes without w1']).toBeDefined();
    expect(since['routes name the 3 tasks']).toBeLessThan(30_000);
    // Only requests sent before the routes left w1 may fail; none sent after.
    for (const at of load.failedSentAt) expect(at - killedAt).toBeLessThan(since['routes without w1']!);
    expect(load.total).toBeGreaterThan(50);
    // The event, recorded for the install: the event stream replays it.
    const events = await readSse(`${server.url}/api/events/stream`, {
      token: server.token,
      headers: { 'last-event-id': '0' },
      until: (f) => f.some((x) => x.event === 'event' && x.data.type === 'server.down' && JSON.stringify(x.data).includes(w1.id)),
    });
    expect(events.frames.some((x) => x.event === 'event' && x.data.type === 'server.down' && JSON.stringify(x.data).includes(w1.id))).toBe(
      true,
    );
    // Back: the server ready again (it rejoins by itself).
    await cluster.revive('w1');
    await waitForServer(w1.id, (s) => s.state === 'ready', 60_000);
  }, 240_000);

  it('drains a worker running a replica under load with no failed request: its task leaves the routes before Swarm moves it', async () => {
    // Not drained: refused.
    expectErrorShape(await admin('DELETE', `/api/servers/${w2Id}`), 409, 'remove before drain');
    const live = async () =>
      (
        await cluster.docker(
          'm',
          'service',
          'ps',
          serviceName,
          '--filter',
          'desired-state=running',
          '--format',
          '{{.Node}} {{.CurrentState}}',
        )
      )
        .split('\n')
        .filter((line) => line.includes(' Running'))
        .map((line) => line.split(' ')[0]!);
    expect(await live()).toContain('w2');
    const load = new Load(caddy.httpPort, hostname);
    load.start();
    const started = performance.now();
    let hostsBefore = 0;
    let patchAt = 0;
    let patchedAt = 0;
    try {
      // The load reaches all three tasks before the drain.
      await waitFor(async () => (load.hosts.size >= 3 ? true : null), 30_000);
      hostsBefore = load.hosts.size;
      patchAt = Date.now();
      const drained = await admin('PATCH', `/api/servers/${w2Id}`, { availability: 'drain' });
      patchedAt = Date.now();
      expect(drained.status, drained.text).toBe(200);
      expect(drained.json.server.availability).toBe('drain');
      timings['drain PATCH'] = Math.round(performance.now() - started);
      // Swarm's replacement runs on m or w1, and the routes reach it: a fourth host answers.
      await waitFor(async () => {
        const nodes = await live();
        return nodes.length === 3 && !nodes.includes('w2') && load.hosts.size >= 4 ? true : null;
      }, 90_000);
      await new Promise((r) => setTimeout(r, 1_000));
    } finally {
      await load.stop();
    }
    timings['drain under load'] = Math.round(performance.now() - started);
    console.log(
      `cluster-servers: drain under load: ${load.total} requests, ${load.failures.length} failed, ${hostsBefore} tasks answered before and ${load.hosts.size} in all`,
      load.failures.slice(0, 10),
    );
    if (load.failures.length > 0)
      console.log(
        `cluster-servers: drain: failures from +${load.failedAt[0]! - patchAt} to +${load.failedAt.at(-1)! - patchAt} ms after the PATCH (answered after ${patchedAt - patchAt} ms)\n`,
        server
          .output()
          .split('\n')
          .filter((l) => /drain|rout/i.test(l))
          .slice(-30)
          .join('\n'),
      );
    expect(load.failures).toEqual([]);
    expect(load.total).toBeGreaterThan(50);
    expect(await cluster.docker('m', 'node', 'inspect', '--format', '{{.Spec.Availability}}', 'w2')).toBe('drain');
  }, 240_000);

  it('removes the drained worker: its engine leaves the swarm over mutual TLS', async () => {
    const added = { id: w2Id };
    // The service leaves first: a removed server runs no task.
    expect((await admin('DELETE', `/api/services/${serviceId}`)).status).toBeLessThan(300);
    // Already drained: the same again changes nothing.
    const drained = await admin('PATCH', `/api/servers/${added.id}`, { availability: 'drain' });
    expect(drained.status, drained.text).toBe(200);
    expect(drained.json.server.availability).toBe('drain');
    expect(await cluster.docker('m', 'node', 'inspect', '--format', '{{.Spec.Availability}}', 'w2')).toBe('drain');
    const removed = await admin('DELETE', `/api/servers/${added.id}`);
    expect(removed.status, removed.text).toBe(200);
    expect(await cluster.docker('w2', 'info', '--format', '{{.Swarm.LocalNodeState}}'), server.output().slice(-3000)).toBe('inactive');
    expect((await admin('GET', `/api/servers/${added.id}`)).status).toBe(404);
    const nodes = await cluster.docker('m', 'node', 'ls', '--format', '{{.Hostname}}');
    expect(nodes.split('\n')).not.toContain('w2');
  }, 180_000);

  it('refuses removing the last manager, bad input, and callers that are not the install’s admins', async () => {
    const { servers } = await ok(admin('GET', '/api/servers'), 'servers');
    const local = servers.find((s: Server) => s.local);
    expectErrorShape(await admin('DELETE', `/api/servers/${local.id}`), 409, 'last manager');
    const bad = await admin('PATCH', `/api/servers/${w1.id}`, { availability: 'sideways' });
    expectErrorShape(bad, 400, 'bad availability');
    const unknown = await admin('POST', '/api/servers', { name: 'x', colour: 'red' });
    expectErrorShape(unknown, 400, 'unknown field');
    expect(unknown.json.message).toContain('colour');
    const scoped = api(server.url, scopedKey);
    expectErrorShape(await scoped('GET', '/api/servers'), 403, 'project key reads servers');
    expectErrorShape(await scoped('POST', '/api/servers', { name: 'nope' }), 403, 'project key adds a server');
  }, 180_000);
});

/** 2 MB: the platform pushes it to its registry and the workers pull it in a moment (a Node image took most of the file's time). */
const APP_IMAGE = 'busybox:1';

async function waitFor<T>(probe: () => Promise<T | null>, timeoutMs: number): Promise<T> {
  const started = Date.now();
  for (;;) {
    const value = await probe();
    if (value !== null) return value;
    if (Date.now() - started > timeoutMs) throw new Error(`not within ${timeoutMs} ms\n${server.output().slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}
