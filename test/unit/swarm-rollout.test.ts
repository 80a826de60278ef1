import { describe, expect, it } from 'vitest';
import {
  placementConstraints,
  rollOutSwarmService,
  runsOnSwarm,
  SwarmRolloutFailed,
  swarmServiceName,
  taskUpstreams,
} from '../../src/cluster/swarm-rollout.js';
import type { SwarmServiceSpec, SwarmServiceStatus, SwarmServices, SwarmTask } from '../../src/cluster/swarm-services.port.js';
import { serviceBody } from '../../adapters/docker/swarm.services.js';
import { ValidationError } from '../../src/domain/errors.js';
import { HEALTH_COMMAND, HEALTH_URL_ENV, healthEnv } from '../../src/cluster/swarm-path.js';

function spec(overrides: Partial<SwarmServiceSpec> = {}): SwarmServiceSpec {
  return {
    name: swarmServiceName('slipway', 'svc1'),
    serviceId: 'svc1',
    deploymentId: 'd2',
    image: 'registry.test:5000/slipway/svc1@sha256:abc',
    registryAuth: { username: 'slipway', password: 'secret', serveraddress: 'registry.test:5000' },
    command: null,
    env: { PORT: '3000' },
    port: 3000,
    replicas: 3,
    network: 'slipway-net-p1',
    publish: false,
    constraints: [],
    resources: { memoryLimitMb: 256, cpuReservation: 0.5 },
    health: { command: ['node', '/health.js'], intervalMs: 1000, timeoutMs: 2000, retries: 3, startPeriodMs: 5000 },
    monitorMs: 3000,
    ...overrides,
  };
}

function task(id: string, deploymentId: string, address: string | null, state = 'running', nodeId = 'n1'): SwarmTask {
  return {
    id,
    nodeId,
    state,
    desiredState: state === 'running' ? 'running' : 'shutdown',
    address,
    endpoint: null,
    deploymentId,
    error: null,
  };
}

/** A fake Swarm: each status poll advances a scripted sequence of (status, tasks). */
class FakeSwarm implements SwarmServices {
  applied: SwarmServiceSpec[] = [];
  networks: string[] = [];
  polls = 0;
  constructor(
    private readonly exists: boolean,
    private readonly script: { status: Partial<SwarmServiceStatus>; tasks: SwarmTask[] }[],
  ) {}
  async ensureNetwork(name: string) {
    this.networks.push(name);
  }
  async apply(value: SwarmServiceSpec) {
    this.applied.push(value);
  }
  private step() {
    return this.script[Math.min(this.polls, this.script.length - 1)] ?? { status: {}, tasks: [] };
  }
  async status(): Promise<SwarmServiceStatus> {
    if (!this.applied.length) return { exists: this.exists, updateState: 'none', updateMessage: '', deploymentId: null, replicas: null };
    this.polls++;
    return { exists: true, updateState: 'none', updateMessage: '', deploymentId: 'd2', replicas: 3, ...this.step().status };
  }
  async tasks() {
    return this.step().tasks;
  }
  async scale() {}
  async remove() {}
}

const fast = { deadlineMs: 1000, pollMs: 1, sleep: async () => {} };

