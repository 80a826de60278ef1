import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { docker, provisionDocker } from '../helpers/docker.js';
import { startTestCluster, type TestCluster } from '../helpers/test-cluster.js';

/**
 * The test cluster harness itself (test/helpers/test-cluster.ts): a manager and two workers, each a
 * Docker engine in namespaces of its own, joined into a swarm; a 3-replica `dnsrr` service spread over
 * the three nodes and answering from each; a worker lost (SIGKILL of everything it runs), seen `down`
 * by the manager, its replica run again on the others; then everything removed, the host's engine
 * and network as they were. This file builds a cluster of its own (the harness is what it tests);
 * the other cluster tests share the run's cluster (sharedTestCluster). Step timings are printed.
 */
let cluster: TestCluster | undefined;
const timings: Record<string, number> = {};
const hostSwarm = () => docker('info', '--format', '{{.Swarm.LocalNodeState}}');
let hostSwarmBefore = '';
let hostNetworksBefore = '';

const timed = async <T>(label: string, step: () => Promise<T>): Promise<T> => {
  const started = performance.now();
  try {
    return await step();
  } finally {
    timings[label] = Math.round(performance.now() - started);
  }
};

/** Everything the harness names with the cluster's id on the host: namespaces, links, cgroups, its directory. */
function leftovers(id: string): string[] {
  const found: string[] = [];
  const netns = existsSync('/run/netns') ? readdirSync('/run/netns') : [];
  found.push(...netns.filter((n) => n.startsWith(`slwc-${id}-`)).map((n) => `netns ${n}`));
  const links = execFileSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' });
  if (links.includes(`slwc${id}`)) found.push(`link slwc${id}`);
  for (const controller of ['cpu', 'memory', 'pids', 'freezer', 'cpuset', 'blkio', 'devices', 'cpuacct', 'systemd']) {
    if (existsSync(`/sys/fs/cgroup/${controller}/slipway-cluster-${id}`)) found.push(`cgroup ${controller}/slipway-cluster-${id}`);
  }
  if (existsSync(`/tmp/slipway-cluster-${id}`)) found.push(`dir /tmp/slipway-cluster-${id}`);
  const mounts = execFileSync('cat', ['/proc/self/mountinfo'], { encoding: 'utf8' });
  if (mounts.includes(`slipway-cluster-${id}`)) found.push('a mount of the cluster on the host');
  return found;
}

beforeAll(async () => {
  await provisionDocker({ images: 'busybox' });
  hostSwarmBefore = await hostSwarm();
  hostNetworksBefore = await docker('network', 'ls', '--filter', 'driver=overlay', '--format', '{{.Name}}');
}, 15 * 60_000);

afterAll(async () => {
  if (cluster) await cluster.down();
  console.log(
    'cluster-harness timings (ms):',
    Object.entries(timings)
      .map(([step, ms]) => `${step} ${ms}`)
      .join('; '),
  );
}, 120_000);

it('builds a manager and two workers in namespaces, each its own engine, joined into one swarm', async () => {
  cluster = await timed('build (network, engines, swarm, busybox loaded)', () => startTestCluster({ images: ['busybox:1'] }));
  Object.assign(timings, cluster.timings);
  const c = cluster;
  const nodes = (await c.docker('m', 'node', 'ls', '--format', '{{.Hostname}}|{{.Status}}|{{.ManagerStatus}}')).split('\n').sort();
  expect(nodes).toEqual(['m|Ready|Leader', 'w1|Ready|', 'w2|Ready|']);
  // Each engine is its own: its own ID (key.json), its own data root, its own address.
  const ids = await Promise.all(c.nodes.map((n) => c.docker(n.name, 'info', '--format', '{{.ID}} {{.Swarm.NodeAddr}} {{.Name}}')));
  expect(new Set(ids.map((line) => line.split(' ')[0])).size).toBe(3);
  expect(ids.map((line) => line.split(' ').slice(1).join(' '))).toEqual(c.nodes.map((n) => `${n.address} ${n.name}`));
  // The host's engine is not part of it.
  expect(await hostSwarm()).toBe(hostSwarmBefore);
}, 240_000);

