import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { deploy, waitForDeployment } from '../helpers/deployments.js';
import { provisionDocker } from '../helpers/docker.js';
import { ok } from '../helpers/http.js';
import { api, startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { readSse } from '../helpers/sse.js';
import { OpenAiStandin } from '../standins/ai-standins.js';
import {
  joinThroughApi,
  leaveHarnessSwarm,
  managerPlatformEnv,
  removeManagerLeftovers,
  sharedTestCluster,
  type TestCluster,
} from '../helpers/test-cluster.js';
import { openTerminal } from '../helpers/terminal-socket.js';
import { until } from '../helpers/until.js';

/**
 * Logs, metrics and a terminal of a service whose task runs on a worker node (issue 31; docs/cluster.md, "Logs,
 * metrics and terminals on any server"), through the platform's HTTP API, on the run's shared test cluster: the
 * platform runs on the manager's engine, takes the harness's swarm as its cluster, and joins w1 with its own join
 * command (w1 leaves the harness's swarm first: the command joins a machine that is in none), so w1's engine
 * answers the platform over mutual TLS. The service is placed on w1 by a label only w1 has. AI diagnostics read
 * the same logs and metrics; a rollback (a deployment on the same path) runs there too.
 */
const suffix = randomBytes(3).toString('hex');
const prefix = `slwt${suffix}`;
let cluster: (TestCluster & { release(): void }) | undefined;
let server: ServerProcess | undefined;
let admin: ReturnType<typeof api>;
let serviceId: string | undefined;
let environmentId: string | undefined;

/** The id of the service's one running task container on w1 (what `hostname` prints inside it, shortened). */
async function containerOnW1(c: TestCluster): Promise<string> {
  const list = async () =>
    (await c.docker('w1', 'ps', '-q', '--no-trunc', '--filter', `label=slipway.service=${serviceId}`)).split('\n').filter(Boolean);
  // An earlier deployment's task may still be stopping for a moment.
  return until(
    async () => {
      const ids = await list();
      return ids.length === 1 ? ids[0] : null;
    },
    30_000,
    'one task container on w1',
    250,
  );
}

beforeAll(async () => {
  await provisionDocker({ images: 'busybox,registry' });
  const { runId, ownerPid } = inject('slipwayClusterRun');
  cluster = await sharedTestCluster(runId, ownerPid);
  const c = cluster;
  await Promise.all([c.loadImages(['busybox:1', 'registry:2'], ['m'])]);
  // w1 leaves the harness's swarm: the platform's join command takes a machine that is in none.
  await leaveHarnessSwarm(c, 'w1');
  server = await startServerProcess({
    BUILD_CONCURRENCY: '1',
    STOP_GRACE_SECONDS: '1',
    HEALTH_TIMEOUT_MS: '60000',
    METRICS_INTERVAL_MS: '1000',
    RESOURCE_PREFIX: prefix,
    ...(await managerPlatformEnv(c)),
    CLUSTER_MONITOR_INTERVAL_MS: '500',
  });
  admin = api(server.url, server.token);
  await joinThroughApi(c, admin, 'w1', { name: `w1-${suffix}`, labels: { tasks: suffix } });
}, 15 * 60_000);

afterAll(async () => {
  const c = cluster;
  if (serviceId) await admin('DELETE', `/api/services/${serviceId}`).catch(() => {});
  await server?.dispose();
  if (c) {
    await removeManagerLeftovers(c, prefix, environmentId);
    c.release();
  }
}, 120_000);

it("a service's task on a worker: its runtime logs, metrics, AI diagnostics and a terminal through the API; then a rollback there", async () => {
  const c = cluster!;
  const project = (await ok(admin('POST', '/api/projects', { name: `tasks-${suffix}` }), 'project')).project;
  const created = await ok(
    admin('POST', `/api/projects/${project.id}/services`, {
      name: 'ticker',
      repoUrl: 'container-image',
      containerImage: 'busybox:1',
      runtimeMode: 'worker',
      startCommand: 'i=0; while true; do echo "tick $i $VERSION $(hostname)"; i=$((i+1)); sleep 0.5; done',
      env: [{ key: 'VERSION', value: 'v1' }],
      placement: { must: { tasks: suffix } },
    }),
    'service',
  );
  serviceId = created.service.id as string;
  environmentId = created.service.environmentId as string;
  const first = await deploy(admin, serviceId, 240_000);
  expect(first.deployment.status, first.logs.join('\n')).toBe('succeeded');
  expect(first.deployment.containerName).toBe(`${prefix}-${serviceId}-${first.deployment.id}`);
  const container = await containerOnW1(c);
  const hostname = container.slice(0, 12);

  // Runtime logs: the snapshot and then lines as they come, from the task's container on w1.
  const logs = await readSse(`${server!.url}/api/services/${serviceId}/runtime-logs/stream`, {
    token: server!.token,
    until: (frames) => frames.some((f) => f.event === 'log'),
    timeoutMs: 20_000,
  });
  expect(logs.status).toBe(200);
  const snapshot = logs.frames.find((f) => f.event === 'snapshot');
  expect(snapshot?.data.length, JSON.stringify(logs.frames)).toBeGreaterThan(0);
  expect(snapshot?.data[0].line).toMatch(new RegExp(`^tick \\d+ v1 ${hostname}$`));
  const live = logs.frames.find((f) => f.event === 'log');
  expect(live?.data.line).toMatch(new RegExp(`^tick \\d+ v1 ${hostname}$`));

  // Metrics: the task sampled from w1's engine.
  await until(
    async () => {
      const { json } = await admin('GET', `/api/services/${serviceId}/metrics`);
      return json.running === true && json.current.memoryUsedBytes > 0;
    },
    30_000,
    'metrics of the task on w1',
    500,
  );

  // AI diagnostics read the same runtime logs and metrics: the task's lines from w1 are in what the model is sent.
  const openai = await new OpenAiStandin().start();
  try {
    const connected = await admin('PUT', '/api/settings', {
      aiProviders: [{ providerId: 'gpt', kind: 'openai', baseUrl: openai.baseUrl, apiKey: openai.apiKey }],
    });
    expect(connected.status, connected.text).toBe(200);
    const diagnosed = await admin('POST', `/api/deployments/${first.deployment.id}/diagnostics`, { providerId: 'gpt', model: 'gpt-e2e' });
    expect(diagnosed.status, diagnosed.text).toBe(200);
    const sent = JSON.stringify(openai.requests[0]!.body);
    expect(sent).toMatch(new RegExp(`tick \\d+ v1 ${hostname}`));
    expect(sent).toContain('Latest resource sample');
  } finally {
    await openai.close();
  }

  // A terminal: exec in the task's container on w1, over its engine's mutual TLS.
  const terminal = await openTerminal(server!.url, `/api/ws/services/${serviceId}/terminal`, server!.token);
  terminal.send('echo "on-$(hostname)-$((6*7))"\n');
  await terminal.waitFor(`on-${hostname}-42`);
  terminal.send('exit 3\n');
  expect(await terminal.closed).toBe(1000);
  expect(terminal.controls.find((m) => m.type === 'exit')).toEqual({ type: 'exit', code: 3 });

  // A terminal closed by its client ends its processes on w1 too (the platform cannot signal w1's PIDs itself).
  const closing = await openTerminal(server!.url, `/api/ws/services/${serviceId}/terminal`, server!.token);
  closing.send('sleep 4747\n');
  await until(async () => (await c.docker('w1', 'top', container)).includes('sleep 4747'), 15_000, 'sleep running on w1', 100);
  closing.ws.terminate();
  await until(async () => !(await c.docker('w1', 'top', container)).includes('sleep 4747'), 15_000, 'sleep ended on w1', 100);

  // A rollback is a deployment: v2 deployed, then back to v1, each a Swarm service on w1.
  expect((await admin('POST', `/api/services/${serviceId}/env`, { key: 'VERSION', value: 'v2' })).status).toBeLessThan(300);
  const second = await deploy(admin, serviceId, 240_000);
  expect(second.deployment.status, second.logs.join('\n')).toBe('succeeded');
  const rolled = await admin('POST', `/api/deployments/${first.deployment.id}/rollback`);
  expect(rolled.status, rolled.text).toBe(201);
  const back = await waitForDeployment(admin, rolled.json.deployment.id as string, 240_000);
  expect(back.deployment.status, back.logs.join('\n')).toBe('succeeded');
  expect(back.deployment.containerName).toBe(`${prefix}-${serviceId}-${back.deployment.id}`);
  await containerOnW1(c);
}, 600_000);
