import { afterEach, describe, expect, it } from 'vitest';
import type { DeploymentRecord, ServiceRecord } from '../../src/domain/types.js';
import { DEFAULT_PLATFORM_CONFIG, type Actor, type CreateServiceInput } from '../../src/index.js';
import { DeploymentFailure } from '../../src/deployments/pipeline-context.js';
import type { SwarmPath, SwarmRolloutInput, SwarmStarted } from '../../src/deployments/swarm-path.port.js';
import { createRuntimeHarness, runnerSteps, type RuntimeHarness } from '../helpers/runtime-fakes.js';
import { until } from '../helpers/until.js';
import { ClusterSwarmPath } from '../../src/cluster/swarm-path.js';
import type { SwarmServiceEntry, SwarmServices } from '../../src/cluster/swarm-services.port.js';

const admin: Actor = { keyId: 'admin', access: 'write', projectIds: null };
const HOST = 'web-shop.apps.test';

/** The cluster's path as the deployments see it: each deployment's Swarm service, its tasks' upstreams, what was removed when. */
class FakeSwarmPath implements SwarmPath {
  readonly events: string[] = [];
  /** Name -> upstreams, oldest first. */
  readonly services = new Map<string, string[]>();
  /** What the proxy routed to the hostname at each retire. */
  readonly routesAtRetire: unknown[] = [];
  failNext = false;
  private started = 0;

  constructor(private readonly route: () => unknown) {}

  /** False: the install is a single server (plain containers). */
  activeNow = true;
  async active() {
    return this.activeNow;
  }
  async rollOut({ service, deployment }: SwarmRolloutInput): Promise<SwarmStarted> {
    const name = `slipway-${service.id}-${deployment.id}`;
    const previous = [...this.services.keys()];
    this.events.push(`start ${name}`);
    if (this.failNext) {
      this.events.push(`remove ${name}`);
      throw new DeploymentFailure('A new replica failed before it served (failed: unhealthy container); the earlier replicas serve on');
    }
    const n = ++this.started;
    const upstreams = [`10.0.${n}.1:80`, `10.0.${n}.2:80`];
    this.services.set(name, upstreams);
    return { name, upstreams, previous };
  }
  async retire(names: string[]) {
    this.routesAtRetire.push(this.route());
    this.events.push(`retire ${names.join(',')}`);
    for (const name of names) this.services.delete(name);
  }
  async current(_service: ServiceRecord) {
    const last = [...this.services.values()].at(-1);
    return last ? { replicas: 2, upstreams: last } : null;
  }
  async scale() {}
  async prune() {
    return [];
  }
  async remove() {
    this.services.clear();
  }
}

describe('a deployment on the cluster: its own Swarm service, the routes switched, then the earlier one removed', () => {
  let h: RuntimeHarness;
  let swarm: FakeSwarmPath;
  const { queue, finished, logs } = runnerSteps(() => h, admin, 10_000);
  afterEach(async () => {
    await h?.close();
  });
  const route = () => h.proxy.last?.find((r) => r.hostname === HOST);

  async function deploy(serviceId: string): Promise<DeploymentRecord> {
    return finished(await queue(serviceId));
  }

  it('starts the new service beside the serving one, routes to its tasks, and only then removes the earlier; a failure leaves it serving', async () => {
    swarm = new FakeSwarmPath(() => route());
    h = await swarmHarness(swarm);
    const serviceId = await webService(h, 2);

    const first = await deploy(serviceId);
    expect(first.status, (await logs(first.id)).join('\n')).toBe('succeeded');
    expect(first.containerName).toBe(`slipway-${serviceId}-${first.id}`);
    expect(swarm.events).toEqual([`start ${first.containerName}`]);
    expect(route()).toMatchObject({ upstream: '10.0.1.1:80', replicaUpstreams: ['10.0.1.2:80'] });

    const second = await deploy(serviceId);
    const lines = await logs(second.id);
    expect(second.status, lines.join('\n')).toBe('succeeded');
    expect(swarm.events.slice(1)).toEqual([`start ${second.containerName}`, `retire ${first.containerName}`]);
    // When the earlier service went, the routes named only the new tasks.
    expect(swarm.routesAtRetire).toEqual([expect.objectContaining({ upstream: '10.0.2.1:80', replicaUpstreams: ['10.0.2.2:80'] })]);
    const switched = lines.findIndex((l) => l.startsWith('Routes switched to the 2 task(s)'));
    const removing = lines.findIndex((l) => l.startsWith('Removing the earlier Swarm service'));
    expect(switched).toBeGreaterThanOrEqual(0);
    expect(removing).toBeGreaterThan(switched);

    swarm.failNext = true;
    const third = await deploy(serviceId);
    expect(third.status).toBe('failed');
    expect((await logs(third.id)).join('\n')).toContain('the earlier replicas serve on');
    // Nothing retired, the routes untouched.
    expect(swarm.events.slice(3)).toEqual([`start slipway-${serviceId}-${third.id}`, `remove slipway-${serviceId}-${third.id}`]);
    expect([...swarm.services.keys()]).toEqual([second.containerName]);
    expect(route()).toMatchObject({ upstream: '10.0.2.1:80', replicaUpstreams: ['10.0.2.2:80'] });
  });
});

