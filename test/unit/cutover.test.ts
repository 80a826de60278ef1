import { afterEach, describe, expect, it } from 'vitest';
import type { DeploymentRecord } from '../../src/domain/types.js';
import { DEFAULT_PLATFORM_CONFIG, type Actor, type CreateServiceInput, type PlatformConfig } from '../../src/index.js';
import { createRuntimeHarness, runnerSteps, until, type RuntimeHarness } from '../helpers/runtime-fakes.js';

/**
 * The runner's cutover with fakes: the old container is drained (connections counted until none
 * are left, up to the drain timeout) before it is stopped, and it keeps running while the proxy
 * has not taken the routes that replace it; the reconcile loop retires it later.
 */
const admin: Actor = { keyId: 'admin', access: 'write', projectIds: null };

let h: RuntimeHarness;
const { deployment, logs, queue, finished, container } = runnerSteps(() => h, admin, 10000);

afterEach(async () => {
  await h?.close();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function setup(opts: { drainTimeoutMs?: number; rootDomain?: string | null } = {}): Promise<RuntimeHarness> {
  const config: Partial<PlatformConfig> = {
    rootDomain: opts.rootDomain ?? null,
    routing: { ...DEFAULT_PLATFORM_CONFIG.routing, drainTimeoutMs: opts.drainTimeoutMs ?? DEFAULT_PLATFORM_CONFIG.routing.drainTimeoutMs },
  };
  h = await createRuntimeHarness({ config });
  await h.runner.start();
  return h;
}

async function projectId(): Promise<string> {
  return (await h.services.projects.create(admin, { name: 'Shop', description: '' })).id;
}

/** An image service (no git involved); web unless told otherwise. */
async function imageService(extra: Partial<CreateServiceInput> = {}): Promise<string> {
  const view = await h.services.serviceCreation.create(admin, await projectId(), {
    name: 'web',
    repoUrl: 'container-image',
    containerImage: 'nginx:1.27',
    internalPort: 80,
    ...extra,
  } as CreateServiceInput);
  return view.id;
}

async function deployOk(serviceId: string, timeoutMs?: number): Promise<DeploymentRecord> {
  const d = await finished(await queue(serviceId), timeoutMs);
  expect(d.status, (await logs(d.id)).join('\n')).toBe('succeeded');
  return d;
}

/** Times of stopAndRemove and countConnections, by container name. */
function watchEngine() {
  const stoppedAt = new Map<string, number>();
  const counted: Array<{ name: string; at: number; port: number }> = [];
  const stopAndRemove = h.engine.stopAndRemove.bind(h.engine);
  const countConnections = h.engine.countConnections.bind(h.engine);
  const nameOf = (idOrName: string) => h.engine.containers.get(idOrName)?.name ?? idOrName;
  h.engine.stopAndRemove = async (idOrName, grace) => {
    stoppedAt.set(nameOf(idOrName), Date.now());
    return stopAndRemove(idOrName, grace);
  };
  h.engine.countConnections = async (idOrName, port) => {
    counted.push({ name: nameOf(idOrName), at: Date.now(), port });
    return countConnections(idOrName, port);
  };
  return { stoppedAt, counted, countsOf: (name: string) => counted.filter((c) => c.name === name) };
}

function drainLine(lines: string[], name: string): string {
  const line = lines.find((l) => l.startsWith(`Stopping the previous container ${name}`));
  if (!line) throw new Error(`no drain line for ${name} in:\n${lines.join('\n')}`);
  return line;
}

describe('draining the previous container', () => {
  it('waits while it still has connections and stops it only once they are gone (twice in a row)', async () => {
    await setup();
    const web = await imageService();
    const first = await deployOk(web);
    const old = container(first.containerName);
    old.connections = 2;
    const watch = watchEngine();

    const id = await queue(web);
    await until(() => watch.countsOf(old.name).length > 0, 5_000, 'the drain to start');
    // The new container already has the host port; the old one is still draining.
    const current = await until(() => h.engine.containersOf(web).find((c) => c.id !== old.id));
    expect(h.forwarder.targets.get((await h.database.store.projects.getService(web))!.hostPort)).toEqual({ host: current.ip, port: 80 });
    await sleep(400);
    expect(old.running).toBe(true);
    expect(h.engine.byName(old.name)).toBeDefined();
    expect((await deployment(id)).status).toBe('running');
    expect(watch.countsOf(old.name).length).toBeGreaterThan(2);
    expect(watch.countsOf(old.name).every((c) => c.port === 80)).toBe(true);

    const releasedAt = Date.now();
    old.connections = 0;
    const d = await finished(id);
    expect(d.status).toBe('succeeded');
    expect(h.engine.byName(old.name)).toBeUndefined();
    const stoppedAt = watch.stoppedAt.get(old.name)!;
    expect(stoppedAt).toBeGreaterThanOrEqual(releasedAt);
    // Two idle looks, a poll interval apart.
    const idleLooks = watch.countsOf(old.name).filter((c) => c.at >= releasedAt);
    expect(idleLooks.length).toBeGreaterThanOrEqual(2);
    const line = drainLine(await logs(id), old.name);
    const waited = Number(/drained in (\d+) ms/.exec(line)?.[1]);
    expect(line).toMatch(/\(drained in \d+ ms\)$/);
    expect(waited).toBeGreaterThanOrEqual(400);
  });

  it('a connection that opens between idle looks restarts the count', async () => {
    await setup();
    const web = await imageService();
    const old = container((await deployOk(web)).containerName);
    old.connections = 0;
    const watch = watchEngine();
    // 0, then 1 for a moment, then 0: two idle looks in a row are needed after the blip.
    let looks = 0;
    const count = h.engine.countConnections;
    h.engine.countConnections = async (idOrName, port) => {
      const n = await count(idOrName, port);
      looks++;
      return looks === 2 ? 1 : n;
    };
    const d = await deployOk(web);
    expect(looks).toBeGreaterThanOrEqual(4);
    expect(watch.stoppedAt.has(old.name)).toBe(true);
    expect(drainLine(await logs(d.id), old.name)).toMatch(/drained in \d+ ms/);
  });

  it('gives up at the drain timeout and says how many connections were still open', async () => {
    await setup({ drainTimeoutMs: 500 });
    const web = await imageService();
    const old = container((await deployOk(web)).containerName);
    old.connections = 3;
    const watch = watchEngine();

    const started = Date.now();
    const d = await deployOk(web);
    const elapsed = Date.now() - started;
    expect(h.engine.byName(old.name)).toBeUndefined();
    const firstLook = watch.countsOf(old.name)[0]!.at;
    expect(watch.stoppedAt.get(old.name)! - firstLook).toBeGreaterThanOrEqual(450);
    expect(elapsed).toBeLessThan(10_000);
    expect(drainLine(await logs(d.id), old.name)).toBe(
      `Stopping the previous container ${old.name}: 3 connection(s) still open after the 500 ms drain timeout`,
    );
  });

  it('a drain timeout of 0 stops the old container at once', async () => {
    await setup({ drainTimeoutMs: 0 });
    const web = await imageService();
    const old = container((await deployOk(web)).containerName);
    old.connections = 7;
    const watch = watchEngine();
    const d = await deployOk(web);
    expect(watch.countsOf(old.name)).toEqual([]);
    expect(h.engine.byName(old.name)).toBeUndefined();
    expect(drainLine(await logs(d.id), old.name)).toMatch(/^Stopping the previous container \S+ \(drained in \d+ ms\)$|still open/);
  });

  it('when connections cannot be counted, waits the fallback time (bounded by the drain timeout) and says so', async () => {
    await setup({ drainTimeoutMs: 300 });
    const web = await imageService();
    const old = container((await deployOk(web)).containerName);
    old.connections = null;
    const watch = watchEngine();
    const d = await deployOk(web);
    expect(watch.countsOf(old.name)).toHaveLength(1);
    const stoppedAfter = watch.stoppedAt.get(old.name)! - watch.countsOf(old.name)[0]!.at;
    expect(stoppedAfter).toBeGreaterThanOrEqual(290);
    expect(stoppedAfter).toBeLessThan(3_000);
    const line = drainLine(await logs(d.id), old.name);
    expect(line).toMatch(
      new RegExp(`^Stopping the previous container ${old.name} after \\d+ ms \\(its connections could not be counted\\)$`),
    );
    expect(Number(/after (\d+) ms/.exec(line)![1])).toBeGreaterThanOrEqual(290);
  });

  it('the fallback wait is 2 s when the drain timeout is longer', async () => {
    await setup();
    const web = await imageService();
    const old = container((await deployOk(web)).containerName);
    old.connections = null;
    const watch = watchEngine();
    const d = await deployOk(web);
    const stoppedAfter = watch.stoppedAt.get(old.name)! - watch.countsOf(old.name)[0]!.at;
    expect(stoppedAfter).toBeGreaterThanOrEqual(1_950);
    expect(stoppedAfter).toBeLessThan(10_000);
    expect(drainLine(await logs(d.id), old.name)).toMatch(/after \d+ ms \(its connections could not be counted\)$/);
  });

  it('workers are not drained: their old container is stopped at once', async () => {
    await setup();
    const worker = await imageService({ name: 'jobs', runtimeMode: 'worker' });
    const old = container((await deployOk(worker)).containerName);
    old.connections = 5;
    const watch = watchEngine();
    const started = Date.now();
    const d = await deployOk(worker);
    // Far below the 30 s drain timeout: nothing was waited for.
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(watch.countsOf(old.name)).toEqual([]);
    expect(h.engine.byName(old.name)).toBeUndefined();
    expect(drainLine(await logs(d.id), old.name)).toMatch(/\(drained in \d+ ms\)$/);
  });

  it('databases are not drained: their clients reconnect', async () => {
    await setup();
    const db = (
      await h.services.serviceCreation.create(admin, await projectId(), {
        name: 'cache',
        repoUrl: 'database',
        repoFullName: 'database:redis',
      })
    ).id;
    const old = container((await deployOk(db)).containerName);
    old.connections = 5;
    const watch = watchEngine();
    const started = Date.now();
    const d = await deployOk(db);
    // Far below the 30 s drain timeout: nothing was waited for.
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(watch.countsOf(old.name)).toEqual([]);
    expect(h.engine.byName(old.name)).toBeUndefined();
    expect(drainLine(await logs(d.id), old.name)).toMatch(/\(drained in \d+ ms\)$/);
  });

  it('an old web container that is not running is removed without a drain', async () => {
    await setup();
    const web = await imageService();
    const old = container((await deployOk(web)).containerName);
    old.running = false;
    old.connections = 5;
    const watch = watchEngine();
    const d = await deployOk(web);
    expect(watch.countsOf(old.name)).toEqual([]);
    expect(h.engine.byName(old.name)).toBeUndefined();
    expect(d.status).toBe('succeeded');
  });
});

describe('when the proxy did not take the new routes', () => {
  it('a routed service keeps its old container running, says so, and reconcile retires it once the proxy has the routes', async () => {
    await setup();
    const web = await imageService();
    await h.services.domains.create(admin, web, 'shop.example.com');
    const first = await deployOk(web);
    const old = container(first.containerName);

    h.proxy.result = { ok: false, detail: 'Caddy rejected the configuration, and keeps serving the previous one: boom' };
    const second = await deployOk(web);
    const current = container(second.containerName);
    const lines = await logs(second.id);
    expect(lines).toContain('Proxy: Caddy rejected the configuration, and keeps serving the previous one: boom');
    expect(lines).toContain('The previous container keeps running until the proxy has the new routes; it is stopped then');
    expect(lines.some((l) => l.startsWith(`Stopping the previous container`))).toBe(false);
    expect(old.running).toBe(true);
    expect(h.engine.byName(old.name)).toBeDefined();
    // The host port has moved on regardless; the proxy was asked for the new upstream.
    expect(h.forwarder.targets.get((await h.database.store.projects.getService(web))!.hostPort)).toEqual({ host: current.ip, port: 80 });
    expect(h.proxy.last).toEqual([{ hostname: 'shop.example.com', serviceId: web, upstream: `${current.ip}:80` }]);
    expect(await h.database.store.projects.getService(web)).toMatchObject({ status: 'active', reachable: true });

    // Still failing: reconcile leaves it alone.
    await h.services.routing.reconcile();
    await h.runner.reconcile();
    expect(h.engine.byName(old.name)).toBeDefined();
    expect(h.runnerLog.map((l) => l.message)).not.toContain('stopping a container the routes no longer use');

    // The proxy takes the routes on the routing loop's next pass; the runner's pass retires the old container.
    h.proxy.result = { ok: true, detail: 'loaded' };
    await h.services.routing.reconcile();
    expect(h.proxy.serving).toBe((await h.services.routing.table()).version);
    await h.runner.reconcile();
    expect(h.engine.byName(old.name)).toBeUndefined();
    expect(h.engine.byName(current.name)?.running).toBe(true);
    expect(h.runnerLog).toContainEqual({ message: 'stopping a container the routes no longer use', extra: { name: old.name } });
  });

  it('the reconcile retirement drains the old container too', async () => {
    await setup({ drainTimeoutMs: 5_000 });
    const web = await imageService();
    await h.services.domains.create(admin, web, 'shop.example.com');
    const old = container((await deployOk(web)).containerName);
    h.proxy.result = { ok: false, detail: 'nope' };
    await deployOk(web);
    h.proxy.result = { ok: true, detail: 'loaded' };
    await h.services.routing.reconcile();

    old.connections = 1;
    const watch = watchEngine();
    const retired = h.runner.reconcile();
    await sleep(300);
    expect(h.engine.byName(old.name)).toBeDefined();
    const releasedAt = Date.now();
    old.connections = 0;
    await retired;
    expect(h.engine.byName(old.name)).toBeUndefined();
    expect(watch.stoppedAt.get(old.name)!).toBeGreaterThanOrEqual(releasedAt);
  });

  it('a proxy that is down counts as not taking the routes; a generated hostname makes a service routed', async () => {
    await setup({ rootDomain: 'apps.test' });
    const web = await imageService();
    const old = container((await deployOk(web)).containerName);
    h.proxy.down = 'connect ECONNREFUSED 127.0.0.1:2019';
    const d = await deployOk(web);
    const lines = await logs(d.id);
    expect(lines).toContain('Proxy: connect ECONNREFUSED 127.0.0.1:2019');
    expect(lines).toContain('The previous container keeps running until the proxy has the new routes; it is stopped then');
    expect(h.engine.byName(old.name)?.running).toBe(true);

    await h.services.routing.reconcile();
    await h.runner.reconcile();
    expect(h.engine.byName(old.name)).toBeDefined();

    // Back, and empty.
    h.proxy.down = null;
    h.proxy.restartEmpty();
    await h.services.routing.reconcile();
    await h.runner.reconcile();
    expect(h.engine.byName(old.name)).toBeUndefined();
  });

  it('several deployments while the proxy fails keep every previous container until the routes are loaded', async () => {
    await setup();
    const web = await imageService();
    await h.services.domains.create(admin, web, 'shop.example.com');
    const first = container((await deployOk(web)).containerName);
    h.proxy.result = { ok: false, detail: 'nope' };
    const second = container((await deployOk(web)).containerName);
    const third = await deployOk(web);
    expect(
      h.engine
        .containersOf(web)
        .map((c) => c.name)
        .sort(),
    ).toEqual([first.name, second.name, third.containerName].sort());

    h.proxy.result = { ok: true, detail: 'loaded' };
    await h.services.routing.reconcile();
    await h.runner.reconcile();
    expect(h.engine.containersOf(web).map((c) => c.name)).toEqual([third.containerName]);
  });

  it('an unrouted service (no domains, no root domain) retires its old container at once even so', async () => {
    await setup();
    const web = await imageService();
    const old = container((await deployOk(web)).containerName);
    h.proxy.result = { ok: false, detail: 'Caddy rejected the configuration: boom' };
    const d = await deployOk(web);
    const lines = await logs(d.id);
    expect(h.engine.byName(old.name)).toBeUndefined();
    expect(lines.some((l) => l.startsWith('Proxy:'))).toBe(false);
    expect(lines.some((l) => l.startsWith('Routes switched'))).toBe(false);
    expect(lines).not.toContain('The previous container keeps running until the proxy has the new routes; it is stopped then');
    expect(drainLine(lines, old.name)).toMatch(/drained in \d+ ms/);
  });

  it('without a proxy at all (disabled), the old container is retired at once', async () => {
    await setup();
    const web = await imageService();
    await h.services.domains.create(admin, web, 'shop.example.com');
    const old = container((await deployOk(web)).containerName);
    h.proxy.enabled = false;
    h.proxy.result = { ok: false, detail: 'no proxy configured' };
    await deployOk(web);
    expect(h.engine.byName(old.name)).toBeUndefined();
  });

  it('when the proxy takes the routes, the log says where they now go', async () => {
    await setup();
    const web = await imageService();
    await h.services.domains.create(admin, web, 'shop.example.com');
    await deployOk(web);
    h.proxy.result = { ok: true, detail: 'Caddy loaded 1 route (plain HTTP on :8080)' };
    const d = await deployOk(web);
    expect(await logs(d.id)).toContain(`Routes switched to ${d.containerName}: Caddy loaded 1 route (plain HTTP on :8080)`);
  });
});
