import { DEFAULT_PLATFORM_CONFIG } from '../../src/platform/platform-config.js';
import { afterEach, describe, expect, it } from 'vitest';
import type { Actor } from '../../src/index.js';
import type { ProxyResult, RoutingTable } from '../../src/routing/reverse-proxy.port.js';
import { createHarness, type Harness } from '../helpers/harness.js';
import { createRuntimeHarness, type RuntimeHarness } from '../helpers/runtime-fakes.js';

/**
 * RoutingService: the table it builds from the database and the runner's upstreams, how reloads
 * are serialized and coalesced, and the reconcile pass that keeps a restarted or returning proxy
 * serving the table.
 */
const admin: Actor = { keyId: 'admin', access: 'write', projectIds: null };
const ROOT = 'apps.test';

let h: Harness | null = null;
let rh: RuntimeHarness | null = null;

afterEach(async () => {
  await h?.close();
  await rh?.close();
  h = null;
  rh = null;
});

async function harness(rootDomain: string | null = null): Promise<Harness> {
  h = await createHarness({ config: { rootDomain } });
  return h;
}

async function runtimeHarness(rootDomain: string | null = null): Promise<RuntimeHarness> {
  rh = await createRuntimeHarness({ config: { rootDomain } });
  return rh;
}

type Services = Harness['services'];

async function project(services: Services, name = 'Shop') {
  return services.projects.create(admin, { name, description: '' });
}

