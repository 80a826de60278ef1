import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type Docker from 'dockerode';
import { DockerContainerStatsSource } from '../../adapters/docker/docker.container-stats-source.js';
import { DockerRuntimeLogSource } from '../../adapters/docker/docker.runtime-log-source.js';
import { DockerodeTerminalEngine } from '../../adapters/docker/dockerode.terminal-engine.js';
import { ReplicaEngines } from '../../adapters/docker/replica-engines.js';
import { SwarmReplicaLocator } from '../../src/cluster/replica-locator.js';
import type { ReplicaLocation, ReplicaLocator, RunningSwarmTask } from '../../src/cluster/replica-locator.port.js';
import type { SwarmServiceEntry, SwarmServices } from '../../src/cluster/swarm-services.port.js';
import type { RuntimeLogEvent } from '../../src/deployments/runtime-logs.port.js';
import type { TerminalEngine } from '../../src/terminals/terminal-engine.port.js';
import { TerminalService } from '../../src/terminals/terminal.service.js';
import { until } from '../helpers/until.js';

/**
 * Logs, metrics and terminals of a service's tasks on any node (docs/cluster.md): where the tasks are
 * (SwarmReplicaLocator over fakes of the swarm's ports), which engine reaches each (ReplicaEngines), and the
 * adapters reading every task from its own node's engine (fakes of dockerode's few calls they make).
 */
const task = (id: string, nodeId: string, serviceId: string, deploymentId: string): RunningSwarmTask => ({
  taskId: `t-${id}`,
  nodeId,
  containerId: `c-${id}`,
  serviceId,
  deploymentId,
});

function locatorOver(opts: {
  formed: boolean;
  entries: SwarmServiceEntry[];
  live: string | null;
  tasks: RunningSwarmTask[];
  known?: string[];
}) {
  const calls: string[] = [];
  const services = {
    list: async (serviceId: string) => {
      calls.push(`list ${serviceId}`);
      return opts.entries;
    },
  } as unknown as SwarmServices;
  const reader = {
    runningTasks: async () => {
      calls.push('tasks');
      return opts.tasks;
    },
  };
  const deps = {
    store: {
      deployments: { listLive: async () => (opts.live ? [{ id: opts.live }] : []) },
      projects: { getService: async (id: string) => ((opts.known ?? ['s1']).includes(id) ? { id, projectId: 'p1' } : null) },
    },
  };
  const settings = { formed: async () => (opts.formed ? { formedAt: '', managerNodeId: 'n-m', advertiseAddress: '10.0.0.1' } : null) };
  return { locator: new SwarmReplicaLocator(deps as never, settings as never, services, reader), calls };
}

const entry = (deploymentId: string, at: string): SwarmServiceEntry => ({
  name: `slipway-s1-${deploymentId}`,
  deploymentId,
  createdAt: at,
});

describe('SwarmReplicaLocator', () => {
  it('on a single server answers from one settings read: no Swarm call', async () => {
    const { locator, calls } = locatorOver({
      formed: false,
      entries: [entry('d1', '1')],
      live: 'd1',
      tasks: [task('a', 'n-w1', 's1', 'd1')],
    });
    expect(await locator.tasksOf('s1')).toBeNull();
    expect(await locator.clusterTasks()).toEqual([]);
    expect(calls).toEqual([]);
  });

  it("answers the live deployment's running tasks, not those of a deployment under way beside it", async () => {
    const { locator } = locatorOver({
      formed: true,
      entries: [entry('d1', '1'), entry('d2', '2')],
      live: 'd1',
      tasks: [task('a', 'n-w1', 's1', 'd1'), task('b', 'n-m', 's1', 'd1'), task('c', 'n-w2', 's1', 'd2'), task('x', 'n-w1', 's9', 'd9')],
    });
    expect((await locator.tasksOf('s1'))?.map((t) => `${t.containerId}@${t.nodeId}`)).toEqual(['c-a@n-w1', 'c-b@n-m']);
  });

  it('is null for a service on plain containers: none of its own, or a live deployment that runs no Swarm service', async () => {
    expect(await locatorOver({ formed: true, entries: [], live: 'd1', tasks: [] }).locator.tasksOf('s1')).toBeNull();
    // Deployed while one server was ready (plain containers); an earlier Swarm service left behind is not it.
    expect(await locatorOver({ formed: true, entries: [entry('d1', '1')], live: 'd2', tasks: [] }).locator.tasksOf('s1')).toBeNull();
  });

  it("lists every running task of this install's services, never another install's", async () => {
    const { locator } = locatorOver({
      formed: true,
      entries: [],
      live: null,
      tasks: [task('a', 'n-w1', 's1', 'd1'), task('x', 'n-w1', 'other-install', 'd9')],
    });
    expect((await locator.clusterTasks()).map((t) => t.containerId)).toEqual(['c-a']);
  });
});