describe('a service deployed before the cluster formed', () => {
  let h: RuntimeHarness;
  const { queue, finished, logs } = runnerSteps(() => h, admin, 10_000);
  afterEach(async () => {
    await h?.close();
  });

  it('moves to Swarm once the cluster runs services: the live image on the Swarm path (no build), the plain container stopped; asked once', async () => {
    const swarm = new FakeSwarmPath(() => h.proxy.last?.find((r) => r.hostname === HOST));
    swarm.activeNow = false;
    h = await swarmHarness(swarm);
    const serviceId = await webService(h, 1);
    const first = await finished(await queue(serviceId));
    expect(first.status).toBe('succeeded');
    expect(swarm.events).toEqual([]);
    const plain = first.containerName!;
    expect(h.engine.byName(plain)?.running).toBe(true);

    swarm.activeNow = true;
    await h.runner.passNow();
    const moving = await h.database.store.deployments.listOfServiceByStatus(serviceId, ['queued', 'running']);
    expect(moving).toHaveLength(1);
    expect(moving[0]).toMatchObject({ trigger: 'rollback', rollbackOf: first.id });
    const moved = await finished(moving[0]!.id);
    const lines = await logs(moved.id);
    expect(moved.status, lines.join('\n')).toBe('succeeded');
    expect(lines[0]).toMatch(/^Moving web to the cluster/);
    expect(swarm.events).toEqual([`start slipway-${serviceId}-${moved.id}`]);
    expect(h.engine.byName(plain)?.running ?? false).toBe(false);
    // On Swarm now: no second move.
    await h.runner.passNow();
    expect(await h.database.store.deployments.listOfServiceByStatus(serviceId, ['queued', 'running'])).toEqual([]);
  });
});

describe("the platform's check of the tasks it routes to (a lost node's tasks leave the routes before Swarm marks it down)", () => {
  let h: RuntimeHarness | undefined;
  afterEach(async () => {
    await h?.close();
  });

  it('takes a task that does not answer out of the routes within health intervals, keeps it out of the passes, routes it again once it answers, and the task Swarm starts in its place within seconds', async () => {
    const swarm = new FakeSwarmPath(() => null);
    h = await swarmHarness(swarm);
    const harness = h;
    const route = () => harness.proxy.last?.find((r) => r.hostname === HOST);
    const { queue, finished } = runnerSteps(() => harness, admin, 10_000);
    const serviceId = await webService(h, 2);
    harness.health.tcpOverride.set('10.0.1.1', true);
    harness.health.tcpOverride.set('10.0.1.2', true);
    expect((await finished(await queue(serviceId))).status).toBe('succeeded');
    await harness.runner.reconcile();
    expect(route()).toMatchObject({ upstream: '10.0.1.1:80', replicaUpstreams: ['10.0.1.2:80'] });

    // Its node is lost: Swarm still lists the task as running.
    harness.health.tcpOverride.set('10.0.1.2', false);
    await until(() => route()?.upstream === '10.0.1.1:80' && !route()?.replicaUpstreams, 2_000, 'the task out of the routes');
    await harness.runner.reconcile();
    expect(route()).toMatchObject({ upstream: '10.0.1.1:80' });
    expect(route()?.replicaUpstreams).toBeUndefined();

    // Back: routed again without waiting for a pass.
    harness.health.tcpOverride.set('10.0.1.2', true);
    await until(() => route()?.replicaUpstreams?.[0] === '10.0.1.2:80', 2_000, 'the task back in the routes');

    // Lost again, and Swarm starts a task in its place: routed by the passes that run while the service is short,
    // not the 10-second one.
    harness.health.tcpOverride.set('10.0.1.2', false);
    await until(() => !route()?.replicaUpstreams, 2_000, 'the task out of the routes again');
    harness.health.tcpOverride.set('10.0.1.3', true);
    swarm.services.set([...swarm.services.keys()][0]!, ['10.0.1.1:80', '10.0.1.3:80']);
    await until(() => route()?.replicaUpstreams?.[0] === '10.0.1.3:80', 5_000, 'the new task in the routes');
    // None answering: all stay routed (the proxy's own retries decide, rather than a 503).
    harness.health.tcpOverride.set('10.0.1.1', false);
    harness.health.tcpOverride.set('10.0.1.3', false);
    await new Promise((r) => setTimeout(r, 50));
    await harness.runner.reconcile();
    expect(route()).toMatchObject({ upstream: '10.0.1.1:80', replicaUpstreams: ['10.0.1.3:80'] });
  });
});