async function web(services: Services, projectId: string, name: string) {
  return services.serviceCreation.create(admin, projectId, { name, repoFullName: `acme/${name}` });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A gate a test opens by hand. */
function gate() {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

describe('the routing table', () => {
  it('routes custom domains and generated hostnames of web services only, sorted, upstream null without a container', async () => {
    const { services } = await harness(ROOT);
    const p = await project(services);
    const site = await web(services, p.id, 'web');
    const image = await services.serviceCreation.create(admin, p.id, {
      name: 'img',
      repoUrl: 'container-image',
      containerImage: 'nginx:1.27',
      internalPort: 80,
    });
    const worker = await services.serviceCreation.create(admin, p.id, { name: 'jobs', repoFullName: 'acme/jobs', runtimeMode: 'worker' });
    const db = await services.serviceCreation.create(admin, p.id, { name: 'cache', repoUrl: 'database', repoFullName: 'database:redis' });
    await services.domains.create(admin, site.id, 'Shop.Example.COM');

    const table = await services.routing.table();
    expect(table.routes).toEqual([
      { hostname: 'img-shop.apps.test', serviceId: image.id, upstream: null },
      { hostname: 'shop.example.com', serviceId: site.id, upstream: null },
      { hostname: 'web-shop.apps.test', serviceId: site.id, upstream: null },
    ]);
    const routed = table.routes.map((r) => r.serviceId);
    expect(routed).not.toContain(worker.id);
    expect(routed).not.toContain(db.id);
    expect(table.version).toMatch(/^[0-9a-f]{16}$/);
  });

  it('without a root domain only custom domains are routed', async () => {
    const { services } = await harness(null);
    const p = await project(services);
    const site = await web(services, p.id, 'web');
    await web(services, p.id, 'api');
    expect((await services.routing.table()).routes).toEqual([]);
    await services.domains.create(admin, site.id, 'shop.example.com');
    expect((await services.routing.table()).routes).toEqual([{ hostname: 'shop.example.com', serviceId: site.id, upstream: null }]);
  });

  it('takes each service upstream from setUpstream, for its custom and generated hostnames alike', async () => {
    const { services } = await harness(ROOT);
    const p = await project(services);
    const site = await web(services, p.id, 'web');
    const other = await web(services, p.id, 'api');
    await services.domains.create(admin, site.id, 'shop.example.com');

    services.routing.setUpstream(site.id, '10.0.0.7:3000');
    expect(services.routing.upstreamOf(site.id)).toBe('10.0.0.7:3000');
    expect((await services.routing.table()).routes).toEqual([
      { hostname: 'api-shop.apps.test', serviceId: other.id, upstream: null },
      { hostname: 'shop.example.com', serviceId: site.id, upstream: '10.0.0.7:3000' },
      { hostname: 'web-shop.apps.test', serviceId: site.id, upstream: '10.0.0.7:3000' },
    ]);

    services.routing.setUpstream(site.id, null);
    expect(services.routing.upstreamOf(site.id)).toBeNull();
    expect((await services.routing.table()).routes.every((r) => r.upstream === null)).toBe(true);
  });

  it('a custom domain wins over the generated hostname of the same name', async () => {
    const { services } = await harness(ROOT);
    const p = await project(services);
    const site = await web(services, p.id, 'web');
    // Claimed as a custom domain before any service generates it.
    await services.domains.create(admin, site.id, 'api-shop.apps.test');
    const api = await web(services, p.id, 'api');
    services.routing.setUpstream(site.id, '10.0.0.2:3000');
    services.routing.setUpstream(api.id, '10.0.0.3:3000');

    const routes = (await services.routing.table()).routes;
    expect(routes.filter((r) => r.hostname === 'api-shop.apps.test')).toEqual([
      { hostname: 'api-shop.apps.test', serviceId: site.id, upstream: '10.0.0.2:3000' },
    ]);
    expect(routes.map((r) => r.hostname)).toEqual(['api-shop.apps.test', 'web-shop.apps.test']);
  });

  it('a service naming its own generated hostname as a custom domain gets one route', async () => {
    const { services } = await harness(ROOT);
    const p = await project(services);
    const site = await web(services, p.id, 'web');
    await services.domains.create(admin, site.id, 'web-shop.apps.test');
    expect((await services.routing.table()).routes).toEqual([{ hostname: 'web-shop.apps.test', serviceId: site.id, upstream: null }]);
  });

  it('generates no hostname whose first label would be longer than 63 characters', async () => {
    const { services } = await harness(ROOT);
    const service40 = 's'.repeat(40);
    const fits = await project(services, 'p'.repeat(22)); // 40 + 1 + 22 = 63
    const tooLong = await project(services, 'q'.repeat(23)); // 40 + 1 + 23 = 64
    const a = await web(services, fits.id, service40);
    const b = await web(services, tooLong.id, service40);
    const routes = (await services.routing.table()).routes;
    expect(routes).toEqual([{ hostname: `${service40}-${'p'.repeat(22)}.${ROOT}`, serviceId: a.id, upstream: null }]);
    expect(routes.some((r) => r.serviceId === b.id)).toBe(false);
    // Its custom domains are still routed.
    await services.domains.create(admin, b.id, 'long.example.com');
    expect((await services.routing.table()).routes.map((r) => r.serviceId)).toContain(b.id);
  });

  it('drops the hostnames of a service when it is deleted', async () => {
    const { services } = await harness(ROOT);
    const p = await project(services);
    const site = await web(services, p.id, 'web');
    await services.domains.create(admin, site.id, 'shop.example.com');
    expect((await services.routing.table()).routes).toHaveLength(2);
    await services.removal.deleteService(admin, site.id);
    expect((await services.routing.table()).routes).toEqual([]);
  });
});

describe('the table version', () => {
  it('changes exactly when the table does', async () => {
    const { services } = await harness(ROOT);
    const p = await project(services);
    const site = await web(services, p.id, 'web');
    const version = async () => (await services.routing.table()).version;

    const v1 = await version();
    expect(await version()).toBe(v1);
    // Writes that do not touch routes: the table is rebuilt, its version is not changed.
    await services.projects.update(admin, p.id, { description: 'new description' });
    await services.env.set(admin, site.id, { key: 'FOO', value: 'bar' });
    expect(await version()).toBe(v1);
    services.routing.setUpstream(site.id, null); // already none
    expect(await version()).toBe(v1);

    services.routing.setUpstream(site.id, '10.0.0.9:3000');
    const v2 = await version();
    expect(v2).not.toBe(v1);
    services.routing.setUpstream(site.id, '10.0.0.9:3000');
    expect(await version()).toBe(v2);
    services.routing.setUpstream(site.id, null);
    // Same routes, same version: a hash of the table, not a counter.
    expect(await version()).toBe(v1);

    const domain = await services.domains.create(admin, site.id, 'shop.example.com');
    const v3 = await version();
    expect(v3).not.toBe(v1);
    await services.domains.update(admin, site.id, domain.domain.id, 'shop2.example.com');
    const v4 = await version();
    expect(v4).not.toBe(v3);
    await services.domains.delete(admin, site.id, domain.domain.id);
    expect(await version()).toBe(v1);
  });

  it('is the version the proxy is handed with the table', async () => {
    const { services, proxy } = await harness(ROOT);
    const p = await project(services);
    await web(services, p.id, 'web');
    await services.routing.reload();
    expect(proxy.versions).toEqual([(await services.routing.table()).version]);
  });
});

describe('reload', () => {
  it('serializes loads and coalesces callers: five reloads during a slow apply cost one more apply, which has the last write', async () => {
    const { services, proxy } = await harness(ROOT);
    const p = await project(services);
    const site = await web(services, p.id, 'web');
    const applied: RoutingTable[] = [];
    let active = 0;
    let maxActive = 0;
    let slow = gate();
    proxy.apply = async (table: RoutingTable): Promise<ProxyResult> => {
      applied.push(table);
      active++;
      maxActive = Math.max(maxActive, active);
      await slow.promise;
      active--;
      return { ok: true, detail: `applied ${table.version}` };
    };

    const first = services.routing.reload();
    await until(() => applied.length === 1);
    // Writes land while the first load is in the proxy.
    services.routing.setUpstream(site.id, '10.0.0.5:3000');
    // A user's change: saved at once, its reload joins the queue behind the slow load.
    const created = services.domains.create(admin, site.id, 'shop.example.com');
    await until(async () => (await h!.database.store.domains.getByHostname('shop.example.com')) !== null);
    const five = Array.from({ length: 5 }, () => services.routing.reload());
    await sleep(20);
    expect(applied).toHaveLength(1);
    const released = slow;
    slow = gate();
    slow.open();
    released.open();

    const firstResult = await first;
    const results = await Promise.all(five);
    const latest = await services.routing.table();
    expect(applied.length).toBeLessThanOrEqual(2);
    expect(applied).toHaveLength(2);
    expect(maxActive).toBe(1);
    expect(firstResult).toEqual({ ok: true, detail: `applied ${applied[0]!.version}` });
    expect(applied[1]!.version).toBe(latest.version);
    expect(applied[1]!.routes).toEqual(latest.routes);
    expect(latest.routes).toContainEqual({ hostname: 'shop.example.com', serviceId: site.id, upstream: '10.0.0.5:3000' });
    for (const result of results) expect(result).toEqual({ ok: true, detail: `applied ${latest.version}` });
    expect((await created).proxy).toEqual({ ok: true, detail: `applied ${latest.version}` });
    expect(await services.routing.settled()).toBe(true);
  });

  it('five concurrent reloads from idle: the first applies at once, the other four share one more apply', async () => {
    const { services, proxy } = await harness(ROOT);
    const p = await project(services);
    const site = await web(services, p.id, 'web');
    let calls = 0;
    const slow = gate();
    proxy.apply = async (table: RoutingTable): Promise<ProxyResult> => {
      calls++;
      if (calls === 1) await slow.promise;
      return { ok: true, detail: `#${calls} ${table.version}` };
    };
    const all = Array.from({ length: 5 }, () => services.routing.reload());
    services.routing.setUpstream(site.id, '10.0.0.8:3000');
    await sleep(10);
    slow.open();
    const results = await Promise.all(all);
    const latest = await services.routing.table();
    expect(calls).toBe(2);
    expect(results[0]!.detail).toMatch(/^#1 /);
    for (const result of results.slice(1)) expect(result).toEqual({ ok: true, detail: `#2 ${latest.version}` });
  });

  it('a reload after the queue drained starts a new load', async () => {
    const { services, proxy } = await harness(ROOT);
    await services.routing.reload();
    await services.routing.reload();
    await Promise.all([services.routing.reload(), services.routing.reload()]);
    expect(proxy.applied).toHaveLength(4);
  });

  it('a proxy that throws gives ok:false with the reason, not an exception, and later reloads still run', async () => {
    const { services, proxy } = await harness(ROOT);
    const p = await project(services);
    const site = await web(services, p.id, 'web');
    const original = proxy.apply.bind(proxy);
    proxy.apply = async () => {
      throw new Error('caddy exploded');
    };
    const result = await services.routing.reload();
    expect(result).toEqual({ ok: false, detail: 'proxy reload failed: caddy exploded' });
    // The user's change is saved and reported with the proxy's failure.
    const created = await services.domains.create(admin, site.id, 'shop.example.com');
    expect(created.proxy.ok).toBe(false);
    expect(created.proxy.detail).toContain('caddy exploded');
    expect(await services.routing.settled()).toBe(false);

    proxy.apply = original;
    expect(await services.routing.reload()).toEqual({ ok: true, detail: 'loaded' });
    expect(proxy.last!.map((r) => r.hostname)).toContain('shop.example.com');
    expect(await services.routing.settled()).toBe(true);
  });

  it('a proxy that rejects the table is reported as it said, and the table does not count as loaded', async () => {
    const { services, proxy } = await harness(ROOT);
    proxy.result = { ok: false, detail: 'Caddy rejected the configuration: address in use' };
    expect(await services.routing.reload()).toEqual(proxy.result);
    expect(await services.routing.settled()).toBe(false);
  });
});

describe('before the runner knows the running containers', () => {
  it('reload answers NOT_READY without calling the proxy, and reconcile does nothing', async () => {
    const r = await runtimeHarness(ROOT);
    const p = await project(r.services);
    const site = await web(r.services, p.id, 'web');

    const result = await r.services.routing.reload();
    expect(result.ok).toBe(false);
    expect(result.detail).toMatch(/once the platform has found the running containers/);
    // A change is saved and the reason reported.
    const created = await r.services.domains.create(admin, site.id, 'shop.example.com');
    expect(created.proxy).toEqual(result);
    expect(await r.database.store.domains.getByHostname('shop.example.com')).not.toBeNull();

    await r.services.routing.reconcile();
    expect(r.proxy.applied).toEqual([]);
    expect(r.proxy.checks).toBe(0);
    expect(await r.services.routing.settled()).toBe(false);
  });

  it('once the runner has reconciled, routes load with the upstreams of the containers that run', async () => {
    const r = await runtimeHarness(ROOT);
    const p = await project(r.services);
    const site = await web(r.services, p.id, 'web');
    await r.services.domains.create(admin, site.id, 'shop.example.com');
    // A container a previous process left running, of a succeeded deployment.
    const deployment = await r.services.deployments.create(admin, site.id);
    expect(await r.database.store.deployments.transition(deployment.id, ['queued'], { status: 'succeeded' })).toBe(true);
    await r.database.store.projects.updateService(site.id, { status: 'active' });
    const container = r.engine.addContainer({
      name: `slipway-${site.id}-${deployment.id}`,
      image: `slipway-${site.id}-${deployment.id}`,
      labels: {
        'slipway.managed': 'true',
        'slipway.instance': r.config.instanceId,
        'slipway.service': site.id,
        'slipway.deployment': deployment.id,
        'slipway.project': p.id,
      },
    });

    await r.runner.reconcile();
    expect(r.services.routing.upstreamOf(site.id)).toBe(`${container.ip}:3000`);
    expect(await r.services.routing.reload()).toEqual({ ok: true, detail: 'loaded' });
    expect(r.proxy.last).toEqual([
      { hostname: 'shop.example.com', serviceId: site.id, upstream: `${container.ip}:3000` },
      { hostname: 'web-shop.apps.test', serviceId: site.id, upstream: `${container.ip}:3000` },
    ]);
  });

  it('the runner start (recover) makes routes loadable', async () => {
    const r = await runtimeHarness(ROOT);
    expect((await r.services.routing.reload()).ok).toBe(false);
    await r.runner.start();
    expect(await r.services.routing.reload()).toEqual({ ok: true, detail: 'loaded' });
  });
});

describe('reconcile', () => {
  /** A runtime harness whose runner has listed the containers, with one web service routed. */
  async function known() {
    const r = await runtimeHarness(ROOT);
    const p = await project(r.services);
    const site = await web(r.services, p.id, 'web');
    await r.runner.reconcile();
    return { r, site };
  }

  const routingLog = (r: RuntimeHarness) => r.runnerLog.filter((l) => /route|proxy/i.test(l.message));

  it('loads a table that changed since the last load without asking the proxy first (after one look at start)', async () => {
    const { r, site } = await known();
    await r.services.routing.reconcile();
    expect(r.proxy.applied).toHaveLength(1);
    // The first pass of a process asks once whether the proxy still serves the table (see below).
    expect(r.proxy.checks).toBe(1);
    expect(r.runnerLog.map((l) => l.message)).toContain('routes loaded: the routing table changed');

    r.services.routing.setUpstream(site.id, '10.0.0.40:3000');
    await r.services.routing.reconcile();
    expect(r.proxy.applied).toHaveLength(2);
    expect(r.proxy.checks).toBe(1);
    expect(r.proxy.last).toContainEqual({ hostname: 'web-shop.apps.test', serviceId: site.id, upstream: '10.0.0.40:3000' });
  });

  it('after a restart of the platform, adopts the table the proxy still serves instead of loading it again', async () => {
    const { r } = await known();
    // What the previous process had loaded: the proxy serves this very table.
    r.proxy.serving = (await r.services.routing.table()).version;
    await r.services.routing.reconcile();
    expect(r.proxy.applied).toHaveLength(0);
    expect(r.proxy.checks).toBe(1);
    expect(await r.services.routing.settled()).toBe(true);
  });

  it('does nothing but a check when the proxy serves the current table', async () => {
    const { r } = await known();
    await r.services.routing.reload();
    const logged = r.runnerLog.length;
    for (let i = 0; i < 3; i++) await r.services.routing.reconcile();
    expect(r.proxy.applied).toHaveLength(1);
    expect(r.proxy.checks).toBe(3);
    expect(r.runnerLog.length).toBe(logged);
  });

  it('reloads the table into a proxy that restarted empty', async () => {
    const { r } = await known();
    await r.services.routing.reload();
    const version = (await r.services.routing.table()).version;
    r.proxy.restartEmpty();
    await r.services.routing.reconcile();
    expect(r.proxy.applied).toHaveLength(2);
    expect(r.proxy.serving).toBe(version);
    expect(r.runnerLog.map((l) => l.message)).toContain('routes loaded: the proxy no longer serves the routes (restarted?)');
    await r.services.routing.reconcile();
    expect(r.proxy.applied).toHaveLength(2);
  });

  it('survives a proxy that is down, says so once, and reloads when it is back', async () => {
    const { r } = await known();
    await r.services.routing.reload();
    const before = routingLog(r).length;
    r.proxy.down = 'connect ECONNREFUSED 127.0.0.1:2019';
    for (let i = 0; i < 6; i++) await expect(r.services.routing.reconcile()).resolves.toBeUndefined();
    expect(await r.services.routing.settled()).toBe(false);
    const during = routingLog(r).slice(before);
    expect(during.filter((l) => /unreachable/.test(l.message))).toHaveLength(1);
    expect(during[0]).toEqual({
      message: 'the reverse proxy is unreachable; routes will be loaded when it is back',
      extra: { detail: 'connect ECONNREFUSED 127.0.0.1:2019' },
    });
    // Not a line every pass: a down proxy is reported once (at most once more, for the failed load).
    expect(during.length).toBeLessThanOrEqual(2);

    // It comes back empty, as a restarted Caddy does.
    r.proxy.down = null;
    r.proxy.restartEmpty();
    await r.services.routing.reconcile();
    expect(r.proxy.serving).toBe((await r.services.routing.table()).version);
    expect(await r.services.routing.settled()).toBe(true);
    expect(routingLog(r).at(-1)!.message).toMatch(/^routes loaded: /);
  });

  it('a failed load is logged once, not every pass, and retried until it succeeds', async () => {
    const { r } = await known();
    r.proxy.result = { ok: false, detail: 'rejected: bad config' };
    for (let i = 0; i < 4; i++) await r.services.routing.reconcile();
    expect(r.proxy.applied).toHaveLength(4);
    expect(r.runnerLog.filter((l) => l.message === 'routes not loaded')).toEqual([
      { message: 'routes not loaded', extra: { detail: 'rejected: bad config' } },
    ]);
    r.proxy.result = { ok: true, detail: 'loaded' };
    await r.services.routing.reconcile();
    expect(await r.services.routing.settled()).toBe(true);
  });

  it('does nothing when the proxy is disabled', async () => {
    const { r } = await known();
    r.proxy.enabled = false;
    await r.services.routing.reconcile();
    expect(r.proxy.applied).toEqual([]);
    expect(r.proxy.checks).toBe(0);
  });

  it('start() runs reconcile on the configured interval; stop() ends it', async () => {
    rh = await createRuntimeHarness({
      config: {
        rootDomain: ROOT,
        routing: { ...DEFAULT_PLATFORM_CONFIG.routing, reconcileMs: 100, drainTimeoutMs: 1_000, proxyTimeoutMs: 1_000 },
      },
    });
    const r = rh;
    await r.runner.reconcile();
    r.services.routing.start();
    try {
      await until(() => r.proxy.applied.length === 1, 2_000);
      r.proxy.restartEmpty();
      await until(() => r.proxy.applied.length === 2, 2_000);
    } finally {
      await r.services.routing.stop();
    }
    const checks = r.proxy.checks;
    await sleep(300);
    expect(r.proxy.checks).toBe(checks);
  });
});

describe('settled and routesTo', () => {
  it('settled: true only while the proxy is known to serve the current table; always true without a proxy', async () => {
    const { services, proxy } = await harness(ROOT);
    const p = await project(services);
    const site = await web(services, p.id, 'web');
    expect(await services.routing.settled()).toBe(false);
    await services.routing.reload();
    expect(await services.routing.settled()).toBe(true);
    services.routing.setUpstream(site.id, '10.0.0.3:3000');
    expect(await services.routing.settled()).toBe(false);
    proxy.result = { ok: false, detail: 'no' };
    await services.routing.reload();
    expect(await services.routing.settled()).toBe(false);
    proxy.result = { ok: true, detail: 'yes' };
    await services.routing.reload();
    expect(await services.routing.settled()).toBe(true);

    proxy.enabled = false;
    services.routing.setUpstream(site.id, null);
    expect(services.routing.enabled).toBe(false);
    expect(await services.routing.settled()).toBe(true);
  });

  it('routesTo: web services with a custom or generated hostname; not workers, databases, unrouted services, nor without a proxy', async () => {
    const { services, proxy } = await harness(null);
    const p = await project(services);
    const site = await web(services, p.id, 'web');
    const bare = await web(services, p.id, 'bare');
    const worker = await services.serviceCreation.create(admin, p.id, { name: 'jobs', repoFullName: 'acme/jobs', runtimeMode: 'worker' });
    const db = await services.serviceCreation.create(admin, p.id, { name: 'cache', repoUrl: 'database', repoFullName: 'database:redis' });
    await services.domains.create(admin, site.id, 'shop.example.com');

    expect(await services.routing.routesTo(site.id)).toBe(true);
    expect(await services.routing.routesTo(bare.id)).toBe(false);
    expect(await services.routing.routesTo(worker.id)).toBe(false);
    expect(await services.routing.routesTo(db.id)).toBe(false);
    expect(await services.routing.routesTo('nonexistent')).toBe(false);

    proxy.enabled = false;
    expect(await services.routing.routesTo(site.id)).toBe(false);
  });

  it('routesTo: a generated hostname is enough', async () => {
    const { services } = await harness(ROOT);
    const p = await project(services);
    const site = await web(services, p.id, 'web');
    expect(await services.routing.routesTo(site.id)).toBe(true);
  });
});

async function until(fn: () => boolean | Promise<boolean>, timeoutMs = 2_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await fn())) {
    if (Date.now() > deadline) throw new Error(`condition not reached within ${timeoutMs} ms`);
    await sleep(5);
  }
}
