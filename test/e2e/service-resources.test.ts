import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { docker, httpText, ownPortRange, provisionDocker } from '../helpers/docker.js';
import { waitForDeployment } from '../helpers/deployments.js';

/**
 * A service's resources (issue 31) on one server, against the real engine: what the API takes and
 * refuses, and the limits the deployed container runs with (`docker inspect`). One platform, one
 * busybox service, one deployment.
 */
let server: ServerProcess;
let call: ReturnType<typeof api>;
let projectId: string;

beforeAll(async () => {
  await provisionDocker();
  // The harness pauses the runner (BUILD_CONCURRENCY=0) unless a test asks for it: this one deploys.
  server = await startServerProcess({
    BUILD_CONCURRENCY: '1',
    HEALTH_TIMEOUT_MS: '20000',
    STOP_GRACE_SECONDS: '1',
    HOST_PORT_RANGE: ownPortRange(),
  });
  call = api(server.url, server.token);
  projectId = (await call('POST', '/api/projects', { name: `resources-${Date.now()}` })).json.project.id;
}, 10 * 60_000);

afterAll(async () => {
  if (call && projectId) await call('DELETE', `/api/projects/${projectId}`);
  await server?.dispose();
});

const web = (extra: Record<string, unknown>) => ({
  name: 'web',
  repoUrl: 'container-image',
  containerImage: 'busybox:latest',
  startCommand: 'mkdir -p /www && echo limited > /www/index.html && exec httpd -f -p 3000 -h /www',
  internalPort: 3000,
  ...extra,
});

describe('replicas and resources on one server', () => {
  it('refuses what cannot run with a 400 naming the field, and a reservation no server can hold with the reason', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ replicas: -1 }, 'replicas'],
      [{ replicas: 1001 }, 'replicas'],
      [{ replicas: 11 }, 'replicas'],
      [{ replicas: 1.5 }, 'replicas'],
      [{ resources: { memoryLimitMb: 5 } }, 'resources.memoryLimitMb'],
      [{ resources: { cpuLimit: 0 } }, 'resources.cpuLimit'],
      [{ resources: { cpuLimit: '1' } }, 'resources.cpuLimit'],
      [{ resources: { memoryLimitMb: 64, memoryReservationMb: 128 } }, 'resources.memoryReservationMb'],
      [{ resources: { gpus: 1 } }, 'resources'],
    ];
    for (const [extra, field] of cases) {
      const res = await call('POST', `/api/projects/${projectId}/services`, web(extra));
      expect(res.status, `${JSON.stringify(extra)}: ${res.text}`).toBe(400);
      expect(JSON.stringify(res.json), JSON.stringify(extra)).toContain(field);
    }
    const huge = await call('POST', `/api/projects/${projectId}/services`, web({ resources: { memoryReservationMb: 16_000_000 } }));
    expect(huge.status, huge.text).toBe(400);
    expect(huge.json.message).toMatch(/^No server can hold this service: it needs 16000000 MB, the largest free server has \d+ MB$/);
  });

  it('runs the container with the limits asked for, and a PATCH reaches the next deployment', async () => {
    const created = await call('POST', `/api/projects/${projectId}/services`, web({ resources: { cpuLimit: 0.5, memoryLimitMb: 64 } }));
    expect(created.status, created.text).toBe(201);
    const service = created.json.service;
    expect(service).toMatchObject({
      replicas: 1,
      resources: { cpuLimit: 0.5, memoryLimitMb: 64, cpuReservation: null, memoryReservationMb: null },
    });
    const patched = await call('PATCH', `/api/services/${service.id}`, { resources: { memoryReservationMb: 32, cpuReservation: 0.25 } });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.json.service.resources).toEqual({ cpuLimit: 0.5, memoryLimitMb: 64, cpuReservation: 0.25, memoryReservationMb: 32 });

    const queued = await call('POST', `/api/services/${service.id}/deployments`);
    const first = await waitForDeployment(call, queued.json.deployment.id, 60_000).catch(async (error: Error) => {
      const logs = await call('GET', `/api/deployments/${queued.json.deployment.id}/logs`);
      throw new Error(`${error.message}\n${logs.text}\n${server.output().slice(-3000)}`);
    });
    expect(first.deployment.status, first.logs.join('\n')).toBe('succeeded');
    const limits = await docker(
      'inspect',
      '--format',
      '{{.HostConfig.NanoCpus}} {{.HostConfig.Memory}} {{.HostConfig.MemoryReservation}} {{.HostConfig.CpuShares}}',
      first.deployment.containerName!,
    );
    expect(limits).toBe(`${500_000_000} ${64 * 1024 * 1024} ${32 * 1024 * 1024} 256`);
    expect((await httpText(`http://127.0.0.1:${service.hostPort}/`))?.text).toContain('limited');
  }, 120_000);
});