/** A stand-in for dockerode: per container, its log lines (`<RFC 3339> text`) and a follow stream the test writes to. */
class FakeEngine {
  readonly followers = new Map<string, PassThrough>();
  readonly execs: Array<{ container: string; cmd: string[] }> = [];
  constructor(
    readonly name: string,
    private readonly lines: Record<string, string[]> = {},
    private readonly listed: Array<{ Id: string; Created: number; Labels: Record<string, string> }> = [],
  ) {}
  async listContainers() {
    return this.listed;
  }
  getContainer(id: string) {
    return {
      id,
      logs: async (opts: { follow: boolean }) => {
        if (!opts.follow) return Buffer.concat((this.lines[id] ?? []).map((l) => frame(l)));
        const stream = new PassThrough();
        this.followers.set(id, stream);
        return stream;
      },
      stats: async () => ({ cpu_stats: { cpu_usage: { total_usage: 5 }, online_cpus: 2 }, memory_stats: { usage: 1000 } }),
      inspect: async () => ({ RestartCount: 0, Config: { Env: [] } }),
      infoArchive: async () => ({ headers: {} }),
      exec: async (spec: { Cmd: string[] }) => {
        this.execs.push({ container: id, cmd: spec.Cmd });
        return {
          start: async () => new PassThrough(),
          inspect: async () => ({ Running: false, ExitCode: 0 }),
          resize: async () => {},
        };
      },
    };
  }
}

function frame(line: string): Buffer {
  const body = Buffer.from(`${line}\n`);
  const header = Buffer.alloc(8);
  header[0] = 1;
  header.writeUInt32BE(body.length, 4);
  return Buffer.concat([header, body]);
}

function enginesOver(local: FakeEngine, remotes: Record<string, FakeEngine>, tasks: ReplicaLocation[] | null) {
  const locator: ReplicaLocator = { tasksOf: async () => tasks, clusterTasks: async () => tasks ?? [] };
  const dialled: string[] = [];
  const engines = new ReplicaEngines(local as unknown as Docker, (address) => {
    dialled.push(address);
    return remotes[address] as unknown as Docker;
  });
  engines.bind(locator, {
    endpointOf: async (nodeId) => {
      if (nodeId === 'n-stranger') throw new Error('No server is node n-stranger; it may have been removed');
      return nodeId === 'n-m'
        ? { local: true }
        : { local: false, address: nodeId.replace('n-', ''), port: 2376, credentials: { caPem: '', certPem: '', keyPem: '' } };
    },
  });
  return { engines, dialled };
}

const at = (s: number) => `2026-11-29T08:00:${String(s).padStart(2, '0')}.000000001Z`;
const location = (id: string, nodeId: string): ReplicaLocation => ({
  serviceId: 's1',
  deploymentId: 'd1',
  containerId: `c-${id}`,
  nodeId,
  taskId: `t-${id}`,
});

describe('ReplicaEngines', () => {
  it("reaches the manager's node through the platform's engine and each other node once over mutual TLS", async () => {
    const local = new FakeEngine('m');
    const w1 = new FakeEngine('w1');
    const { engines, dialled } = enginesOver(local, { w1 }, [location('a', 'n-m'), location('b', 'n-w1'), location('c', 'n-w1')]);
    const found = await engines.tasksOf('s1');
    expect(found?.map((t) => (t.docker as unknown as FakeEngine).name)).toEqual(['m', 'w1', 'w1']);
    expect(await engines.dockerOf('n-w1')).toBe(w1);
    expect(dialled).toEqual(['w1']);
  });

  it('leaves out a task on a node that is no server of this install, and says why when nothing is left', async () => {
    const local = new FakeEngine('m');
    const { engines } = enginesOver(local, {}, [location('a', 'n-stranger'), location('b', 'n-m')]);
    expect((await engines.clusterTasks()).map((t) => t.location.containerId)).toEqual(['c-b']);
    const alone = enginesOver(local, {}, [location('a', 'n-stranger')]).engines;
    await expect(alone.tasksOf('s1')).rejects.toThrow(/No server is node n-stranger/);
  });

  it('unbound (no cluster in this process), answers null: the adapters keep to the local engine', async () => {
    const engines = new ReplicaEngines({} as Docker);
    expect(await engines.tasksOf('s1')).toBeNull();
    expect(await engines.clusterTasks()).toEqual([]);
  });
});

