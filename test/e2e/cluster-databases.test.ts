import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { deploy, waitForDeployment } from '../helpers/deployments.js';
import { provisionDocker } from '../helpers/docker.js';
import { ok } from '../helpers/http.js';
import { api, startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { readSse } from '../helpers/sse.js';
import {
  joinThroughApi,
  leaveHarnessSwarm,
  managerHostPlatform,
  removeManagerLeftovers,
  sharedTestCluster,
  type TestCluster,
} from '../helpers/test-cluster.js';
import { openTerminal } from '../helpers/terminal-socket.js';
import { until } from '../helpers/until.js';

/**
 * A database on a worker (issue 31; docs/cluster.md, "Databases on the cluster"), through the platform's HTTP API on
 * the run's shared test cluster: a PostgreSQL service deployed on the manager, filled, then moved to w1
 * (POST /api/services/{id}/move: its volume copied while it is stopped, the downtime in the deployment's log), where
 * its administration, a backup and a restore, a terminal, its runtime logs and its metrics work as on the manager;
 * a service's Swarm task on w1 reaches it by name over the overlay, on w1 and back on the manager; a storage instance
 * moves too, and is unavailable while w1 is lost. The platform runs on
 * the manager's engine and joins w1 with its own join command, as cluster-tasks.test.ts does.
 */
const suffix = randomBytes(3).toString('hex');
const prefix = `slwd${suffix}`;
let cluster: (TestCluster & { release(): void }) | undefined;
let server: ServerProcess | undefined;
let admin: ReturnType<typeof api>;
let w1Id: string;
let localId: string;
let projectId: string | undefined;
let environmentId: string | undefined;

/** The ids of the service's containers on a node's engine (running ones only unless `all`). */
async function containersOn(c: TestCluster, node: string, serviceId: string, all = false): Promise<string[]> {
  const args = ['ps', '-q', '--no-trunc', ...(all ? ['-a'] : []), '--filter', `label=slipway.service=${serviceId}`];
  return (await c.docker(node, ...args)).split('\n').filter(Boolean);
}

beforeAll(async () => {
  await provisionDocker({ images: 'busybox,postgres,registry,storage' });
  const { runId, ownerPid } = inject('slipwayClusterRun');
  cluster = await sharedTestCluster(runId, ownerPid);
  const c = cluster;
  await c.loadImages(['busybox:1', 'registry:2', 'postgres:17', 'versity/versitygw:v1.8.0'], ['m']);
  // w1 leaves the harness's swarm: the platform's join command takes a machine that is in none.
  await leaveHarnessSwarm(c, 'w1');
  // On the manager's host (its network namespace): a database's plain container on m is reached as on a real host.
  const host = managerHostPlatform(c);
  server = await startServerProcess(
    {
      BUILD_CONCURRENCY: '1',
      STOP_GRACE_SECONDS: '2',
      HEALTH_TIMEOUT_MS: '120000',
      METRICS_INTERVAL_MS: '1000',
      RESOURCE_PREFIX: prefix,
      ...host.env,
      CLUSTER_MONITOR_INTERVAL_MS: '500',
    },
    undefined,
    { argvPrefix: host.argvPrefix },
  );
  admin = api(server.url, server.token);
  const servers = (await ok(admin('GET', '/api/servers'), 'servers')).servers as Array<{ id: string; local: boolean }>;
  localId = servers.find((s) => s.local)!.id;
  w1Id = await joinThroughApi(c, admin, 'w1', { name: `w1-${suffix}`, labels: { dbs: suffix } });
}, 15 * 60_000);

afterAll(async () => {
  const c = cluster;
  if (projectId) await admin('DELETE', `/api/projects/${projectId}`).catch(() => {});
  await server?.dispose();
  if (c) {
    for (const node of ['m', 'w1']) {
      const left = (await c.docker(node, 'ps', '-aq', '--filter', `name=${prefix}-`).catch(() => '')).split('\n').filter(Boolean);
      if (left.length) await c.docker(node, 'rm', '--force', ...left).catch(() => {});
      const volumes = (await c.docker(node, 'volume', 'ls', '-q', '--filter', `name=${prefix}-`).catch(() => ''))
        .split('\n')
        .filter(Boolean);
      if (volumes.length) await c.docker(node, 'volume', 'rm', '--force', ...volumes).catch(() => {});
    }
    await removeManagerLeftovers(c, prefix, environmentId);
    c.release();
  }
}, 180_000);

it(
  'a PostgreSQL database moved to a worker keeps its data; its administration, backups, restore, terminal, logs and metrics work there; it moves back',
  async () => {
    const c = cluster!;
    const project = (await ok(admin('POST', '/api/projects', { name: `dbs-${suffix}` }), 'project')).project;
    projectId = project.id;
    const created = await ok(
      admin('POST', `/api/projects/${project.id}/services`, { name: 'ledger', repoUrl: 'database', repoFullName: 'database:postgres' }),
      'database',
    );
    const dbId = created.service.id as string;
    environmentId = created.service.environmentId as string;
    const first = await deploy(admin, dbId, 5 * 60_000);
    expect(first.deployment.status, first.logs.join('\n')).toBe('succeeded');
    const sql = async (statement: string) => {
      const res = await admin('POST', `/api/services/${dbId}/database/query`, { sql: statement });
      expect(res.status, `${statement}: ${res.text}`).toBe(200);
      return res.json.rows as Array<Record<string, unknown>>;
    };
    await sql('CREATE TABLE ledger (id int PRIMARY KEY, note text)');
    await sql("INSERT INTO ledger SELECT g, 'row ' || g FROM generate_series(1, 500) g");
    expect((await admin('GET', `/api/services/${dbId}/overview`)).json.service.server.id).toBe(localId);

    // The move: a deployment on w1 that copies the volume while the server on the manager is stopped.
    const moved = await admin('POST', `/api/services/${dbId}/move`, { serverId: w1Id });
    expect(moved.status, moved.text).toBe(200);
    expect(moved.json).toMatchObject({ accepted: true, serviceId: dbId, from: { id: localId }, to: { id: w1Id } });
    const again = await admin('POST', `/api/services/${dbId}/move`, { serverId: w1Id });
    expect(again.status, again.text).toBe(409);
    const move = await waitForDeployment(admin, moved.json.deploymentId as string, 5 * 60_000);
    const moveLog = move.logs.join('\n');
    expect(move.deployment.status, moveLog).toBe('succeeded');
    expect(moveLog).toMatch(/Copying the volume .*-data from/);
    expect(moveLog).toMatch(/Copied [\d.]+ MB of/);
    expect(moveLog).toMatch(/unavailable for \d+ ms/);
    const downtime = Number(/unavailable for (\d+) ms/.exec(moveLog)![1]);
    console.log(`[cluster-databases] moved to w1; downtime ${downtime} ms (from the deployment's log)`);
    expect(moveLog).not.toContain((await revealPassword(dbId)) ?? '\u0000');

    const onW1 = await until(
      async () => ((await containersOn(c, 'w1', dbId)).length === 1 ? (await containersOn(c, 'w1', dbId))[0] : null),
      30_000,
      'the database on w1',
      250,
    );
    expect(await containersOn(c, 'm', dbId, true)).toEqual([]);
    await until(
      async () => (await admin('GET', `/api/services/${dbId}/overview`)).json.service.server?.id === w1Id,
      10_000,
      'placed on w1',
      250,
    );
    const servers = (await ok(admin('GET', `/api/servers/${w1Id}`), 'w1')).server;
    expect(servers.databases.map((d: { id: string }) => d.id)).toContain(dbId);
    // Its volume is on w1 only now.
    expect(await c.docker('w1', 'volume', 'ls', '-q', '--filter', `name=${prefix}-${dbId}-data`)).toContain(`${prefix}-${dbId}-data`);
    // The move removes the earlier volume once its deployment succeeded.
    await until(
      async () => (await c.docker('m', 'volume', 'ls', '-q', '--filter', `name=${prefix}-${dbId}-data`)) === '',
      30_000,
      'the volume on the manager removed',
      250,
    );

    // Administration on w1: the rows came along; a write lands there.
    expect(await sql('SELECT count(*)::int AS n FROM ledger')).toEqual([{ n: 500 }]);
    const tables = await ok(admin('GET', `/api/services/${dbId}/database/tables`), 'tables');
    expect(JSON.stringify(tables)).toContain('ledger');
    await sql("INSERT INTO ledger VALUES (501, 'written on w1')");

    // A backup and a restore, on w1's container.
    const started = await admin('POST', `/api/services/${dbId}/database/backups`, { storage: 'disk' });
    expect(started.status, started.text).toBe(201);
    const backupId = started.json.backup.id as string;
    const backup = await until(
      async () => {
        const list = (await admin('GET', `/api/services/${dbId}/database/backups`)).json.backups as Array<{ id: string; status: string }>;
        const found = list.find((b) => b.id === backupId);
        return found && found.status !== 'running' ? found : null;
      },
      120_000,
      'the backup',
      250,
    );
    expect(backup.status).toBe('succeeded');
    await sql('DELETE FROM ledger WHERE id > 100');
    const restored = await admin('POST', `/api/services/${dbId}/database/backups/${backupId}/restore`);
    expect(restored.status, restored.text).toBe(200);
    expect(await sql('SELECT count(*)::int AS n FROM ledger')).toEqual([{ n: 501 }]);

    // A terminal in the container on w1.
    const hostname = onW1.slice(0, 12);
    const terminal = await openTerminal(server!.url, `/api/ws/services/${dbId}/terminal`, server!.token);
    terminal.send('echo "on-$(hostname)-$((6*7))"\n');
    await terminal.waitFor(`on-${hostname}-42`);
    terminal.send('exit 3\n');
    expect(await terminal.closed).toBe(1000);
    expect(terminal.controls.find((m) => m.type === 'exit')).toEqual({ type: 'exit', code: 3 });

    // Runtime logs: the server's own lines, from w1's engine.
    const logs = await readSse(`${server!.url}/api/services/${dbId}/runtime-logs/stream`, {
      token: server!.token,
      until: (frames) => frames.some((f) => f.event === 'snapshot'),
      timeoutMs: 20_000,
    });
    expect(logs.status).toBe(200);
    const snapshot = logs.frames.find((f) => f.event === 'snapshot');
    expect(JSON.stringify(snapshot?.data)).toMatch(/ready to accept connections/);

    // A service's Swarm task (placed on w1) reaches it by name over the environment's overlay network.
    const checker = await ok(
      admin('POST', `/api/projects/${project.id}/services`, {
        name: 'checker',
        repoUrl: 'container-image',
        containerImage: 'postgres:17',
        runtimeMode: 'worker',
        startCommand: `while true; do pg_isready -h ${created.service.slug} -p 5432; sleep 0.5; done`,
        placement: { must: { dbs: suffix } },
      }),
      'checker',
    );
    const checkerId = checker.service.id as string;
    const checked = await deploy(admin, checkerId, 5 * 60_000);
    expect(checked.deployment.status, checked.logs.join('\n')).toBe('succeeded');
    const lastCheck = async () => {
      const frames = await readSse(`${server!.url}/api/services/${checkerId}/runtime-logs/stream`, {
        token: server!.token,
        until: (f) => f.some((x) => x.event === 'snapshot'),
        timeoutMs: 20_000,
      });
      const lines = (frames.frames.find((f) => f.event === 'snapshot')?.data ?? []) as Array<{ line: string }>;
      return lines.at(-1)?.line ?? '';
    };
    await until(
      async () => (await lastCheck()).includes(`${created.service.slug}:5432 - accepting connections`),
      60_000,
      'the task reaching the database on w1',
      500,
    );

    // Metrics: sampled from w1's engine.
    await until(
      async () => {
        const { json } = await admin('GET', `/api/services/${dbId}/metrics`);
        return json.running === true && json.current?.memoryUsedBytes > 0;
      },
      30_000,
      'metrics of the database on w1',
      500,
    );

    // And back to the manager: the rows written on w1 come along, and w1 keeps nothing of it.
    const back = await ok(admin('POST', `/api/services/${dbId}/move`, { serverId: localId }), 'move back');
    const home = await waitForDeployment(admin, back.deploymentId as string, 5 * 60_000);
    expect(home.deployment.status, home.logs.join('\n')).toBe('succeeded');
    expect(await sql('SELECT note FROM ledger WHERE id = 501')).toEqual([{ note: 'written on w1' }]);
    expect(await containersOn(c, 'm', dbId)).toHaveLength(1);
    await until(async () => (await containersOn(c, 'w1', dbId, true)).length === 0, 30_000, 'nothing left on w1', 250);
    // The task on w1 reaches it on the manager now, by the same name.
    await until(
      async () => (await lastCheck()).includes(`${created.service.slug}:5432 - accepting connections`),
      60_000,
      'the task reaching the database on the manager',
      500,
    );
    await until(
      async () => (await c.docker('w1', 'volume', 'ls', '-q', '--filter', `name=${prefix}-${dbId}-data`)) === '',
      30_000,
      'the volume on w1 removed',
      250,
    );
  },
  15 * 60_000,
);

it(
  'a storage instance moves to a worker with its objects, and answers there',
  async () => {
    const c = cluster!;
    const created = await ok(admin('POST', '/api/storage', { projectId, name: 'files' }), 'storage');
    const storageId = created.storage.id as string;
    const first = await deploy(admin, storageId, 5 * 60_000);
    expect(first.deployment.status, first.logs.join('\n')).toBe('succeeded');
    // An object as the server keeps it (its POSIX backend: a file per key in the bucket's directory).
    const [here] = await containersOn(c, 'm', storageId);
    await c.docker('m', 'exec', here!, 'sh', '-c', 'echo "kept across servers" > /data/files/greeting.txt');

    const moved = await ok(admin('POST', `/api/services/${storageId}/move`, { serverId: w1Id }), 'move storage');
    const move = await waitForDeployment(admin, moved.deploymentId as string, 5 * 60_000);
    const log = move.logs.join('\n');
    expect(move.deployment.status, log).toBe('succeeded');
    expect(log).toMatch(/Copied [\d.]+ MB of .*-data/);
    // Ready on w1 means its bucket answered an S3 call through the platform's tunnel to it.
    expect(log).toMatch(/Storage server ready/);
    const [there] = await containersOn(c, 'w1', storageId);
    expect(await c.docker('w1', 'exec', there!, 'cat', '/data/files/greeting.txt')).toBe('kept across servers');
    expect(await containersOn(c, 'm', storageId, true)).toEqual([]);
    const storage = (await ok(admin('GET', `/api/storage/${storageId}`), 'storage')).storage;
    expect(storage).toMatchObject({ status: 'active', reachable: true });

    // w1 lost: the instance is unavailable, and the API says where it lives; back once w1 is.
    const killedAt = Date.now();
    await c.kill('w1');
    try {
      const down = await until(
        async () => {
          const service = (await admin('GET', `/api/services/${storageId}/overview`)).json.service;
          return service?.status === 'unavailable' ? service : null;
        },
        60_000,
        'the storage instance unavailable',
        250,
      );
      expect(down).toMatchObject({ reachable: false, server: { id: w1Id, state: 'down' } });
      console.log(`[cluster-databases] w1 killed: its storage instance unavailable after ${Date.now() - killedAt} ms`);
    } finally {
      await c.revive('w1');
    }
    await until(
      async () => {
        const service = (await admin('GET', `/api/services/${storageId}/overview`)).json.service;
        return service?.status === 'active' && service.server?.state === 'ready';
      },
      120_000,
      'the storage instance back with w1',
      500,
    );
    // Its container comes back with w1's engine (its restart policy), its objects with it.
    const back = await until(async () => (await containersOn(c, 'w1', storageId))[0] ?? null, 60_000, 'its container running on w1', 500);
    expect(await c.docker('w1', 'exec', back, 'cat', '/data/files/greeting.txt')).toBe('kept across servers');
  },
  10 * 60_000,
);

async function revealPassword(dbId: string): Promise<string | null> {
  const env = (await admin('GET', `/api/services/${dbId}/overview`)).json.env as Array<{ id: string; key: string }>;
  const entry = env.find((v) => v.key === 'POSTGRES_PASSWORD');
  return entry ? ((await admin('POST', `/api/services/${dbId}/env/${entry.id}/reveal`)).json.value as string) : null;
}