describe('Swarm services on the cluster', () => {
  it('runs on Swarm only with more than one ready server', () => {
    expect(runsOnSwarm(1)).toBe(false);
    expect(runsOnSwarm(2)).toBe(true);
  });

  it('a first create is done when every replica of the deployment runs; the upstreams are the task addresses', async () => {
    const swarm = new FakeSwarm(false, [
      { status: {}, tasks: [task('t1', 'd2', '10.0.1.3'), task('t2', 'd2', null, 'starting')] },
      {
        status: {},
        tasks: [task('t1', 'd2', '10.0.1.3'), task('t2', 'd2', '10.0.1.4', 'running', 'n2'), task('t3', 'd2', '10.0.1.5', 'running', 'n3')],
      },
    ]);
    const upstreams = await rollOutSwarmService(swarm, spec(), fast);
    expect(upstreams).toEqual(['10.0.1.3:3000', '10.0.1.4:3000', '10.0.1.5:3000']);
    expect(swarm.networks).toEqual(['slipway-net-p1']);
  });

  it('an update waits for Swarm to complete and for the new deployment tasks; old tasks are not counted', async () => {
    const old = [task('o1', 'd1', '10.0.1.3'), task('o2', 'd1', '10.0.1.4'), task('o3', 'd1', '10.0.1.5')];
    const swarm = new FakeSwarm(true, [
      { status: { updateState: 'updating' }, tasks: [...old, task('t1', 'd2', '10.0.1.6')] },
      {
        status: { updateState: 'completed' },
        tasks: [task('t1', 'd2', '10.0.1.6'), task('t2', 'd2', '10.0.1.7'), task('t3', 'd2', '10.0.1.8')],
      },
    ]);
    expect(await rollOutSwarmService(swarm, spec(), fast)).toEqual(['10.0.1.6:3000', '10.0.1.7:3000', '10.0.1.8:3000']);
  });

  it('a rollout Swarm rolled back fails with its reason, the old tasks left serving', async () => {
    const swarm = new FakeSwarm(true, [
      { status: { updateState: 'updating' }, tasks: [] },
      {
        status: { updateState: 'rollback_completed', updateMessage: 'update rolled back due to failure or early termination of task t1' },
        tasks: [],
      },
    ]);
    await expect(rollOutSwarmService(swarm, spec(), fast)).rejects.toThrow(/earlier replicas serve on: update rolled back/);
  });

  it('a rollout that never finishes fails at its deadline with the task error, never stuck', async () => {
    let clock = 0;
    const stuck = { ...task('t1', 'd2', null, 'pending'), error: 'no suitable node (insufficient resources on 3 nodes)' };
    const swarm = new FakeSwarm(false, [{ status: {}, tasks: [stuck] }]);
    await expect(
      rollOutSwarmService(swarm, spec(), { deadlineMs: 100, pollMs: 10, now: () => clock, sleep: async (ms) => void (clock += ms) }),
    ).rejects.toThrow(SwarmRolloutFailed);
    await expect(
      rollOutSwarmService(new FakeSwarm(false, [{ status: {}, tasks: [stuck] }]), spec(), {
        deadlineMs: 100,
        pollMs: 10,
        now: () => clock,
        sleep: async (ms) => void (clock += ms),
      }),
    ).rejects.toThrow(/0 of 3 replicas running\): no suitable node/);
  });

  it('task upstreams keep running tasks with an address, of the given deployment', () => {
    const tasks = [
      task('a', 'd1', '10.0.0.2'),
      task('b', 'd2', '10.0.0.3'),
      task('c', 'd2', null),
      task('d', 'd2', '10.0.0.4', 'shutdown'),
    ];
    expect(taskUpstreams(tasks, 80)).toEqual(['10.0.0.2:80', '10.0.0.3:80']);
    expect(taskUpstreams(tasks, 80, 'd2')).toEqual(['10.0.0.3:80']);
  });

  it('placement becomes constraints; a label no node has is a 400 listing those that exist', () => {
    const nodes: Record<string, string>[] = [{ zone: 'eu', disk: 'ssd' }, { zone: 'us' }];
    expect(placementConstraints({ must: { zone: 'eu' }, mustNot: { disk: 'hdd' } }, nodes)).toEqual([
      'node.labels.zone==eu',
      'node.labels.disk!=hdd',
    ]);
    expect(placementConstraints(undefined, nodes)).toEqual([]);
    try {
      placementConstraints({ must: { zone: 'ap' } }, nodes);
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as Error).message).toContain('disk=ssd, zone=eu, zone=us');
    }
  });

  it('the Engine spec is dnsrr with no published port, start-first one at a time, rolled back on failure', () => {
    const body = serviceBody(spec()) as {
      EndpointSpec: { Mode: string; Ports?: unknown };
      UpdateConfig: { Order: string; Parallelism: number; FailureAction: string };
      Mode: { Replicated: { Replicas: number } };
      TaskTemplate: {
        ContainerSpec: { Healthcheck: { Test: string[] }; Labels: Record<string, string> };
        Resources: { Limits: { MemoryBytes: number }; Reservations: { NanoCPUs: number } };
      };
    };
    expect(body.EndpointSpec).toEqual({ Mode: 'dnsrr' });
    expect(body.UpdateConfig).toMatchObject({ Order: 'start-first', Parallelism: 1, FailureAction: 'rollback' });
    expect(body.Mode.Replicated.Replicas).toBe(3);
    expect(body.TaskTemplate.ContainerSpec.Healthcheck.Test).toEqual(['CMD', 'node', '/health.js']);
    expect(body.TaskTemplate.ContainerSpec.Labels['slipway.deployment']).toBe('d2');
    expect(body.TaskTemplate.Resources.Limits.MemoryBytes).toBe(256 * 1024 * 1024);
    expect(body.TaskTemplate.Resources.Reservations.NanoCPUs).toBe(5e8);
    expect(JSON.stringify(body)).not.toContain('secret');
  });
});

describe("a web task's health check", () => {
  it('is a constant script that reads the URL from the environment: a health path is data, never shell', async () => {
    const { execFile } = await import('node:child_process');
    const { createServer } = await import('node:http');
    const { existsSync, mkdtempSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const path = await import('node:path');
    const dir = mkdtempSync(path.join(tmpdir(), 'health-'));
    const marker = path.join(dir, 'ran');
    const seen: string[] = [];
    const server = createServer((req, res) => {
      seen.push(req.url ?? '');
      res.end('ok');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as { port: number }).port;
    try {
      const hostile = `/h';touch ${marker};'$(touch ${marker})`;
      const env = healthEnv(port, hostile);
      expect(env).toEqual({ [HEALTH_URL_ENV]: `http://127.0.0.1:${port}${hostile}` });
      // Nothing of the URL is in the argv.
      expect(HEALTH_COMMAND.join(' ')).not.toContain('127.0.0.1');
      const code = await new Promise<number>((resolve) =>
        execFile(HEALTH_COMMAND[0]!, HEALTH_COMMAND.slice(1), { env: { PATH: process.env.PATH, ...env }, timeout: 10_000 }, (error) =>
          resolve(error ? Number((error as { code?: number }).code ?? 1) : 0),
        ),
      );
      expect(code).toBe(0);
      expect(seen).toHaveLength(1);
      expect(existsSync(marker)).toBe(false);
      // Nothing answering: unhealthy.
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      const down = await new Promise<number>((resolve) =>
        execFile(
          HEALTH_COMMAND[0]!,
          HEALTH_COMMAND.slice(1),
          { env: { PATH: process.env.PATH, ...healthEnv(port, '/') }, timeout: 10_000 },
          (error) => resolve(error ? 1 : 0),
        ),
      );
      expect(down).toBe(1);
    } finally {
      if (server.listening) server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
