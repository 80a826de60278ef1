import { describe, expect, it } from 'vitest';
import {
  placementConstraints,
  runsOnSwarm,
  startSwarmService,
  SwarmRolloutFailed,
  taskUpstreams,
} from '../../src/cluster/swarm-rollout.js';
import type { SwarmServiceSpec, SwarmServiceStatus, SwarmServices, SwarmTask } from '../../src/cluster/swarm-services.port.js';
import { serviceBody } from '../../adapters/docker/swarm.services.js';
import { ValidationError } from '../../src/domain/errors.js';
import { HEALTH_COMMAND, HEALTH_URL_ENV, healthEnv } from '../../src/cluster/swarm-path.js';

function spec(overrides: Partial<SwarmServiceSpec> = {}): SwarmServiceSpec {
  return {
    name: 'slipway-svc1-d2',
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
    stopGraceMs: 10_000,
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

/** A fake Swarm: each tasks poll advances a scripted sequence of the new service's tasks. */
class FakeSwarm implements SwarmServices {
  applied: SwarmServiceSpec[] = [];
  networks: string[] = [];
  removed: string[] = [];
  polls = 0;
  constructor(private readonly script: SwarmTask[][]) {}
  async ensureNetwork(name: string) {
    this.networks.push(name);
  }
  async apply(value: SwarmServiceSpec) {
    this.applied.push(value);
  }
  async list() {
    return [];
  }
  async status(): Promise<SwarmServiceStatus> {
    return { exists: true, updateState: 'none', updateMessage: '', deploymentId: 'd2', replicas: 3 };
  }
  async tasks() {
    return this.script[Math.min(this.polls++, this.script.length - 1)] ?? [];
  }
  async scale() {}
  async remove(name: string) {
    this.removed.push(name);
  }
}

const fast = { deadlineMs: 1000, pollMs: 1, sleep: async () => {} };

describe('Swarm services on the cluster', () => {
  it('runs on Swarm only with more than one ready server', () => {
    expect(runsOnSwarm(1)).toBe(false);
    expect(runsOnSwarm(2)).toBe(true);
  });

  it("a deployment's service is created beside the serving one and done when every replica of it runs healthy", async () => {
    const swarm = new FakeSwarm([
      [task('t1', 'd2', '10.0.1.3'), task('t2', 'd2', null, 'starting')],
      [task('t1', 'd2', '10.0.1.3'), task('t2', 'd2', '10.0.1.4', 'running', 'n2'), task('t3', 'd2', '10.0.1.5', 'running', 'n3')],
    ]);
    const upstreams = await startSwarmService(swarm, spec(), fast);
    expect(upstreams).toEqual(['10.0.1.3:3000', '10.0.1.4:3000', '10.0.1.5:3000']);
    expect(swarm.networks).toEqual(['slipway-net-p1']);
    expect(swarm.applied.map((s) => s.name)).toEqual(['slipway-svc1-d2']);
    // It never touches (or removes) anything: the caller switches the routes, then retires the earlier service.
    expect(swarm.removed).toEqual([]);
  });

  it('a task still starting (its health check not yet passed) is not counted', async () => {
    let clock = 0;
    const swarm = new FakeSwarm([[task('t1', 'd2', '10.0.1.3'), task('t2', 'd2', '10.0.1.4', 'starting'), task('t3', 'd2', '10.0.1.5')]]);
    await expect(
      startSwarmService(swarm, spec(), { deadlineMs: 100, pollMs: 10, now: () => clock, sleep: async (ms: number) => void (clock += ms) }),
    ).rejects.toThrow(/2 of 3 running/);
  });

  it('a replica that fails (its health check, its pull) fails the start at once with its reason', async () => {
    const failed = { ...task('t2', 'd2', '10.0.1.4', 'failed'), error: 'task: non-zero exit (137): dockerexec: unhealthy container' };
    const swarm = new FakeSwarm([[task('t1', 'd2', '10.0.1.3', 'starting')], [task('t1', 'd2', '10.0.1.3'), failed]]);
    await expect(startSwarmService(swarm, spec(), fast)).rejects.toThrow(
      /failed before it served \(failed: task: non-zero exit \(137\): dockerexec: unhealthy container\); the earlier replicas serve on/,
    );
    expect(swarm.polls).toBe(2);
  });

  it('a start that never finishes fails at its deadline with the task error, never stuck', async () => {
    let clock = 0;
    const stuck = { ...task('t1', 'd2', null, 'pending'), error: 'no suitable node (insufficient resources on 3 nodes)' };
    const options = { deadlineMs: 100, pollMs: 10, now: () => clock, sleep: async (ms: number) => void (clock += ms) };
    await expect(startSwarmService(new FakeSwarm([[stuck]]), spec(), options)).rejects.toThrow(SwarmRolloutFailed);
    await expect(startSwarmService(new FakeSwarm([[stuck]]), spec(), options)).rejects.toThrow(/0 of 3 running\): no suitable node/);
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

  it('the Engine spec is dnsrr with no published port unless asked, with the stop grace period; scaling rolls start-first', () => {
    const body = serviceBody(spec()) as {
      EndpointSpec: { Mode: string; Ports?: unknown };
      UpdateConfig: { Order: string; Parallelism: number; FailureAction: string };
      Mode: { Replicated: { Replicas: number } };
      TaskTemplate: {
        ContainerSpec: { Healthcheck: { Test: string[] }; Labels: Record<string, string>; StopGracePeriod: number };
        Resources: { Limits: { MemoryBytes: number }; Reservations: { NanoCPUs: number } };
      };
    };
    expect(body.EndpointSpec).toEqual({ Mode: 'dnsrr' });
    expect(body.UpdateConfig).toMatchObject({ Order: 'start-first', Parallelism: 1, FailureAction: 'rollback' });
    expect(body.Mode.Replicated.Replicas).toBe(3);
    expect(body.TaskTemplate.ContainerSpec.StopGracePeriod).toBe(10_000 * 1_000_000);
    expect((serviceBody(spec({ publish: true })) as { EndpointSpec: unknown }).EndpointSpec).toEqual({
      Mode: 'dnsrr',
      Ports: [{ Protocol: 'tcp', TargetPort: 3000, PublishMode: 'host' }],
    });
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
