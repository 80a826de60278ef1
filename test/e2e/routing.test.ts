import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { ownPortRange, provisionDocker } from '../helpers/docker.js';
import { deploy } from '../helpers/deployments.js';
import { adminGet, requestVia, startCaddy, waitUntilServed, type CaddyProcess, quietPort } from '../helpers/caddy.js';
import { expectErrorShape } from '../helpers/error-bodies.js';

/**
 * Routing through a real Caddy (Debian's package, admin API on loopback) kept by the real server:
 * every request goes to Caddy's HTTP port with the Host header a browser would send.
 */
const run = promisify(execFile);
const ROOT_DOMAIN = 'apps.test';
const NOT_FOUND = /^No service is configured for this hostname\.\s*$/;
const NO_CONTAINER = /^This service has no running container yet\.\s*$/;

let caddy: CaddyProcess;
/** Where Caddy serves the routes (see quietPort). */
let httpPort: number;
let server: ServerProcess;
let call: ReturnType<typeof api>;
const projectIds = new Set<string>();

interface Service {
  id: string;
  slug: string;
  projectId: string;
}
interface Project {
  id: string;
  slug: string;
}

/** The services most tests use: deployed in beforeAll. */
let main: Project;
let alpha: Service;
let beta: Service;
let idle: Service;

async function project(name: string): Promise<Project> {
  const res = await call('POST', '/api/projects', { name: `${name}-${Date.now()}` });
  if (res.status !== 201) throw new Error(`create project: ${res.status} ${res.text}`);
  projectIds.add(res.json.project.id);
  return res.json.project;
}

async function service(projectId: string, body: Record<string, unknown>): Promise<Service> {
  const res = await call('POST', `/api/projects/${projectId}/services`, body);
  if (res.status !== 201) throw new Error(`create service: ${res.status} ${res.text}`);
  return res.json.service;
}

/** A busybox httpd serving `text`: deploys in a couple of seconds. */
function textService(projectId: string, name: string, text: string): Promise<Service> {
  return service(projectId, {
    name,
    repoUrl: 'container-image',
    containerImage: 'busybox:latest',
    internalPort: 3000,
    startCommand: `mkdir -p /www && echo ${text} > /www/index.html && exec httpd -f -p 3000 -h /www`,
  });
}

async function deployed(serviceId: string): Promise<void> {
  const result = await deploy(call, serviceId, 60_000);
  expect(result.deployment.status, result.logs.join('\n')).toBe('succeeded');
}

async function addDomain(serviceId: string, hostname: string) {
  const res = await call('POST', `/api/services/${serviceId}/domains`, { hostname });
  expect(res.status, res.text).toBe(201);
  return res.json as {
    ok: true;
    domain: { id: string; hostname: string; serviceId: string; status: string };
    proxy: { ok: boolean; detail: string };
  };
}

async function overview(serviceId: string) {
  const res = await call('GET', `/api/services/${serviceId}/overview`);
  expect(res.status, res.text).toBe(200);
  return res.json;
}

function generated(svc: Service, proj: Project): string {
  return `${svc.slug}-${proj.slug}.${ROOT_DOMAIN}`;
}

/**
 * A successful apply, served as plain HTTP on Caddy's port, and Caddy was not reloaded: hostnames,
 * services and their addresses are files of its routes directory.
 */
function expectApplied(proxy: { ok: boolean; detail: string } | undefined, label: string): void {
  expect(proxy, label).toBeDefined();
  expect(proxy!.ok, `${label}: ${proxy!.detail}`).toBe(true);
  const serving = `\\d+ routes? \\(plain HTTP on :${httpPort}\\)`;
  expect(proxy!.detail, label).toMatch(new RegExp(`^Caddy serves ${serving}; hostnames updated without a reload$`));
}

/** The answer through Caddy right now, for `hostname`. */
async function via(hostname: string) {
  const answer = await requestVia(httpPort, hostname);
  expect(answer, `no answer through Caddy for ${hostname}`).not.toBeNull();
  return answer!;
}