describe('leftover Swarm services of a deployment cut short', () => {
  it('are removed by the reconcile pass unless they serve or belong to a deployment under way', async () => {
    const entries: SwarmServiceEntry[] = [
      { name: 'slipway-s1-d1', deploymentId: 'd1', createdAt: '2026-11-29T01:00:00Z' },
      { name: 'slipway-s1-d2', deploymentId: 'd2', createdAt: '2026-11-29T02:00:00Z' },
      { name: 'slipway-s1-d3', deploymentId: 'd3', createdAt: '2026-11-29T03:00:00Z' },
      { name: 'slipway-s1-d4', deploymentId: 'd4', createdAt: '2026-11-29T04:00:00Z' },
    ];
    const removed: string[] = [];
    const services = {
      list: async () => entries.filter((e) => !removed.includes(e.name)),
      remove: async (name: string) => void removed.push(name),
    } as unknown as SwarmServices;
    // d2 serves (the live deployment), d3 failed and its cleanup was cut short, d4 is under way; d1 is an earlier one.
    const status: Record<string, string> = { d1: 'succeeded', d2: 'succeeded', d3: 'failed', d4: 'running' };
    const deps = {
      store: {
        deployments: {
          listLive: async () => [{ id: 'd2' }],
          get: async (id: string) => ({ id, status: status[id] }),
        },
      },
    };
    const path = new ClusterSwarmPath(deps as never, {} as never, {} as never, {} as never, services);
    const service = { id: 's1' } as ServiceRecord;
    expect(await path.prune(service)).toEqual(['slipway-s1-d1', 'slipway-s1-d3']);
    expect(removed).toEqual(['slipway-s1-d1', 'slipway-s1-d3']);
    expect(await path.prune(service)).toEqual([]);
  });
});

describe('a server being drained', () => {
  it('is routed no more: the serving tasks are those on the other servers, unless none runs elsewhere', async () => {
    const task = (id: string, nodeId: string, endpoint: string) => ({
      id,
      nodeId,
      state: 'running',
      desiredState: 'running',
      address: null,
      endpoint,
      deploymentId: 'd1',
      error: null,
    });
    let tasks = [task('t1', 'n1', '10.0.0.1:30001'), task('t2', 'n2', '10.0.0.2:30002'), task('t3', 'n3', '10.0.0.3:30003')];
    const services = {
      list: async () => [{ name: 'slipway-s1-d1', deploymentId: 'd1', createdAt: '2026-11-29T01:00:00Z' }],
      status: async () => ({ exists: true, updateState: 'none', updateMessage: '', deploymentId: 'd1', replicas: 3 }),
      tasks: async () => tasks,
    } as unknown as SwarmServices;
    const servers = [
      { availability: 'active', swarmNodeId: 'n1' },
      { availability: 'drain', swarmNodeId: 'n2' },
      { availability: 'active', swarmNodeId: 'n3' },
    ];
    const deps = { config: { resourcePrefix: 'slipway' }, store: { servers: { list: async () => servers } } };
    const path = new ClusterSwarmPath(deps as never, {} as never, {} as never, {} as never, services);
    const service = { id: 's1', environmentId: 'e1', internalPort: 3000, runtimeMode: 'web' } as ServiceRecord;
    expect(await path.current(service)).toEqual({ replicas: 3, upstreams: ['10.0.0.1:30001', '10.0.0.3:30003'] });
    // Every task on the draining server: better a stopping task than none.
    tasks = [task('t2', 'n2', '10.0.0.2:30002')];
    expect(await path.current(service)).toEqual({ replicas: 3, upstreams: ['10.0.0.2:30002'] });
  });
});

/** A runtime harness on the given fake cluster path, its runner started (fast health checks and drains). */
async function swarmHarness(swarm: FakeSwarmPath): Promise<RuntimeHarness> {
  const harness = await createRuntimeHarness({
    swarm,
    config: { rootDomain: 'apps.test', routing: { ...DEFAULT_PLATFORM_CONFIG.routing, healthIntervalMs: 10, drainTimeoutMs: 50 } },
  });
  await harness.runner.start();
  return harness;
}

/** A project with one container-image web service of `replicas`; its id. */
async function webService(harness: RuntimeHarness, replicas: number): Promise<string> {
  const project = await harness.services.projects.create(admin, { name: 'Shop', description: '' });
  const input = { name: 'web', repoUrl: 'container-image', containerImage: 'nginx:1.27', internalPort: 80, replicas };
  return (await harness.services.serviceCreation.create(admin, project.id, input as CreateServiceInput)).id;
}