it('runs a 3-replica dnsrr service over the three nodes, every replica answering through the overlay', async () => {
  const c = cluster!;
  await timed('overlay network', () => c.docker('m', 'network', 'create', '--driver', 'overlay', '--attachable', 'smoke'));
  await timed('service running on 3 nodes', async () => {
    await c.docker(
      'm',
      'service',
      'create',
      '--detach',
      '--quiet',
      '--name',
      'web',
      '--replicas',
      '3',
      '--replicas-max-per-node',
      '1',
      '--endpoint-mode',
      'dnsrr',
      '--network',
      'smoke',
      // Each replica answers with its node's name.
      '--hostname',
      '{{.Node.Hostname}}',
      'busybox:1',
      'sh',
      '-c',
      'mkdir -p /www && hostname > /www/index.html && exec httpd -f -p 80 -h /www',
    );
    await waitFor(async () => (await running(c, 'web')).length === 3, 90_000, 'three running replicas');
  });
  expect((await running(c, 'web')).map((t) => t.node).sort()).toEqual(['m', 'w1', 'w2']);
  // From a container on the manager: the task addresses Docker's DNS gives for tasks.web, each asked over HTTP.
  const answers = await timed('each replica asked through the overlay', () => askEveryReplica(c));
  expect(answers.sort()).toEqual(['m', 'w1', 'w2']);
}, 180_000);

it('loses a worker: the manager marks it down and runs its replica on the others', async () => {
  const c = cluster!;
  // No more than one per node at first; now up to two, so the two nodes left can hold the three.
  await c.docker('m', 'service', 'update', '--detach', '--quiet', '--replicas-max-per-node', '2', 'web');
  await waitFor(async () => (await running(c, 'web')).length === 3, 60_000, 'three running replicas');
  const lost = 'w1';
  await timed('SIGKILL of w1 (engine, containerd, shims, containers)', () => c.kill(lost));
  const killedAt = performance.now();
  const downMs = await c.waitForNodeState(lost, 'down', 60_000);
  timings['w1 marked down after the kill'] = downMs;
  await waitFor(
    async () => {
      const tasks = await running(c, 'web');
      return tasks.length === 3 && tasks.every((t) => t.node !== lost);
    },
    60_000,
    'three replicas running off the lost node',
  );
  timings['3 replicas running again after the kill'] = Math.round(performance.now() - killedAt);
  const nodes = (await running(c, 'web')).map((t) => t.node).sort();
  expect(new Set(nodes)).toEqual(new Set(['m', 'w2']));
  expect((await askEveryReplica(c)).sort()).toEqual(nodes);
  // The bound: stateless tasks run again on the others within 30 s.
  expect(timings['3 replicas running again after the kill']).toBeLessThan(30_000);
}, 180_000);

it('tears everything down: no namespace, link, cgroup, mount or directory of the cluster is left, the host engine as it was', async () => {
  const c = cluster!;
  await timed('teardown', () => c.down());
  cluster = undefined;
  expect(leftovers(c.id)).toEqual([]);
  expect(await hostSwarm()).toBe(hostSwarmBefore);
  expect(await docker('network', 'ls', '--filter', 'driver=overlay', '--format', '{{.Name}}')).toBe(hostNetworksBefore);
  // No process of the cluster is left either (its engines ran from the script with the cluster's id in argv).
  const processes = execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' });
  expect(processes.split('\n').filter((p) => p.includes(`slipway-cluster-${c.id}`))).toEqual([]);
}, 120_000);

async function running(c: TestCluster, service: string): Promise<Array<{ node: string; state: string }>> {
  const out = await c.docker('m', 'service', 'ps', service, '--filter', 'desired-state=running', '--format', '{{.Node}}|{{.CurrentState}}');
  return out
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [node = '', state = ''] = line.split('|');
      return { node, state };
    })
    .filter((t) => t.state.startsWith('Running'));
}

/** Asks each address of `tasks.web` once, from a throwaway container on the manager attached to the overlay. */
async function askEveryReplica(c: TestCluster): Promise<string[]> {
  const script =
    "for a in $(nslookup tasks.web | awk '/^Address: / && $2 !~ /:/ { print $2 }'); do " +
    'printf "GET / HTTP/1.0\\r\\n\\r\\n" | nc -w 5 "$a" 80 | tail -n 1; done';
  // Docker's DNS can lag a task start by a moment: ask until every running replica has an address.
  let answers: string[] = [];
  const expected = (await running(c, 'web')).length;
  await waitFor(
    async () => {
      const out = await c.docker('m', 'run', '--rm', '--network', 'smoke', 'busybox:1', 'sh', '-c', script);
      answers = out.split('\n').filter(Boolean);
      return answers.length === expected;
    },
    30_000,
    `${expected} answers from tasks.web`,
  );
  return answers;
}

async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const started = Date.now();
  while (!(await check())) {
    if (Date.now() - started > timeoutMs) throw new Error(`not seen within ${timeoutMs} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