beforeAll(async () => {
  // Both fail loudly (throw) when Docker or caddy cannot be had: these tests never skip.
  await provisionDocker();
  await run('bash', ['test/provision/caddy.sh']);
  caddy = await startCaddy();
  httpPort = await quietPort();
  server = await startServerProcess({
    ...caddy.platformEnv,
    PROXY_HTTP_PORT: String(httpPort),
    ROOT_DOMAIN,
    BUILD_CONCURRENCY: '2',
    STOP_GRACE_SECONDS: '1',
    HOST_PORT_RANGE: ownPortRange(),
  });
  call = api(server.url, server.token);

  main = await project('routing');
  alpha = await textService(main.id, 'alpha', 'alpha-says-hi');
  beta = await textService(main.id, 'beta', 'beta-says-hi');
  idle = await textService(main.id, 'idle', 'never-deployed');
  // One after the other: concurrent first deployments of one project race to create its network
  // (product bug: Docker 20.10 then creates it twice, and deployments fail with "network ... is ambiguous").
  await deployed(alpha.id);
  await deployed(beta.id);
}, 20 * 60_000);

afterAll(async () => {
  try {
    if (call) for (const id of projectIds) await call('DELETE', `/api/projects/${id}`).catch(() => undefined);
  } finally {
    await server?.dispose();
    await caddy?.stop();
  }
}, 60_000);

