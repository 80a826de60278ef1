import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freePort, quietPort, requestVia, waitUntilServed } from '../helpers/caddy.js';
import { deploy } from '../helpers/deployments.js';
import { docker, provisionDocker } from '../helpers/docker.js';
import { api, startServerProcess, type ServerProcess } from '../helpers/server-process.js';

/**
 * The default proxy mode on the real Docker engine: the platform runs Caddy as its own container
 * `<prefix>-caddy` (the stand-in `caddy:2` image of test/provision/images.sh) on the host network,
 * loads the routes into it, and starts it again and reloads the routes when it is stopped.
 */
const prefix = `slipway-t${Array.from(randomBytes(8), (b) => String.fromCharCode(97 + (b % 26))).join('')}`;
const caddyName = `${prefix}-caddy`;
const volumes = [`${prefix}-caddy-data`, `${prefix}-caddy-config`];
const hostname = `web-${prefix}.e2e.test`;

let server: ServerProcess | undefined;
let call: ReturnType<typeof api>;
let adminPort: number;
let httpPort: number;
let projectId: string | undefined;

interface Inspected {
  Id: string;
  State: { Running: boolean; StartedAt: string; FinishedAt: string };
  HostConfig: { NetworkMode: string; RestartPolicy: { Name: string } };
  Config: { Image: string; Labels: Record<string, string> };
  Mounts: Array<{ Type: string; Name?: string; Source?: string; Destination: string; RW?: boolean }>;
}

async function inspectCaddy(): Promise<Inspected | null> {
  try {
    return (JSON.parse(await docker('inspect', caddyName)) as Inspected[])[0] ?? null;
  } catch {
    return null;
  }
}

async function waitFor<T>(what: string, fn: () => Promise<T | null | undefined | false>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`${what} not reached within ${timeoutMs} ms\n${server?.output().slice(-4000) ?? ''}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

beforeAll(async () => {
  await provisionDocker();
  adminPort = await freePort();
  httpPort = await quietPort();
  server = await startServerProcess({
    PROXY: 'caddy',
    PROXY_ADMIN_PORT: String(adminPort),
    PROXY_HTTP_PORT: String(httpPort),
    PROXY_AUTO_HTTPS: 'false',
    RESOURCE_PREFIX: prefix,
    BUILD_CONCURRENCY: '2',
  });
  call = api(server.url, server.token);
}, 20 * 60_000);

afterAll(async () => {
  if (server && projectId) await call('DELETE', `/api/projects/${projectId}`).catch(() => {});
  await server?.dispose();
  // The platform leaves its proxy running when it stops (it keeps serving): the test removes it.
  await docker('rm', '-f', caddyName).catch(() => '');
  for (const volume of volumes) await docker('volume', 'rm', '-f', volume).catch(() => '');
  expect(await inspectCaddy()).toBeNull();
  expect(await docker('volume', 'ls', '-q', '--filter', `name=${prefix}-caddy`)).toBe('');
}, 60_000);

it('runs <prefix>-caddy on the host network, restarted unless stopped, with its volumes and its admin API on loopback', async () => {
  const caddy = await waitFor(
    'the proxy container to run',
    async () => {
      const inspected = await inspectCaddy();
      return inspected?.State.Running ? inspected : null;
    },
    60_000,
  );
  expect(caddy.HostConfig.NetworkMode).toBe('host');
  expect(caddy.HostConfig.RestartPolicy.Name).toBe('unless-stopped');
  expect(caddy.Config.Image).toBe('caddy:2');
  expect(caddy.Config.Labels).toMatchObject({ 'slipway.managed': 'true', 'slipway.role': 'proxy' });
  expect(
    caddy.Mounts.filter((m) => m.Type === 'volume')
      .map((m) => `${m.Name}:${m.Destination}`)
      .sort(),
  ).toEqual([`${volumes[1]}:/config`, `${volumes[0]}:/data`]);
  // The routes directory (one file per hostname) from the platform's data directory, read-only; the
  // access log directory (the metrics' request counts) read-write.
  expect(
    caddy.Mounts.filter((m) => m.Type === 'bind')
      .map((m) => ({ source: m.Source, target: m.Destination, rw: m.RW }))
      .sort((a, b) => a.target.localeCompare(b.target)),
  ).toEqual([
    { source: path.join(server!.dataDir, 'caddy-logs'), target: '/slipway/logs', rw: true },
    { source: path.join(server!.dataDir, 'caddy-routes'), target: '/slipway/routes', rw: false },
  ]);
  expect(caddy.Config.Labels['slipway.proxy-routes']).toBe(path.join(server!.dataDir, 'caddy-routes'));
  expect(caddy.Config.Labels['slipway.proxy-logs']).toBe(path.join(server!.dataDir, 'caddy-logs'));

  const admin = await waitFor(
    'the admin API to answer',
    async () => {
      const res = await fetch(`http://127.0.0.1:${adminPort}/config/admin`, { signal: AbortSignal.timeout(2_000) }).catch(() => null);
      return res?.ok ? ((await res.json()) as unknown) : null;
    },
    30_000,
  );
  expect(admin).toEqual({ listen: `127.0.0.1:${adminPort}` });
  // The routes (none yet) are loaded once the runner has listed the containers: a hostname nobody configured is a 404.
  await waitUntilServed(httpPort, 'nobody.e2e.test', { status: 404, text: /No service is configured/ }, 30_000);
}, 120_000);

