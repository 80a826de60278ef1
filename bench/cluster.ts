/**
 * The cluster (issue 31; docs/cluster.md): a deploy to live of a service placed on a worker against the same deploy
 * placed on the manager, in the same run, and the control plane's memory with 3 servers and 50 services.
 *
 * One test cluster of namespaced engines (test/helpers/test-cluster.ts: m, w1, w2; the host's engine is never put
 * in swarm mode), Caddy on the host and the platform as `npm start` runs it, its engine the manager's. The two
 * workers join with the API's join command, as in test/e2e/cluster-servers.test.ts. Two repository services, one
 * placed `role: manager`, one `must: {bench: worker}` (w1's label); each round publishes a new version of each
 * (a new 1 MB layer: the push to the platform's registry and the node's pull are in every deploy) and times, from
 * the POST of the deployment to the first 200 of the new version through Caddy. The ratio is worker / manager,
 * medians, target at most 1.3x. Then BENCH_SERVICES (50) services are created (BENCH_DEPLOYED of them deployed as
 * one-replica Swarm services, with a domain, besides the two timed ones) and the platform's RSS, after a few reconcile and monitor passes, is
 * given beside the RSS it had just after its start (one server, no service).
 * Run: npm run bench:cluster (BENCH_SIZE=tiny: 1 round, 5 services, none deployed but the two timed).
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { requestVia, startCaddy, type CaddyProcess } from '../test/helpers/caddy.js';
import { waitForDeployment } from '../test/helpers/deployments.js';
import { provisionDocker } from '../test/helpers/docker.js';
import { startGitServer } from '../test/helpers/git-server.js';
import { api, startServerProcess, type ServerProcess } from '../test/helpers/server-process.js';
import { managerPlatformEnv, startTestCluster, type TestCluster } from '../test/helpers/test-cluster.js';
import { median, recordRows, rowsTable, rssMb, TINY, type BenchRow } from './bench-support.js';
import { runBench } from './run-bench.js';

const run = promisify(execFile);
const ROUNDS = TINY ? 1 : Number(process.env.BENCH_ROUNDS ?? 3);
const SERVICES = TINY ? 5 : Number(process.env.BENCH_SERVICES ?? 50);
/** Of them, running on the cluster: the two timed ones and this many more. */
const DEPLOYED = TINY ? 0 : Number(process.env.BENCH_DEPLOYED ?? 8);
const RATIO_TARGET = 1.3;

type Call = ReturnType<typeof api>;

/** A busybox httpd app answering `message` on every path (the health check's too); the nonce's layer makes each build new. */
function app(nonce: string, message: string): Record<string, string> {
  return {
    Dockerfile: [
      'FROM busybox:1',
      // 1 MB of its own per version: a layer to push and to pull.
      `RUN head -c 1048576 /dev/urandom > /blob && echo ${nonce} > /nonce`,
      'COPY www/ /www/',
      'CMD ["httpd", "-f", "-p", "3000", "-h", "/www"]',
      '',
    ].join('\n'),
    'www/index.html': `${message}\n`,
  };
}