describe('requests through Caddy', () => {
  it('sends each hostname to its own service, 404 for unknown hosts, 503 for a service without a container, and serves the generated hostname', async () => {
    const a = await addDomain(alpha.id, 'alpha.example.test');
    expect(a).toMatchObject({ ok: true, domain: { hostname: 'alpha.example.test', serviceId: alpha.id, status: 'active' } });
    // With ROOT_DOMAIN, every web service already has a route (its generated hostname): a domain is a
    // file in that route's directory, and Caddy is not reloaded.
    expectApplied(a.proxy, 'POST alpha domain');
    expectApplied((await addDomain(beta.id, 'Beta.Example.Test.')).proxy, 'POST beta domain');
    expectApplied((await addDomain(idle.id, 'idle.example.test')).proxy, 'POST idle domain');

    // The change is live when the response comes: no waiting needed.
    const first = await via('alpha.example.test');
    expect(first.status).toBe(200);
    expect(first.text.trim()).toBe('alpha-says-hi');
    const second = await via('beta.example.test');
    expect(second.status).toBe(200);
    expect(second.text.trim()).toBe('beta-says-hi');

    const unknown = await via('nobody.example.test');
    expect(unknown.status).toBe(404);
    expect(unknown.text).toMatch(NOT_FOUND);

    const notYet = await via('idle.example.test');
    expect(notYet.status).toBe(503);
    expect(notYet.text).toMatch(NO_CONTAINER);

    // ROOT_DOMAIN gives every web service `<service>-<project>.<root>` too.
    const gen = await via(generated(alpha, main));
    expect(gen.status).toBe(200);
    expect(gen.text.trim()).toBe('alpha-says-hi');
    const genBeta = await via(generated(beta, main));
    expect(genBeta.status).toBe(200);
    expect(genBeta.text.trim()).toBe('beta-says-hi');
    const genIdle = await via(generated(idle, main));
    expect(genIdle.status).toBe(503);

    // The preferred domain (the first one added) is the public URL; plain HTTP as PROXY_AUTO_HTTPS=false.
    const view = await overview(alpha.id);
    expect(view.service.preferredDomain).toBe('alpha.example.test');
    expect(view.service.primaryUrl).toBe(`http://alpha.example.test:${httpPort}`);
    expect(view.domains.map((d: { hostname: string }) => d.hostname)).toEqual(['alpha.example.test']);
    // The hostname was normalized (lower case, no trailing dot) before it was saved and routed.
    expect((await overview(beta.id)).service.primaryUrl).toBe(`http://beta.example.test:${httpPort}`);
  });

  it("routes a hostname sent in any case, or with the root's trailing dot (RFC 4343), without a reload", async () => {
    const before = (await adminGet(caddy.adminUrl, '/config/')).body;
    for (const sent of ['BETA.EXAMPLE.TEST', 'Beta.Example.Test.', generated(beta, main).toUpperCase(), `bEtA.example.test:${httpPort}`]) {
      const answer = await via(sent);
      expect(answer.status, sent).toBe(200);
      expect(answer.text.trim(), sent).toBe('beta-says-hi');
    }
    const waiting = await via('IDLE.Example.TEST');
    expect(waiting.status).toBe(503);
    expect(waiting.text).toMatch(NO_CONTAINER);
    expect((await via('NOBODY.example.test')).text).toMatch(NOT_FOUND);
    expect((await adminGet(caddy.adminUrl, '/config/')).body).toEqual(before);
  });

  it('moves a hostname on PATCH: the new name serves, the old one is 404', async () => {
    const domain = (await overview(alpha.id)).domains.find((d: { hostname: string }) => d.hostname === 'alpha.example.test');
    expect(domain).toBeDefined();
    const res = await call('PATCH', `/api/services/${alpha.id}/domains/${domain.id}`, { hostname: 'alpha-moved.example.test' });
    expect(res.status, res.text).toBe(200);
    expect(res.json.ok).toBe(true);
    expectApplied(res.json.proxy, 'PATCH domain');

    const moved = await via('alpha-moved.example.test');
    expect(moved.status).toBe(200);
    expect(moved.text.trim()).toBe('alpha-says-hi');
    const old = await via('alpha.example.test');
    expect(old.status).toBe(404);
    expect(old.text).toMatch(NOT_FOUND);

    const view = await overview(alpha.id);
    expect(view.domains.map((d: { hostname: string }) => d.hostname)).toEqual(['alpha-moved.example.test']);
    expect(view.service.primaryUrl).toBe(`http://alpha-moved.example.test:${httpPort}`);
  });

  it('stops serving a deleted domain, a deleted service and a deleted project', async () => {
    const other = await project('routing-doomed');
    const [gamma, delta] = await Promise.all([
      textService(main.id, 'gamma', 'gamma-says-hi'),
      textService(other.id, 'delta', 'delta-says-hi'),
    ]);
    // Two projects: two networks, so these two may deploy at once.
    await Promise.all([deployed(gamma.id), deployed(delta.id)]);
    const extra = await addDomain(beta.id, 'beta-extra.example.test');
    expectApplied(extra.proxy, 'POST beta extra');
    expectApplied((await addDomain(gamma.id, 'gamma.example.test')).proxy, 'POST gamma');
    expectApplied((await addDomain(delta.id, 'delta.example.test')).proxy, 'POST delta');
    for (const [host, text] of [
      ['beta-extra.example.test', 'beta-says-hi'],
      ['gamma.example.test', 'gamma-says-hi'],
      [generated(gamma, main), 'gamma-says-hi'],
      ['delta.example.test', 'delta-says-hi'],
      [generated(delta, other), 'delta-says-hi'],
    ] as const) {
      const answer = await via(host);
      expect(answer.status, host).toBe(200);
      expect(answer.text.trim(), host).toBe(text);
    }

    // A deleted domain: that hostname only; the service keeps its other names.
    const deletedDomain = await call('DELETE', `/api/services/${beta.id}/domains/${extra.domain.id}`);
    expect(deletedDomain.status, deletedDomain.text).toBe(200);
    expect(deletedDomain.json.ok).toBe(true);
    expectApplied(deletedDomain.json.proxy, 'DELETE domain');
    expect((await via('beta-extra.example.test')).status).toBe(404);
    expect((await via('beta.example.test')).text.trim()).toBe('beta-says-hi');

    // A deleted service: its domain and its generated hostname.
    const deletedService = await call('DELETE', `/api/services/${gamma.id}`);
    expect(deletedService.status, deletedService.text).toBe(200);
    expect(deletedService.json.ok).toBe(true);
    expectApplied(deletedService.json.proxy, 'DELETE service');
    for (const host of ['gamma.example.test', generated(gamma, main)]) {
      const answer = await via(host);
      expect(answer.status, host).toBe(404);
      expect(answer.text, host).toMatch(NOT_FOUND);
    }

    // A deleted project: every hostname of its services.
    const deletedProject = await call('DELETE', `/api/projects/${other.id}`);
    expect(deletedProject.status, deletedProject.text).toBe(200);
    expect(deletedProject.json.ok).toBe(true);
    expectApplied(deletedProject.json.proxy, 'DELETE project');
    projectIds.delete(other.id);
    for (const host of ['delta.example.test', generated(delta, other)]) {
      const answer = await via(host);
      expect(answer.status, host).toBe(404);
      expect(answer.text, host).toMatch(NOT_FOUND);
    }

    // The rest of the table is untouched.
    expect((await via('alpha-moved.example.test')).text.trim()).toBe('alpha-says-hi');
  });
});

