import { afterEach, describe, expect, it } from 'vitest';
import type { DeploymentRecord } from '../../src/domain/types.js';
import { DEFAULT_PLATFORM_CONFIG, type Actor, type CreateServiceInput } from '../../src/index.js';
import { createRuntimeHarness, runnerSteps, until, type FakeContainer, type RuntimeHarness } from '../helpers/runtime-fakes.js';

const admin: Actor = { keyId: 'admin', access: 'write', projectIds: null };
const HOST = 'web-shop.apps.test';

describe('several replicas of a service on one server (use cases over fakes)', () => {
  let h: RuntimeHarness;
  const { queue, finished, logs } = runnerSteps(() => h, admin, 10_000);
  afterEach(async () => {
    await h?.close();
  });

  async function setup(replicas: number): Promise<string> {
    h = await createRuntimeHarness({
      gate: true,
      config: { rootDomain: 'apps.test', routing: { ...DEFAULT_PLATFORM_CONFIG.routing, healthIntervalMs: 10, drainTimeoutMs: 50 } },
    });
    await h.runner.start();
    const project = await h.services.projects.create(admin, { name: 'Shop', description: '' });
    const view = await h.services.serviceCreation.create(admin, project.id, {
      name: 'web',
      repoUrl: 'container-image',
      containerImage: 'nginx:1.27',
      internalPort: 80,
      replicas,
    } as CreateServiceInput);
    return view.id;
  }

  async function deploy(serviceId: string): Promise<DeploymentRecord> {
    return finished(await queue(serviceId));
  }

  const route = () => h.proxy.last?.find((r) => r.hostname === HOST);
  /** A replica that exited: killed for good, or (`restarting`) being started again by its restart policy. */
  const exited = (container: FakeContainer, restarting = false) => {
    container.running = false;
    container.ip = null;
    if (restarting) container.restarting = true;
  };
  const running = (serviceId: string) =>
    h.engine
      .containersOf(serviceId)
      .filter((c) => c.running)
      .map((c) => c.name)
      .sort();

  it('starts N containers named by replica index, each checked, and routes the hostname over all of them', async () => {
    const serviceId = await setup(3);
    const d = await deploy(serviceId);
    expect(d.status, (await logs(d.id)).join('\n')).toBe('succeeded');
    const base = d.containerName!;
    expect(running(serviceId)).toEqual([base, `${base}-r1`, `${base}-r2`]);
    expect(h.engine.byName(`${base}-r2`)!.labels['slipway.replica']).toBe('2');
    const r1 = h.engine.byName(`${base}-r1`)!;
    const r2 = h.engine.byName(`${base}-r2`)!;
    // The first replica through its traffic slot, the others at their own addresses.
    const slot = h.engine.byName(base)!.labels['slipway.slot'];
    expect(slot).toBeTruthy();
    expect(route()).toEqual({ hostname: HOST, serviceId, upstream: `${slot}:80`, replicaUpstreams: [`${r1.ip}:80`, `${r2.ip}:80`] });
    expect(r1.labels['slipway.slot']).toBeUndefined();
    expect((await logs(d.id)).some((l) => l.startsWith('Routes switched to 3 replicas'))).toBe(true);
  });

  it('a redeploy starts every new replica, one at a time and checked, before any old one stops; old ones drain one at a time', async () => {
    const serviceId = await setup(3);
    const first = await deploy(serviceId);
    h.journal.entries.length = 0;
    const second = await deploy(serviceId);
    expect(second.status, (await logs(second.id)).join('\n')).toBe('succeeded');
    const j = h.journal.entries;
    const runs = j.filter((e) => e.startsWith('engine.run '));
    expect(runs).toEqual([
      `engine.run ${second.containerName}`,
      `engine.run ${second.containerName}-r1`,
      `engine.run ${second.containerName}-r2`,
    ]);
    const lastRun = j.indexOf(runs[2]!);
    const stops = [first.containerName!, `${first.containerName}-r1`, `${first.containerName}-r2`].map((n) =>
      j.indexOf(`engine.stopAndRemove ${n}`),
    );
    for (const stop of stops) expect(stop).toBeGreaterThan(lastRun);
    expect(running(serviceId)).toEqual([second.containerName, `${second.containerName}-r1`, `${second.containerName}-r2`].sort());
    expect(route()?.upstream).toBe(`${h.engine.byName(second.containerName!)!.labels['slipway.slot']}:80`);
    expect(route()?.upstream).not.toBe(`${h.engine.byName(first.containerName!)?.labels['slipway.slot']}:80`);
    expect(route()?.replicaUpstreams).toHaveLength(2);
  });

  it('a replica that fails its check stops the rollout: the deployment fails with the reason, the old replicas keep serving', async () => {
    const serviceId = await setup(3);
    const first = await deploy(serviceId);
    const before = route();
    h.engine.run.silentWhen = (request) => request.name.endsWith('-r2');
    const second = await deploy(serviceId);
    expect(second.status).toBe('failed');
    const lines = (await logs(second.id)).join('\n');
    expect(lines).toContain('Starting replica 3 of 3');
    expect(lines).toMatch(/Deployment failed: The container did not answer on port 80/);
    // Old replicas untouched and still routed; the new ones are gone.
    expect(running(serviceId)).toEqual([first.containerName, `${first.containerName}-r1`, `${first.containerName}-r2`].sort());
    expect(h.engine.byName(`${second.containerName}-r1`)).toBeUndefined();
    expect(route()).toEqual(before);
    expect((await h.services.serviceReader.view(serviceId)).status).toBe('active');
  });

  it('reconcile replaces a replica that died, and scales up and down (0 stops the service and keeps it) without a redeploy', async () => {
    const serviceId = await setup(3);
    const d = await deploy(serviceId);
    const r1 = h.engine.byName(`${d.containerName}-r1`)!;
    // Dead without Docker's restart (killed by hand): the next pass starts it again, checked, and routes it.
    exited(r1);
    await h.runner.reconcile();
    const again = h.engine.byName(`${d.containerName}-r1`)!;
    expect(again.running).toBe(true);
    expect(again.id).not.toBe(r1.id);
    expect(route()?.replicaUpstreams).toContain(`${again.ip}:80`);

    // The active check: a replica that stops answering leaves the routes, and comes back when it answers.
    const r2 = h.engine.byName(`${d.containerName}-r2`)!;
    r2.silent = true;
    await h.runner.reconcile();
    await h.services.routing.reload();
    expect(route()?.replicaUpstreams).toEqual([`${again.ip}:80`]);
    r2.silent = false;
    await h.runner.reconcile();
    await h.services.routing.reload();
    expect(route()?.replicaUpstreams).toEqual([`${again.ip}:80`, `${r2.ip}:80`]);
    // Docker's `die`: out of the routes at once.
    r2.running = false;
    await h.runner.containerExited(serviceId, r2.id);
    expect(route()?.replicaUpstreams).toEqual([`${again.ip}:80`]);
    await until(async () => (running(serviceId).length === 3 ? true : null), 5_000, 'r2 replaced');

    await h.services.serviceChanges.update(admin, serviceId, { replicas: 1 });
    await until(async () => (running(serviceId).length === 1 ? true : null), 5_000, 'scale to 1');
    await h.runner.reconcile();
    expect(running(serviceId)).toEqual([d.containerName]);
    expect(route()).toEqual({ hostname: HOST, serviceId, upstream: `${h.engine.byName(d.containerName!)!.labels['slipway.slot']}:80` });

    const stopped = await h.services.serviceChanges.update(admin, serviceId, { replicas: 0 });
    expect(stopped).toMatchObject({ replicas: 0, status: 'stopped' });
    await until(async () => (running(serviceId).length === 0 ? true : null), 5_000, 'scale to 0');
    await h.runner.reconcile();
    expect(route()).toEqual({ hostname: HOST, serviceId, upstream: null });
    await expect(h.services.deployments.create(admin, serviceId)).rejects.toMatchObject({ code: 'conflict' });

    const back = await h.services.serviceChanges.update(admin, serviceId, { replicas: 2 });
    expect(back.status).toBe('active');
    await until(async () => (running(serviceId).length === 2 ? true : null), 5_000, 'scale to 2');
    await h.runner.reconcile();
    expect(running(serviceId)).toEqual([d.containerName, `${d.containerName}-r1`]);
    expect(route()?.replicaUpstreams).toHaveLength(1);

    // Held `stopped` with replicas left (a volume's snapshot or restore stops its containers): not a scale to 0.
    await h.database.store.projects.updateService(serviceId, { status: 'stopped', reachable: false });
    await h.runner.reconcile();
    expect(running(serviceId)).toEqual([d.containerName, `${d.containerName}-r1`]);
  });

  it('reconcile leaves a replica the engine is restarting to the engine, rather than starting another in its place', async () => {
    const serviceId = await setup(2);
    const d = await deploy(serviceId);
    const r1 = h.engine.byName(`${d.containerName}-r1`)!;
    // Exited, and Docker's restart policy is starting it again: what the pass run at its `die` event sees.
    exited(r1, true);
    await h.runner.reconcile();
    expect(h.engine.byName(`${d.containerName}-r1`)!.id).toBe(r1.id);
  });

  it('a rollback runs the earlier image on every replica', async () => {
    const serviceId = await setup(2);
    const first = await deploy(serviceId);
    await deploy(serviceId);
    const rollback = await finished((await h.services.deployments.rollback(admin, first.id)).id);
    expect(rollback.status, (await logs(rollback.id)).join('\n')).toBe('succeeded');
    const images = h.engine
      .containersOf(serviceId)
      .filter((c) => c.running)
      .map((c) => c.image);
    expect(images).toEqual([rollback.imageTag, rollback.imageTag]);
  });
});