async function ok(call: Call, method: string, path: string, body?: unknown): Promise<any> {
  const res = await call(method, path, body);
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${res.text}`);
  return res.json;
}

/** Adds a server and runs its join command as root on the machine (the node's namespace), then waits until it is ready. */
async function join(cluster: TestCluster, call: Call, node: string, labels: Record<string, string>): Promise<void> {
  const { server, join: command } = await ok(call, 'POST', '/api/servers', { name: `bench-${node}`, labels });
  const { argvPrefix, env } = cluster.joinEnvironment(node);
  await run(argvPrefix[0]!, [...argvPrefix.slice(1), 'bash', '-c', command.command], {
    env: { ...process.env, ...env },
    timeout: 180_000,
    maxBuffer: 4 * 1024 * 1024,
  });
  const deadline = Date.now() + 60_000;
  while ((await ok(call, 'GET', `/api/servers/${server.id}`)).server.state !== 'ready') {
    if (Date.now() > deadline) throw new Error(`${node} not ready within 60 s`);
    await sleep(250);
  }
}

async function until200(caddy: CaddyProcess, hostname: string, message: string, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const res = await requestVia(caddy.httpPort, hostname, '/', 1000);
    if (res?.status === 200 && res.text.includes(message)) return;
    if (performance.now() > deadline) throw new Error(`${hostname} never answered ${message}`);
    await sleep(20);
  }
}

async function main(): Promise<void> {
  await provisionDocker();
  await provisionDocker({ images: 'registry' });
  await provisionDocker({ images: 'busybox' });
  const git = await startGitServer();
  let cluster: TestCluster | undefined;
  let caddy: CaddyProcess | undefined;
  let server: ServerProcess | undefined;
  try {
    cluster = await startTestCluster({ nodes: ['m', 'w1', 'w2'], swarm: false, images: ['registry:2'] });
    // Builds run on the manager: its base image is the manager's only, the workers pull each version from the registry.
    await cluster.loadImages(['busybox:1'], ['m']);
    caddy = await startCaddy();
    server = await startServerProcess({
      ...caddy.platformEnv,
      BUILD_CONCURRENCY: '1',
      STOP_GRACE_SECONDS: '1',
      HEALTH_TIMEOUT_MS: '60000',
      ...(await managerPlatformEnv(cluster)),
      GIT_BASE_URL: git.url,
      CLUSTER_MONITOR_INTERVAL_MS: '1000',
    });
    const pid = server.child.pid!;
    const call = api(server.url, server.token);
    await ok(call, 'GET', '/api/servers');
    await sleep(1000);
    const rssAtStart = rssMb(pid);

    await join(cluster, call, 'w1', { bench: 'worker' });
    await join(cluster, call, 'w2', {});
    const project = (await ok(call, 'POST', '/api/projects', { name: `bench-cluster-${randomBytes(3).toString('hex')}` })).project;
    const suffix = randomBytes(4).toString('hex');
    const targets = {
      manager: { placement: { role: 'manager' } },
      worker: { placement: { must: { bench: 'worker' } } },
    } as const;
    const services: Record<string, { id: string; hostname: string; repo: string }> = {};
    for (const [name, { placement }] of Object.entries(targets)) {
      const repo = `bench/${name}-${suffix}`;
      await git.addRepo(repo, app(randomBytes(8).toString('hex'), `${name} start`));
      const { service } = await ok(call, 'POST', `/api/projects/${project.id}/services`, {
        name,
        repoFullName: repo,
        internalPort: 3000,
        placement,
      });
      const hostname = `${name}-${suffix}.bench.test`;
      await ok(call, 'POST', `/api/services/${service.id}/domains`, { hostname });
      services[name] = { id: service.id, hostname, repo };
    }

    const times: Record<string, number[]> = { manager: [], worker: [] };
    // Round 0 is each service's first deployment (the base image's layers cross once); the rounds after are timed.
    // The tiny size times the first: its figures prove that it runs, not how fast.
    for (let round = TINY ? 1 : 0; round <= ROUNDS; round++) {
      // Alternated, so that neither side always goes first on a machine whose load drifts.
      const order = round % 2 ? ['worker', 'manager'] : ['manager', 'worker'];
      for (const name of order) {
        const { id, hostname, repo } = services[name]!;
        const message = `${name} ${round} ${randomBytes(3).toString('hex')}`;
        await git.addRepo(repo, app(randomBytes(8).toString('hex'), message));
        const started = performance.now();
        const { deployment } = await ok(call, 'POST', `/api/services/${id}/deployments`);
        await until200(caddy, hostname, message, 240_000);
        const elapsed = performance.now() - started;
        const done = await waitForDeployment(call, deployment.id, 240_000);
        if (done.deployment.status !== 'succeeded') throw new Error(`${name}: ${done.logs.join('\n')}`);
        if (round === 0) continue;
        // Where it ran: the placement held (one task, on the manager or on w1).
        const nodes = await cluster.docker(
          'm',
          'service',
          'ps',
          done.deployment.containerName!,
          '--filter',
          'desired-state=running',
          '--format',
          '{{.Node}}',
        );
        const expected = name === 'manager' ? 'm' : 'w1';
        if (nodes.trim() !== expected) throw new Error(`${name}'s task ran on ${nodes.trim() || 'nothing'}, not ${expected}`);
        times[name]!.push(elapsed);
      }
    }

    // The control plane with 3 servers and SERVICES services (DEPLOYED of them running on the cluster).
    for (let i = 0; i < SERVICES - 2; i++) {
      const { service } = await ok(call, 'POST', `/api/projects/${project.id}/services`, {
        name: `s${i}`,
        repoUrl: 'container-image',
        containerImage: 'busybox:1',
        startCommand: 'mkdir -p /www && echo ok > /www/index.html && exec httpd -f -p 3000 -h /www',
        internalPort: 3000,
      });
      if (i < DEPLOYED) {
        await ok(call, 'POST', `/api/services/${service.id}/domains`, { hostname: `s${i}-${suffix}.bench.test` });
        const { deployment } = await ok(call, 'POST', `/api/services/${service.id}/deployments`);
        const done = await waitForDeployment(call, deployment.id, 240_000);
        if (done.deployment.status !== 'succeeded') throw new Error(`s${i}: ${done.logs.join('\n')}`);
      }
    }
    // A few reconcile (10 s) and monitor passes over all of them.
    await sleep(TINY ? 3_000 : 25_000);
    await ok(call, 'GET', '/api/servers');
    const rss = rssMb(pid);

    const workerMs = median(times.worker!);
    const managerMs = median(times.manager!);
    const ratio = workerMs / managerMs;
    const rows: BenchRow[] = [
      {
        measure: `deploy to live on a worker vs the manager (ms, median of ${ROUNDS})`,
        value: workerMs.toFixed(0),
        baseline: managerMs.toFixed(0),
        ratio,
        target: `<= ${RATIO_TARGET}x`,
        met: ratio <= RATIO_TARGET,
      },
      {
        measure: `control plane RSS, 3 servers + ${SERVICES} services (MiB)`,
        value: rss.toFixed(0),
        baseline: rssAtStart.toFixed(0),
        ratio: rss / rssAtStart,
        target: 'info',
        met: null,
      },
    ];
    recordRows('cluster', rows);
    console.log(
      `\nThe cluster: a deploy to live (POST to the first 200 of the new version through Caddy, registry push and pull included) placed on a worker against the same on the manager; ${SERVICES} services, ${DEPLOYED + 2} of them running on the cluster; load average ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}`,
    );
    console.log(rowsTable(rows, 'manager / at start'));
    console.log(
      `worker rounds (ms): ${times.worker!.map((t) => t.toFixed(0)).join(', ')}; manager rounds (ms): ${times.manager!.map((t) => t.toFixed(0)).join(', ')}`,
    );
  } finally {
    await server?.dispose().catch(() => {});
    await caddy?.stop().catch(() => {});
    await cluster?.down().catch(() => {});
    await git.close();
  }
}

await runBench(main, 30 * 60_000);