describe('a Caddy that restarts empty', () => {
  it('gets every route back within 10 s with no API call, including a domain saved while it was down', async () => {
    const before = await via('alpha-moved.example.test');
    expect(before.status).toBe(200);

    await caddy.kill();
    // Down: nothing listens on the HTTP port any more.
    expect(await requestVia(httpPort, 'alpha-moved.example.test', '/', 1_000)).toBeNull();

    // The change is saved anyway; the proxy part says why it could not be applied.
    const whileDown = await call('POST', `/api/services/${beta.id}/domains`, { hostname: 'beta-late.example.test' });
    expect(whileDown.status, whileDown.text).toBe(201);
    expect(whileDown.json.ok).toBe(true);
    expect(whileDown.json.domain.hostname).toBe('beta-late.example.test');
    expect(whileDown.json.proxy.ok).toBe(false);
    expect(whileDown.json.proxy.detail).toMatch(/admin API/);
    expect(whileDown.json.proxy.detail).toMatch(/unreachable/);
    expect(whileDown.json.proxy.detail).toContain(caddy.adminUrl);
    const view = await overview(beta.id);
    expect(view.domains.map((d: { hostname: string }) => d.hostname)).toContain('beta-late.example.test');

    await caddy.restart();
    // Straight after the restart Caddy has only its admin API: every route comes back from the reconcile loop.
    const expected: Array<[string, { status: number; text: RegExp }]> = [
      ['alpha-moved.example.test', { status: 200, text: /alpha-says-hi/ }],
      [generated(alpha, main), { status: 200, text: /alpha-says-hi/ }],
      ['beta.example.test', { status: 200, text: /beta-says-hi/ }],
      [generated(beta, main), { status: 200, text: /beta-says-hi/ }],
      ['beta-late.example.test', { status: 200, text: /beta-says-hi/ }],
      ['idle.example.test', { status: 503, text: NO_CONTAINER }],
      ['alpha.example.test', { status: 404, text: NOT_FOUND }],
      ['nobody.example.test', { status: 404, text: NOT_FOUND }],
    ];
    const results = await Promise.all(expected.map(([host, want]) => waitUntilServed(httpPort, host, want, 15_000)));
    for (const [i, result] of results.entries()) {
      expect(result.afterMs, expected[i]![0]).toBeLessThan(10_000);
    }
  });
});

