import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { httpText, provisionDocker } from '../helpers/docker.js';
import { deploy } from '../helpers/deployments.js';

/**
 * Service metrics on the real Docker engine: a busybox web service sampled every second, its
 * current sample and history over HTTP, the history kept across a restart of the platform, and a
 * stopped container answering its history with `running: false`.
 */
let server: ServerProcess;
let call: ReturnType<typeof api>;
let projectId: string;

const ENV = { BUILD_CONCURRENCY: '1', HEALTH_TIMEOUT_MS: '20000', STOP_GRACE_SECONDS: '1', METRICS_INTERVAL_MS: '1000' };

beforeAll(async () => {
  await provisionDocker();
  server = await startServerProcess(ENV);
  call = api(server.url, server.token);
  projectId = (await call('POST', '/api/projects', { name: `metrics-${Date.now()}` })).json.project.id;
}, 10 * 60_000);

afterAll(async () => {
  if (call && projectId) await call('DELETE', `/api/projects/${projectId}`);
  await server?.dispose();
});

async function until<T>(what: string, fn: () => Promise<T | null | undefined | false>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

describe('GET /api/services/:serviceId/metrics', () => {
  it(
    'samples the running container, keeps the history across a restart, and answers running: false once it stops',
    async () => {
      const created = await call('POST', `/api/projects/${projectId}/services`, {
        name: 'web',
        repoUrl: 'container-image',
        containerImage: 'busybox:latest',
        internalPort: 3000,
        startCommand: 'mkdir -p /www && echo metrics > /www/index.html && exec httpd -f -p 3000 -h /www',
      });
      expect(created.status, created.text).toBe(201);
      const service = created.json.service as { id: string; hostPort: number };
      const result = await deploy(call, service.id, 60_000);
      expect(result.deployment.status, result.logs.join('\n')).toBe('succeeded');
      for (let i = 0; i < 20; i++) expect((await httpText(`http://127.0.0.1:${service.hostPort}`))?.text).toContain('metrics');

      const live = await until('a current sample', async () => {
        const res = await call('GET', `/api/services/${service.id}/metrics`);
        expect(res.status, res.text).toBe(200);
        return res.json.current && res.json.current.netRxBytes > 0 ? res.json : null;
      });
      expect(live).toMatchObject({ serviceId: service.id, running: true, intervalMs: 1000 });
      expect(live.current.memoryUsedBytes).toBeGreaterThan(0);
      expect(live.current.memoryLimitBytes).toBeGreaterThan(live.current.memoryUsedBytes);
      expect(live.current.restarts).toBe(0);
      expect(live.current.cpuPercent).toBeGreaterThanOrEqual(0);

      // A stop writes the minute under way: the history is in the database, and a new process reads it.
      await server.stop();
      server = await startServerProcess(ENV, { dataDir: server.dataDir, token: server.token });
      call = api(server.url, server.token);
      const from = new Date(Date.now() - 10 * 60_000).toISOString();
      const history = await call('GET', `/api/services/${service.id}/metrics?from=${from}&step=60`);
      expect(history.status, history.text).toBe(200);
      expect(history.json.series.step).toBe(60);
      expect(history.json.series.points.length).toBeGreaterThanOrEqual(1);
      expect(history.json.series.points.at(-1).memoryUsedBytes).toBeGreaterThan(0);
      expect(history.json.series.points.reduce((sum: number, p: { netRxBytes: number }) => sum + p.netRxBytes, 0)).toBeGreaterThan(0);

      // Stopped by the platform (scaled to 0): a container stopped behind its back is started again by the
      // next reconcile pass (a replica that died), so `running: false` would show only if a sample fell in that gap.
      const scaled = await call('PATCH', `/api/services/${service.id}`, { replicas: 0 });
      expect(scaled.status, scaled.text).toBe(200);
      const stopped = await until('running: false', async () => {
        const res = await call('GET', `/api/services/${service.id}/metrics?from=${from}`);
        return res.json.running === false ? res.json : null;
      });
      expect(stopped.current).toBeNull();
      expect(stopped.series.points.length).toBeGreaterThanOrEqual(1);

      const bad = await call('GET', `/api/services/${service.id}/metrics?step=7`);
      expect(bad.status).toBe(400);
      expect(bad.json.details.field).toBe('step');
    },
    5 * 60_000,
  );
});
