import { randomBytes } from 'node:crypto';
import Docker from 'dockerode';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { DockerSwarmServices } from '../../adapters/docker/swarm.services.js';
import { startSwarmService, taskUpstreams } from '../../src/cluster/swarm-rollout.js';
import type { SwarmServiceSpec } from '../../src/cluster/swarm-services.port.js';
import { provisionDocker } from '../helpers/docker.js';
import { sharedTestCluster, type TestCluster } from '../helpers/test-cluster.js';
import { until } from '../helpers/until.js';

/**
 * Replicas as Swarm services on the run's shared test cluster (m, w1, w2), through the platform's adapter and
 * rollout use case (adapters/docker/swarm.services.ts, src/cluster/swarm-rollout.ts): a deployment's service of 3
 * dnsrr replicas over the nodes, each task address answering from a container on the manager attached to the
 * overlay; a next deployment's service whose health check fails fails its start, the serving one untouched; a
 * scale by replicas, then a healthy next deployment's service started beside it. Through the platform's deploy
 * pipeline and Caddy: test/e2e/cluster-servers.test.ts.
 */
let cluster: (TestCluster & { release(): void }) | undefined;
let swarm: DockerSwarmServices;
const suffix = randomBytes(3).toString('hex');
const network = `slipway-swt-${suffix}`;
const names: string[] = [];
const nameOf = (deploymentId: string) => `slipway-swt-${suffix}-${deploymentId}`;
const fast = { deadlineMs: 60_000, pollMs: 250 };

function spec(deploymentId: string, healthy = true, replicas = 3): SwarmServiceSpec {
  names.push(nameOf(deploymentId));
  return {
    name: nameOf(deploymentId),
    serviceId: `swt${suffix}`,
    deploymentId,
    image: 'busybox:1',
    registryAuth: null,
    // The test's app: each replica answers with its deployment and its node.
    command: ['sh', '-c', `mkdir -p /www && echo "${deploymentId} $(hostname)" > /www/index.html && exec httpd -f -p 80 -h /www`],
    env: {},
    port: 80,
    replicas,
    network,
    publish: false,
    constraints: [],
    resources: {},
    health: {
      command: healthy ? ['test', '-f', '/www/index.html'] : ['false'],
      intervalMs: 1000,
      timeoutMs: 5000,
      retries: 2,
      startPeriodMs: 0,
    },
    monitorMs: 2000,
    stopGraceMs: 1000,
  };
}

/** Each upstream asked over HTTP from a container on the manager, on the service's attachable overlay. */
async function ask(c: TestCluster, upstreams: string[]): Promise<string[]> {
  const script = upstreams.map((u) => `printf "GET / HTTP/1.0\\r\\n\\r\\n" | nc -w 5 ${u.replace(':', ' ')} | tail -n 1;`).join(' ');
  const out = await c.docker('m', 'run', '--rm', '--network', network, 'busybox:1', 'sh', '-c', script);
  return out.split('\n').filter(Boolean);
}

beforeAll(async () => {
  await provisionDocker({ images: 'busybox' });
  const { runId, ownerPid } = inject('slipwayClusterRun');
  cluster = await sharedTestCluster(runId, ownerPid);
  await cluster.loadImages(['busybox:1']);
  swarm = new DockerSwarmServices(new Docker({ socketPath: cluster.manager.socket }));
}, 15 * 60_000);

afterAll(async () => {
  if (cluster) {
    for (const name of names) await swarm.remove(name).catch(() => {});
    // The network goes once the tasks are gone.
    for (let i = 0; i < 40; i++) {
      if (
        await cluster.docker('m', 'network', 'rm', network).then(
          () => true,
          () => false,
        )
      )
        break;
      await new Promise((r) => setTimeout(r, 250));
    }
    cluster.release();
  }
}, 60_000);

it('runs 3 dnsrr replicas over the nodes, each reached at its task address from the manager', async () => {
  const c = cluster!;
  const upstreams = await startSwarmService(swarm, spec('d1'), fast);
  expect(upstreams).toHaveLength(3);
  const tasks = (await swarm.tasks(nameOf('d1'), network)).filter((t) => t.state === 'running');
  expect(new Set(tasks.map((t) => t.nodeId)).size).toBeGreaterThanOrEqual(2);
  const answers = await ask(c, upstreams);
  expect(answers).toHaveLength(3);
  expect(answers.every((a) => a.startsWith('d1 '))).toBe(true);
  expect((await swarm.list(`swt${suffix}`)).map((s) => s.name)).toEqual([nameOf('d1')]);
}, 90_000);

it("a next deployment's service whose health check fails fails its start; the serving service is untouched", async () => {
  const c = cluster!;
  const before = taskUpstreams(await swarm.tasks(nameOf('d1'), network), 80, 'd1');
  await expect(startSwarmService(swarm, spec('d2', false), fast)).rejects.toThrow(/failed before it served/);
  await swarm.remove(nameOf('d2'));
  const after = taskUpstreams(await swarm.tasks(nameOf('d1'), network), 80, 'd1');
  expect(after).toEqual(before);
  expect((await ask(c, after)).every((a) => a.startsWith('d1 '))).toBe(true);
}, 90_000);

it('scaling by replicas follows; a healthy next service starts beside the serving one, both listed oldest first', async () => {
  const c = cluster!;
  await swarm.scale(nameOf('d1'), 1);
  await until(async () => taskUpstreams(await swarm.tasks(nameOf('d1'), network), 80, 'd1').length === 1, 30_000, 'one task upstream', 250);
  const upstreams = await startSwarmService(swarm, spec('d3', true, 1), fast);
  expect(upstreams).toHaveLength(1);
  expect((await ask(c, upstreams)).map((a) => a.split(' ')[0])).toEqual(['d3']);
  // The serving one still answers until its caller removes it.
  expect((await ask(c, taskUpstreams(await swarm.tasks(nameOf('d1'), network), 80, 'd1'))).map((a) => a.split(' ')[0])).toEqual(['d1']);
  expect((await swarm.list(`swt${suffix}`)).map((s) => s.name)).toEqual([nameOf('d1'), nameOf('d3')]);
}, 90_000);