describe('bad domain input over REST', () => {
  it('answers 400 with the error body for invalid hostnames, and saves nothing', async () => {
    const invalid = [
      'bad_host.example.com',
      '-x.example.com',
      'a..b.com',
      `${`${'a'.repeat(60)}.`.repeat(5)}com`,
      '',
      'http://x.com',
      'localhost',
      '10.0.0.1',
      'x-.example.com',
    ];
    expect(invalid[3]!.length).toBeGreaterThan(253);
    const before = (await overview(idle.id)).domains;
    for (const hostname of invalid) {
      const label = `hostname ${JSON.stringify(hostname.length > 40 ? `${hostname.slice(0, 40)}…(${hostname.length})` : hostname)}`;
      const res = await call('POST', `/api/services/${idle.id}/domains`, { hostname });
      expectErrorShape(res, 400, label);
      expect(res.json.details, label).toEqual({ field: 'hostname' });
    }
    // A missing hostname and a PATCH to an invalid one are the same validation error.
    expectErrorShape(await call('POST', `/api/services/${idle.id}/domains`, {}), 400, 'no hostname');
    const patched = await call('PATCH', `/api/services/${idle.id}/domains/${before[0].id}`, { hostname: 'bad_host.example.com' });
    expectErrorShape(patched, 400, 'PATCH to an invalid hostname');
    expect(patched.json.details).toEqual({ field: 'hostname' });
    expect((await overview(idle.id)).domains).toEqual(before);
  });

  it('answers 409 for a hostname another service has, in this project or another', async () => {
    const elsewhere = await project('routing-other');
    const stranger = await textService(elsewhere.id, 'stranger', 'stranger-says-hi');
    const sameProject = await call('POST', `/api/services/${idle.id}/domains`, { hostname: 'beta.example.test' });
    expectErrorShape(sameProject, 409, 'hostname of a service in the same project');
    expect(sameProject.json.details).toEqual({ field: 'hostname' });
    const otherProject = await call('POST', `/api/services/${stranger.id}/domains`, { hostname: 'beta.example.test' });
    expectErrorShape(otherProject, 409, 'hostname of a service in another project');
    // Case and a trailing dot do not make it another hostname.
    expectErrorShape(
      await call('POST', `/api/services/${stranger.id}/domains`, { hostname: 'BETA.example.test.' }),
      409,
      'same hostname, other spelling',
    );
    // Moving a domain onto a taken name is refused the same way.
    const own = (await overview(idle.id)).domains[0];
    expectErrorShape(
      await call('PATCH', `/api/services/${idle.id}/domains/${own.id}`, { hostname: 'alpha-moved.example.test' }),
      409,
      'PATCH onto a taken hostname',
    );
    expect((await overview(stranger.id)).domains).toEqual([]);
    // Two services asking for one new hostname at the same moment: one gets it, the other a 409 (not a 500).
    const race = await Promise.all([
      call('POST', `/api/services/${idle.id}/domains`, { hostname: 'contested.example.test' }),
      call('POST', `/api/services/${stranger.id}/domains`, { hostname: 'contested.example.test' }),
    ]);
    expect(race.map((r) => r.status).sort(), race.map((r) => r.text).join('\n')).toEqual([201, 409]);
    expectErrorShape(race.find((r) => r.status === 409)!, 409, 'concurrent claim of one hostname');
    // Still served by its owner only.
    expect((await via('beta.example.test')).text.trim()).toBe('beta-says-hi');
  });

  it('answers 409 for a domain on a worker or on a database service', async () => {
    const worker = await service(main.id, {
      name: 'worker',
      repoUrl: 'container-image',
      containerImage: 'busybox:latest',
      startCommand: 'sleep 3600',
      runtimeMode: 'worker',
    });
    const onWorker = await call('POST', `/api/services/${worker.id}/domains`, { hostname: 'worker.example.test' });
    expectErrorShape(onWorker, 409, 'domain on a worker');
    expect(onWorker.json.message).toMatch(/worker/i);

    const db = await service(main.id, {
      name: 'db',
      repoUrl: 'database',
      repoFullName: 'database:postgres',
      internalPort: 5432,
      databasePublicEnabled: false,
    });
    const onDatabase = await call('POST', `/api/services/${db.id}/domains`, { hostname: 'db.example.test' });
    expectErrorShape(onDatabase, 409, 'domain on a database service');
    expect(onDatabase.json.message).toMatch(/database/i);

    expect((await overview(worker.id)).domains).toEqual([]);
    expect((await overview(db.id)).domains).toEqual([]);
    // Neither got a route (a worker and a database have no generated hostname either).
    for (const host of ['worker.example.test', 'db.example.test', generated(worker, main), generated(db, main)]) {
      expect((await via(host)).status, host).toBe(404);
    }
  });
});