it('serves a deployed service through the proxy port by its hostname', async () => {
  const project = await call('POST', '/api/projects', { name: `caddy-${Date.now()}` });
  expect(project.status, project.text).toBe(201);
  projectId = project.json.project.id as string;
  const created = await call('POST', `/api/projects/${projectId}/services`, {
    name: 'web',
    repoUrl: 'container-image',
    containerImage: 'busybox:latest',
    startCommand: 'echo hi > /tmp/index.html && httpd -f -p 3000 -h /tmp',
    internalPort: 3000,
  });
  expect(created.status, created.text).toBe(201);
  const serviceId = created.json.service.id as string;

  const domain = await call('POST', `/api/services/${serviceId}/domains`, { hostname });
  expect(domain.status, domain.text).toBe(201);
  expect(domain.json.proxy).toMatchObject({ ok: true });
  expect(domain.json.proxy.detail).toMatch(new RegExp(`plain HTTP on :${httpPort}`));
  // Routed before it has a container: 503, not another site or a connection error.
  expect(await requestVia(httpPort, hostname)).toEqual({ status: 503, text: 'This service has no running container yet.\n' });

  const result = await deploy(call, serviceId);
  expect(result.deployment.status, result.logs.join('\n')).toBe('succeeded');
  // The first container's slot is a file in the routes directory: no load.
  expect(
    result.logs.some((l) =>
      new RegExp(
        `^Routes switched to ${result.deployment.containerName}: traffic slot [\\d.]+ opened; Caddy serves .*; hostnames updated without a reload$`,
      ).test(l),
    ),
    result.logs.join('\n'),
  ).toBe(true);
  const served = await waitUntilServed(httpPort, hostname, { status: 200, text: /^hi\n?$/ }, 10_000);
  expect(served.response.text.trim()).toBe('hi');
  expect((await requestVia(httpPort, 'nobody.e2e.test'))?.status).toBe(404);
}, 300_000);

it('a stopped proxy container is started again and gets its routes back within 10 s, with no API call', async () => {
  const before = await inspectCaddy();
  expect(before?.State.Running).toBe(true);
  await docker('stop', caddyName);
  const stoppedAt = Date.now();
  // Sampled right after the stop, "not running" raced the platform starting it again (seen once in 8
  // runs, 0.6 s later): that it stopped is read from its exit time below instead.

  const back = await waitUntilServed(
    httpPort,
    hostname,
    { status: 200, text: /^hi\n?$/ },
    Math.max(1_000, 10_000 - (Date.now() - stoppedAt)),
  );
  const elapsed = Date.now() - stoppedAt;
  expect(elapsed, `routes came back after ${elapsed} ms`).toBeLessThan(10_000);
  expect(back.response.text.trim()).toBe('hi');
  const after = await inspectCaddy();
  // The same container, started again, not a new one.
  expect(after?.Id).toBe(before!.Id);
  expect(after?.State.Running).toBe(true);
  expect(after?.State.StartedAt).not.toBe(before!.State.StartedAt);
  // It did stop: it finished after it had started, and before it started again.
  expect(Date.parse(after!.State.FinishedAt)).toBeGreaterThan(Date.parse(before!.State.StartedAt));
  expect(Date.parse(after!.State.FinishedAt)).toBeLessThanOrEqual(Date.parse(after!.State.StartedAt));
  expect(server!.output()).toMatch(/starting the stopped proxy container/);
}, 60_000);