describe('runtime logs of tasks on several nodes', () => {
  it("merges every task's snapshot by time, keeps the last `tail`, follows each task, and closes when one stops", async () => {
    const local = new FakeEngine('m', { 'c-a': [`${at(1)} a1`, `${at(4)} a4`] });
    const w1 = new FakeEngine('w1', { 'c-b': [`${at(2)} b2`, `${at(3)} b3`, `${at(5)} b5`] });
    const { engines } = enginesOver(local, { w1 }, [location('a', 'n-m'), location('b', 'n-w1')]);
    const controller = new AbortController();
    const events = new DockerRuntimeLogSource(local as unknown as Docker, engines)
      .follow('s1', { tail: 4, signal: controller.signal })
      [Symbol.asyncIterator]();
    const snapshot = (await events.next()).value as Extract<RuntimeLogEvent, { type: 'snapshot' }>;
    expect(snapshot.lines.map((l) => l.line)).toEqual(['b2', 'b3', 'a4', 'b5']);
    const next = events.next();
    await until(() => local.followers.size === 1 && w1.followers.size === 1, 2_000, 'both tasks followed');
    local.followers.get('c-a')!.write(frame(`${at(6)} a6`));
    expect((await next).value).toMatchObject({ type: 'line', line: { line: 'a6' } });
    w1.followers.get('c-b')!.write(frame(`${at(7)} b7`));
    expect((await events.next()).value).toMatchObject({ type: 'line', line: { line: 'b7' } });
    w1.followers.get('c-b')!.end();
    expect((await events.next()).value).toEqual({ type: 'closed', ok: true, reason: 'a task stopped or was replaced' });
    expect((await events.next()).done).toBe(true);
    // The other task's stream was let go.
    expect(local.followers.get('c-a')!.destroyed).toBe(true);
  });

  it('on plain containers (the locator says null) reads the local engine as before', async () => {
    const local = new FakeEngine('m', { 'c-local': [`${at(1)} here`] }, [{ Id: 'c-local', Created: 1, Labels: {} }]);
    const { engines } = enginesOver(local, {}, null);
    const controller = new AbortController();
    const events = new DockerRuntimeLogSource(local as unknown as Docker, engines)
      .follow('s1', { tail: 10, signal: controller.signal })
      [Symbol.asyncIterator]();
    expect(((await events.next()).value as { lines: Array<{ line: string }> }).lines.map((l) => l.line)).toEqual(['here']);
    controller.abort();
  });

  it('a service on the cluster with no running task closes at once with the reason', async () => {
    const local = new FakeEngine('m');
    const { engines } = enginesOver(local, {}, []);
    const events = new DockerRuntimeLogSource(local as unknown as Docker, engines).follow('s1', {
      tail: 10,
      signal: new AbortController().signal,
    });
    expect((await events[Symbol.asyncIterator]().next()).value).toEqual({
      type: 'closed',
      ok: false,
      reason: 'the service has no running task',
    });
  });
});

describe('metrics of tasks on several nodes', () => {
  it("samples the local containers and every task from its own node's engine", async () => {
    const local = new FakeEngine('m', {}, [{ Id: 'c-plain', Created: 1, Labels: { 'slipway.service': 's0' } }]);
    const w1 = new FakeEngine('w1');
    const { engines } = enginesOver(local, { w1 }, [location('b', 'n-w1')]);
    const stats = await new DockerContainerStatsSource(local as unknown as Docker, 'inst', engines).sample(new AbortController().signal);
    expect(stats.map((s) => `${s.containerId}:${s.serviceId}:${s.memoryUsedBytes}:${s.onlineCpus}`).sort()).toEqual([
      'c-b:s1:1000:2',
      'c-plain:s0:1000:2',
    ]);
  });
});

describe('terminals in a task on another node', () => {
  it("opens in the serving task's container through its node's engine", async () => {
    const local = new FakeEngine('m');
    const w1 = new FakeEngine('w1');
    const { engines } = enginesOver(local, { w1 }, [location('b', 'n-w1')]);
    const terminal: TerminalEngine = new DockerodeTerminalEngine(local as unknown as Docker, engines);
    const deps = {
      store: { projects: { getService: async (id: string) => ({ id, projectId: 'p1', environmentId: 'e1' }) } },
      clock: { now: () => new Date() },
    };
    const locator: ReplicaLocator = { tasksOf: async () => [location('b', 'n-w1')], clusterTasks: async () => [location('b', 'n-w1')] };
    const current = { currentOf: async () => null, serviceContainer: async () => null };
    const service = new TerminalService(deps as never, { current: current as never, terminal, replicas: locator });
    const admin = { keyId: 'k', access: 'write' as const, projectIds: null };
    const prepared = await service.prepare(admin, { kind: 'service', serviceId: 's1' }, undefined, new AbortController().signal);
    expect(prepared).toMatchObject({ containerId: 'c-b', nodeId: 'n-w1', cmd: ['/bin/sh'] });
    await service.start(prepared, { cols: 80, rows: 24 }, new AbortController().signal);
    expect(w1.execs).toEqual([{ container: 'c-b', cmd: ['/bin/sh'] }]);
    expect(local.execs).toEqual([]);
    // By the task's container id too (the container terminal path, 12 characters or more), on its node.
    const byId = await service.prepare(admin, { kind: 'container', ref: 'c-b' }, undefined, new AbortController().signal).catch((e) => e);
    expect(byId).toMatchObject({ code: 'not_found' });
    const long = { ...location('b', 'n-w1'), containerId: 'f00dfeedbeef0123456789' };
    const byLongId = new TerminalService(deps as never, {
      current: current as never,
      terminal,
      replicas: { tasksOf: async () => [long], clusterTasks: async () => [long] },
    });
    expect(
      await byLongId.prepare(admin, { kind: 'container', ref: 'f00dfeedbeef' }, undefined, new AbortController().signal),
    ).toMatchObject({
      containerId: 'f00dfeedbeef0123456789',
      nodeId: 'n-w1',
    });
  });
});
