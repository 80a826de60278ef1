import { execFile, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './caddy.js';
import { ok, type ApiResponse } from './http.js';
import { until } from './until.js';

/**
 * A Docker Swarm of one manager and workers on this machine, for the cluster tests: each node is a
 * Docker engine of its own in network, mount and UTS namespaces the test creates (test/provision/cluster.sh
 * does the work; docs/cluster-findings.md says why each step is there). The host's engine is left alone:
 * the manager is a namespaced engine too, reached, like every node, at its own unix socket.
 *
 * Addresses: the nodes sit on a bridge inside a "hub" namespace, 100.64.S.0/24 (S picked free on this
 * host); the host has 100.64.S.1 and node k has 100.64.S.(10+k). Nothing is routed off the machine.
 */
const run = promisify(execFile);
const SCRIPT = path.resolve(import.meta.dirname, '../provision/cluster.sh');

export interface ClusterNode {
  name: string;
  role: 'manager' | 'worker';
  /** The node's address on the hub bridge: what it advertises to the swarm, reachable from the host. */
  address: string;
  /** The node engine's unix socket, for `docker -H unix://...` or dockerode's socketPath. */
  socket: string;
}

export interface TestCluster {
  id: string;
  dir: string;
  /** The host's address on the hub bridge (100.64.S.1). */
  hostAddress: string;
  nodes: ClusterNode[];
  manager: ClusterNode;
  workers: ClusterNode[];
  /** Milliseconds per step of the set-up, e.g. {network and engines, swarm, images}. */
  timings: Record<string, number>;
  node(name: string): ClusterNode;
  /** `docker -H <node's socket> ...args` (argv, no shell); stdout trimmed. */
  docker(node: string, ...args: string[]): Promise<string>;
  /** Loads images from the host engine into nodes (all by default) that lack them, as a public registry would serve them. */
  loadImages(images: string[], nodes?: string[]): Promise<void>;
  /**
   * What a machine's root shell is for the join command: the node's network namespace (its address,
   * the platform at hostAddress), its engine as DOCKER_HOST, and how the join script writes the
   * engine's /etc/docker and restarts it with flags (the harness's engines are not systemd's).
   */
  joinEnvironment(node: string): { argvPrefix: string[]; env: Record<string, string> };
  /** A lost machine: SIGKILL of the node's engine, containerd, shims and containers at once. */
  kill(node: string): Promise<void>;
  /** Starts a killed node's engine again on its kept data root (it rejoins by itself) and waits until it is Ready. */
  revive(node: string): Promise<void>;
  /** The manager's view of a node: `ready`, `down`, `unknown`... */
  nodeState(node: string): Promise<string>;
  /** Polls the node's state until `state`; answers the milliseconds it took. */
  waitForNodeState(node: string, state: string, timeoutMs?: number): Promise<number>;
  /** Kills every node, removes the namespaces, veth, cgroups and the state directory. Idempotent. */
  down(): Promise<void>;
}

async function script(args: string[], env: Record<string, string> = {}, timeoutMs = 180_000): Promise<string> {
  try {
    const { stdout } = await run('bash', [SCRIPT, ...args], {
      env: { ...process.env, ...env },
      maxBuffer: 16 * 1024 * 1024,
      timeout: timeoutMs,
      killSignal: 'SIGKILL',
    });
    return stdout.trim();
  } catch (error) {
    const e = error as { stderr?: string; message: string };
    // The script's progress lines (stderr) say how far it got, on a timeout too.
    const progress = e.stderr?.trim();
    throw new Error(`cluster.sh ${args.join(' ')} failed: ${e.message.split('\n')[0]}${progress ? `\n${progress}` : ''}`);
  }
}

const clusters = new Map<string, TestCluster>();
let exitHook = false;
/** A test process that ends without its afterAll (an uncaught error, a signal) still leaves nothing behind. */
function downAtExit(): void {
  if (exitHook) return;
  exitHook = true;
  process.once('exit', () => {
    for (const id of clusters.keys()) spawnSync('bash', [SCRIPT, 'down', id], { stdio: 'ignore', timeout: 60_000 });
  });
}

function describe(id: string, names: string[], timings: Record<string, number>): TestCluster {
  const dir = `/tmp/slipway-cluster-${id}`;
  const env = readFileSync(path.join(dir, 'env'), 'utf8');
  const subnet = /^SUBNET=(\d+)$/m.exec(env)?.[1];
  if (!subnet) throw new Error(`${dir}/env names no subnet`);
  const nodes: ClusterNode[] = names.map((name, k) => ({
    name,
    role: k === 0 ? 'manager' : 'worker',
    address: `100.64.${subnet}.${10 + k}`,
    socket: path.join(dir, 'nodes', name, 'docker.sock'),
  }));
  const byName = (name: string) => {
    const found = nodes.find((n) => n.name === name);
    if (!found) throw new Error(`no node ${name} in cluster ${id} (${names.join(', ')})`);
    return found;
  };
  const docker = async (node: string, ...args: string[]) => {
    const { stdout } = await run('docker', ['-H', `unix://${byName(node).socket}`, ...args], {
      maxBuffer: 64 * 1024 * 1024,
      timeout: 120_000,
    });
    return stdout.trim();
  };
  const nodeState = async (node: string) =>
    docker(names[0]!, 'node', 'inspect', '--format', '{{.Status.State}}', node).catch(() => 'unknown');
  const cluster: TestCluster = {
    id,
    dir,
    hostAddress: `100.64.${subnet}.1`,
    nodes,
    manager: nodes[0]!,
    workers: nodes.slice(1),
    timings,
    node: byName,
    docker,
    async loadImages(images, on = names) {
      await Promise.all(on.map((node) => script(['load-images', id, node, ...images], {}, 600_000)));
    },
    joinEnvironment(node) {
      const n = byName(node);
      const nodeDir = path.join(dir, 'nodes', node);
      return {
        argvPrefix: ['nsenter', `--net=/run/netns/slwc-${id}-${node}`],
        env: {
          DOCKER_HOST: `unix://${n.socket}`,
          SLIPWAY_DOCKER_ETC: path.join(nodeDir, 'etc'),
          SLIPWAY_ENGINE_ARGS_FILE: path.join(nodeDir, 'dockerd.args'),
          SLIPWAY_ENGINE_RESTART: `bash ${SCRIPT} restart-node ${id} ${node}`,
        },
      };
    },
    async kill(node) {
      byName(node);
      await script(['kill-node', id, node]);
    },
    async revive(node) {
      byName(node);
      await script(['start-node', id, node]);
      await script(['wait-ready', id, names[0]!, node], {}, 60_000);
    },
    nodeState,
    async waitForNodeState(node, state, timeoutMs = 60_000) {
      const started = Date.now();
      for (;;) {
        if ((await nodeState(node)) === state) return Date.now() - started;
        if (Date.now() - started > timeoutMs)
          throw new Error(`node ${node} not ${state} within ${timeoutMs} ms (${await nodeState(node)})`);
        await new Promise((r) => setTimeout(r, 200));
      }
    },
    async down() {
      await script(['down', id]);
      clusters.delete(id);
    },
  };
  return cluster;
}

export interface TestClusterOptions {
  /** Node names, the manager first (default m, w1, w2: one manager, two workers). */
  nodes?: string[];
  /** Images every node gets from the host engine (default none). */
  images?: string[];
  /** Cluster id, 3-8 of [a-z0-9] (default random). */
  id?: string;
  /**
   * False: the engines only, no swarm (default true: `swarm init` on the first, the others joined).
   * What the platform's own cluster tests start from: it forms the swarm and joins the nodes itself.
   */
  swarm?: boolean;
}

/**
 * Builds a cluster of its own for the calling test file: network and engines, `swarm init` on the
 * first node and `swarm join` of the others, then the images. Call `down()` in afterAll; a process
 * that exits without it removes the cluster at exit, and the next cluster built on this host removes
 * any cluster whose owner process is gone.
 */
export async function startTestCluster(options: TestClusterOptions = {}): Promise<TestCluster> {
  const names = options.nodes ?? ['m', 'w1', 'w2'];
  const id = options.id ?? randomBytes(3).toString('hex');
  await script(['sweep']);
  const timings: Record<string, number> = {};
  downAtExit();
  let started = performance.now();
  try {
    await script(['up', id, ...names], { SLIPWAY_CLUSTER_OWNER: String(process.pid) });
    timings['network and engines'] = Math.round(performance.now() - started);
    started = performance.now();
    const cluster = describe(id, names, timings);
    clusters.set(id, cluster);
    if (options.swarm !== false) {
      await script(['join', id], {}, 120_000);
      timings.swarm = Math.round(performance.now() - started);
    }
    if (options.images?.length) {
      started = performance.now();
      await cluster.loadImages(options.images);
      timings.images = Math.round(performance.now() - started);
    }
    return cluster;
  } catch (error) {
    await script(['down', id]).catch(() => {});
    clusters.delete(id);
    throw error;
  }
}

/**
 * The run's shared cluster (m, w1, w2): built by the first test file that asks for it in this vitest run,
 * reused by the others, removed by the global teardown (test/helpers/cluster-global-setup.ts). A file
 * that kills a node revives it before it ends; a file removes the services it makes. Files on it run
 * beside the run's other files but one at a time on the cluster: this waits for the cluster's use lock,
 * which the file gives back with `release()` in its afterAll (or by exiting).
 */
export async function sharedTestCluster(runId: string, ownerPid: number, waitMs = 600_000): Promise<TestCluster & { release(): void }> {
  const id = `run${runId}`.slice(0, 8);
  const names = ['m', 'w1', 'w2'];
  const timings: Record<string, number> = {};
  const started = performance.now();
  const release = await takeUseLock(`/tmp/slipway-cluster-${id}.in-use`, waitMs);
  timings['waited for the cluster'] = Math.round(performance.now() - started);
  try {
    // One builder per run: the others wait on its lock, then find it built.
    await script(['ensure', id, ...names], { SLIPWAY_CLUSTER_OWNER: String(ownerPid) }, 300_000);
    timings['shared cluster ready'] = Math.round(performance.now() - started);
    const cluster = describe(id, names, timings);
    for (const node of names) {
      if (!existsSync(cluster.node(node).socket)) await cluster.revive(node);
    }
    return Object.assign(cluster, { release });
  } catch (error) {
    release();
    throw error;
  }
}

/**
 * A lock directory naming its holder's pid (mkdir is atomic): taken when free or when its holder is
 * gone, given back by the returned function or at the holder's exit.
 */
async function takeUseLock(dir: string, waitMs: number): Promise<() => void> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      mkdirSync(dir);
      writeFileSync(path.join(dir, 'pid'), String(process.pid));
      const release = () => {
        process.off('exit', release);
        rmSync(dir, { recursive: true, force: true });
      };
      process.on('exit', release);
      return release;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = Number(readFileSync(path.join(dir, 'pid'), { encoding: 'utf8', flag: 'a+' }) || 0);
    if (holder && !alive(holder)) rmSync(dir, { recursive: true, force: true });
    else if (Date.now() > deadline) throw new Error(`the shared test cluster stayed in use (${dir}, pid ${holder}) for ${waitMs} ms`);
    else await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Removes the run's shared cluster, if one was built (the global teardown). */
export async function removeSharedTestCluster(runId: string): Promise<void> {
  const id = `run${runId}`.slice(0, 8);
  if (existsSync(`/tmp/slipway-cluster-${id}`)) await script(['down', id]);
}

/**
 * What a platform started as `npm start` starts it needs to be the cluster's manager: its engine m's, listening on
 * the hub bridge's host address (where the nodes reach it, for the join) on a free port there.
 */
/** The join command as a user runs it on the machine, as root: here in the node's network namespace. */
export async function runJoinCommand(cluster: TestCluster, node: string, command: string): Promise<string> {
  const { argvPrefix, env } = cluster.joinEnvironment(node);
  const { stdout, stderr } = await run(argvPrefix[0]!, [...argvPrefix.slice(1), 'bash', '-c', command], {
    env: { ...process.env, ...env },
    timeout: 180_000,
    maxBuffer: 4 * 1024 * 1024,
  });
  return stdout + stderr;
}

/** The node leaves the harness's swarm (and the manager forgets it): the platform's join command takes a machine in none. */
export async function leaveHarnessSwarm(cluster: TestCluster, node: string): Promise<void> {
  const oldNode = await cluster.docker(node, 'info', '--format', '{{.Swarm.NodeID}}');
  if (!oldNode) return;
  await cluster.docker(node, 'swarm', 'leave', '--force');
  await cluster.docker('m', 'node', 'rm', '--force', oldNode).catch(() => {});
}

/**
 * Adds a node as a server through the platform's API (`admin` calls it), runs the answer's join command on the node,
 * and resolves with the server's id once the platform shows it `ready`.
 */
export async function joinThroughApi(
  cluster: TestCluster,
  admin: (method: string, pathname: string, body?: unknown) => Promise<ApiResponse>,
  node: string,
  body: { name: string; labels?: Record<string, string> },
): Promise<string> {
  const added = await ok(admin('POST', '/api/servers', body), `add ${node}`);
  const output = await runJoinCommand(cluster, node, added.join.command as string);
  if (!output.includes('joined as')) throw new Error(`${node} did not join:\n${output}`);
  const id = added.server.id as string;
  await until(async () => (await admin('GET', `/api/servers/${id}`)).json.server?.state === 'ready', 30_000, `${node} ready`, 250);
  return id;
}

/** What a platform of RESOURCE_PREFIX `prefix` leaves on the manager: its registry (container and volume), an environment's overlay. */
export async function removeManagerLeftovers(cluster: TestCluster, prefix: string, environmentId: string | undefined): Promise<void> {
  await cluster.docker('m', 'rm', '--force', `${prefix}-registry`).catch(() => {});
  await cluster.docker('m', 'volume', 'rm', `${prefix}-registry-data`).catch(() => {});
  if (environmentId) await removeOverlay(cluster, `${prefix}-${environmentId}-swarm`);
}

/** Removes an overlay network on the manager once its last task's endpoint is gone (Swarm lets go of it a moment after). */
export async function removeOverlay(cluster: TestCluster, network: string): Promise<void> {
  for (let i = 0; i < 40; i++) {
    const gone = await cluster.docker('m', 'network', 'rm', network).then(
      () => true,
      (error: Error) => /not found/i.test(error.message),
    );
    if (gone) return;
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * A platform run on the manager's host itself: in m's network namespace (startServerProcess's `argvPrefix`), so it
 * reaches the plain containers of m's engine (a database's) as production's platform reaches its host's; it listens
 * on m's address, which the tests and the joining nodes reach, and its join URL is that address and its own port.
 */
export function managerHostPlatform(cluster: TestCluster): { env: Record<string, string>; argvPrefix: string[] } {
  return {
    env: {
      HOST: cluster.manager.address,
      PORT: '0',
      DOCKER_SOCKET: cluster.manager.socket,
      DOCKER_CERTS_DIR: `${cluster.dir}/nodes/m/etc/certs.d`,
      SWARM_ADVERTISE_ADDR: cluster.manager.address,
    },
    argvPrefix: cluster.joinEnvironment('m').argvPrefix,
  };
}

export async function managerPlatformEnv(cluster: TestCluster): Promise<Record<string, string>> {
  const port = await freePort(cluster.hostAddress);
  return {
    HOST: cluster.hostAddress,
    PORT: String(port),
    DOCKER_SOCKET: cluster.manager.socket,
    DOCKER_CERTS_DIR: `${cluster.dir}/nodes/m/etc/certs.d`,
    SWARM_ADVERTISE_ADDR: cluster.manager.address,
    CLUSTER_JOIN_URL: `http://${cluster.hostAddress}:${port}`,
  };
}
