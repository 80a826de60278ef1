import { afterEach, describe, expect, it, vi } from 'vitest';
import { buildCaddyConfig, planFiles } from '../../adapters/proxy/caddy-config.js';
import type { DeploymentRecord } from '../../src/domain/types.js';
import { DEFAULT_PLATFORM_CONFIG, type Actor, type CreateServiceInput, type PlatformConfig } from '../../src/index.js';
import { LABELS, type ContainerState } from '../../src/deployments/container-engine.port.js';
import { TrafficSlots } from '../../src/deployments/traffic-slots.js';
import {
  createRuntimeHarness,
  FakeContainerEngine,
  FakeTrafficGate,
  Journal,
  runnerSteps,
  type RuntimeHarness,
} from '../helpers/runtime-fakes.js';

/**
 * Traffic slots: a cutover opens the new container's slot, points the routes at it (files, no proxy
 * load), and closes the old slot once the old container is gone; a restart puts the routes, then the
 * gate, back on the current containers before a cut-short cutover's container goes.
 */
const admin: Actor = { keyId: 'admin', access: 'write', projectIds: null };
const config: PlatformConfig = {
  ...DEFAULT_PLATFORM_CONFIG,
  instanceId: 'inst1',
  routing: { ...DEFAULT_PLATFORM_CONFIG.routing, healthIntervalMs: 10, slotSubnet: '172.16.40.0/22' },
};

function container(id: string, labels: Record<string, string>): ContainerState {
  return { id, name: id, running: true, exitCode: null, ip: '172.20.0.9', labels, image: 'x' };
}

describe('TrafficSlots', () => {
  async function slots() {
    const journal = new Journal();
    const engine = new FakeContainerEngine(journal);
    engine.addImage('busybox:1');
    const gate = new FakeTrafficGate(journal);
    const s = new TrafficSlots(engine, gate, config);
    await s.prepare();
    return { s, gate, engine, journal };
  }

  it('starts the gate responder on 127.0.0.1 at the gate port, in a container of its own with no instance label', async () => {
    const { engine } = await slots();
    expect(engine.daemons).toHaveLength(1);
    expect(engine.daemons[0]).toMatchObject({
      name: 'slipway-gate-inst1',
      image: 'busybox:1',
      cmd: ['httpd', '-f', '-p', '127.0.0.1:2080', '-h', '/tmp'],
    });
    expect(engine.daemons[0]!.labels[LABELS.instance]).toBeUndefined();
  });

  it('gives a first deployment the first free pair, and the next one the other slot of its pair', async () => {
    const { s } = await slots();
    const first = s.assign(null, []);
    expect(first).toEqual({ network: 'slipway-slots-inst1', ip: '172.16.40.2', pair: ['172.16.40.2', '172.16.40.3'] });
    const current = container('a', { [LABELS.slot]: '172.16.40.2' });
    s.release(first.ip);
    expect(s.assign(current, [current]).ip).toBe('172.16.40.3');
    // Another service: the next pair, since both of the first are spoken for (one used, one reserved).
    expect(s.assign(null, [current]).pair).toEqual(['172.16.40.4', '172.16.40.5']);
    // The pair of an address is the same whichever slot is asked.
    expect(s.pairOf('172.16.40.5')).toEqual(['172.16.40.4', '172.16.40.5']);
  });

  it('switches by opening the new slot, then closing the old one, and says every set in full', async () => {
    const { s, gate } = await slots();
    await s.switchTo({ ip: '172.16.40.2', port: 3000 }, [], { wait: true });
    await s.switchTo({ ip: '172.16.40.3', port: 8080 }, ['172.16.40.2'], { wait: true });
    expect(gate.syncs.map((x) => x.open)).toEqual([['172.16.40.2'], ['172.16.40.2', '172.16.40.3'], ['172.16.40.3']]);
    // Each open slot with its own service port: the gate sends the proxy's connections there.
    expect(gate.syncs[1]!.slots).toEqual([
      { ip: '172.16.40.2', port: 3000 },
      { ip: '172.16.40.3', port: 8080 },
    ]);
    expect(gate.syncs.every((x) => x.subnet === '172.16.40.0/22')).toBe(true);
  });

  it("a restart's forced write waits for the proxy before going on; on a fresh install (the network made by this start) it does not", async () => {
    const { s, gate, engine } = await slots();
    const restarted = new TrafficSlots(engine, gate, config);
    await restarted.prepare();
    vi.useFakeTimers();
    try {
      const ended = (slots: TrafficSlots) => {
        const state = { done: false };
        void slots.reconcile([{ ip: '172.16.40.2', port: 3000 }], new Set(), slots.snapshot(), { force: true }).then(() => {
          state.done = true;
        });
        return state;
      };
      const fresh = ended(s);
      await vi.advanceTimersByTimeAsync(0);
      expect(fresh.done).toBe(true);
      // The slot network was there before this start: the filter may have had slots open that this process never knew.
      const again = ended(restarted);
      await vi.advanceTimersByTimeAsync(0);
      expect(again.done).toBe(false);
      await vi.advanceTimersByTimeAsync(restarted.settleMs);
      expect(again.done).toBe(true);
      expect(gate.syncs.map((x) => x.open)).toEqual([['172.16.40.2'], ['172.16.40.2']]);
    } finally {
      vi.useRealTimers();
    }
  });

  it('prepares once however many ask at the same time', async () => {
    const journal = new Journal();
    const engine = new FakeContainerEngine(journal);
    engine.addImage('busybox:1');
    const s = new TrafficSlots(engine, new FakeTrafficGate(journal), config);
    await Promise.all([s.prepare(), s.prepare(), s.prepare()]);
    expect(engine.daemons).toHaveLength(1);
    expect(s.ready).toBe(true);
  });

  it('a reconcile pass that read the containers before a cutover changed the gate gives way', async () => {
    const { s, gate } = await slots();
    await s.switchTo({ ip: '172.16.40.2', port: 80 }, [], { wait: false });
    const before = s.snapshot();
    await s.switchTo({ ip: '172.16.40.3', port: 80 }, ['172.16.40.2'], { wait: false });
    await s.reconcile([{ ip: '172.16.40.2', port: 80 }], new Set(), before);
    expect(gate.open).toEqual(['172.16.40.3']);
    // A fresh pass writes what the containers say, and keeps what a cutover under way holds open.
    await s.reconcile([{ ip: '172.16.40.4', port: 5000 }], new Set(['172.16.40.3']), s.snapshot());
    expect(gate.syncs.at(-1)!.slots).toEqual([
      { ip: '172.16.40.3', port: 80 },
      { ip: '172.16.40.4', port: 5000 },
    ]);
    // A service whose port changed is written again, though its address did not.
    await s.reconcile([{ ip: '172.16.40.4', port: 5001 }], new Set(['172.16.40.3']), s.snapshot());
    expect(gate.syncs.at(-1)!.slots).toEqual([
      { ip: '172.16.40.3', port: 80 },
      { ip: '172.16.40.4', port: 5001 },
    ]);
  });

  /** The "host" of a later install: an earlier one's rules and gate, and a live one's network, rules and gate. */
  function hostWithLeftovers(slotSubnet = 'auto') {
    const journal = new Journal();
    const engine = new FakeContainerEngine(journal);
    engine.addImage('busybox:1');
    const gate = new FakeTrafficGate(journal);
    // Gone: its DATA_DIR and its slot network are gone; its rules and gate responder are not.
    gate.installed.set('GONE00000001', ['172.16.12.0/22']);
    engine.addContainer({
      name: 'slipway-gate-gone00000001',
      image: 'busybox:1',
      labels: { [LABELS.managed]: 'true', [LABELS.role]: 'gate:2080' },
    });
    // Live: its network exists; its rules name its subnet and that of an earlier network of its own.
    engine.networks.set('slipway-slots-live00000002', {
      [LABELS.managed]: 'true',
      [LABELS.instance]: 'live00000002',
      [LABELS.role]: 'slots',
    });
    engine.subnets.set('slipway-slots-live00000002', '172.16.8.0/22');
    gate.installed.set('LIVE00000002', ['172.16.0.0/22', '172.16.8.0/22']);
    engine.addContainer({
      name: 'slipway-gate-live00000002',
      image: 'busybox:1',
      labels: { [LABELS.managed]: 'true', [LABELS.role]: 'gate:2081' },
    });
    const s = new TrafficSlots(engine, gate, { ...config, routing: { ...config.routing, slotSubnet } }, { gateGraceMs: 10 });
    return { s, gate, engine };
  }

  it("at start, removes the rules and the gate of an install whose slot network is gone, and keeps a live install's", async () => {
    const { s, gate, engine } = hostWithLeftovers();
    await s.prepare();
    expect(gate.removedInstalls).toEqual(['GONE00000001']);
    expect([...gate.installed.keys()]).toEqual(['LIVE00000002']);
    const names = [...engine.containers.values()].map((c) => c.name).sort();
    expect(names).toEqual(['slipway-gate-inst1', 'slipway-gate-live00000002']);
  });

  it('gives a gate without a network a moment before it counts as left behind: an earlier release starts its gate first', async () => {
    const { s, engine } = hostWithLeftovers();
    engine.addContainer({
      name: 'slipway-gate-starting0004',
      image: 'busybox:1',
      labels: { [LABELS.managed]: 'true', [LABELS.role]: 'gate:2082' },
    });
    // That install makes its network just after this one first looks.
    const list = engine.listNetworks.bind(engine);
    let looks = 0;
    engine.listNetworks = async (label) => {
      const found = await list(label);
      if (++looks === 1) engine.networks.set('slipway-slots-starting0004', { [LABELS.instance]: 'starting0004', [LABELS.role]: 'slots' });
      return found;
    };
    await s.prepare();
    const names = [...engine.containers.values()].map((c) => c.name).sort();
    expect(names).toEqual(['slipway-gate-inst1', 'slipway-gate-live00000002', 'slipway-gate-starting0004']);
  });

  it('never takes a subnet that live rules name, though no network has it any more', async () => {
    const { s } = hostWithLeftovers();
    await s.prepare();
    // 172.16.0.0/22, the first candidate, is named by a live install's rules though no network has it
    // (Docker would give it out); 172.16.8.0/22 is that install's network.
    expect(s.assign(null, []).pair).toEqual(['172.16.4.2', '172.16.4.3']);
    const { s: explicit, engine } = hostWithLeftovers('172.16.0.0/24');
    await expect(explicit.prepare()).rejects.toThrow(
      'SLOT_SUBNET 172.16.0.0/24 overlaps 172.16.0.0/22, which the packet-filter rules of the install of the network slipway-slots-live00000002 name; choose another SLOT_SUBNET, or auto',
    );
    // Nothing half made: no network, no responder.
    expect(engine.networks.has('slipway-slots-inst1')).toBe(false);
    expect(engine.daemons).toEqual([]);
  });

  it("refuses a gate port another install's gate or another process holds, with one line; its own responder's is not taken", async () => {
    const { s, gate, engine } = hostWithLeftovers();
    engine.addContainer({
      name: 'slipway-gate-live00000003',
      image: 'busybox:1',
      labels: { [LABELS.managed]: 'true', [LABELS.role]: 'gate:2080' },
    });
    engine.networks.set('slipway-slots-live00000003', {
      [LABELS.managed]: 'true',
      [LABELS.instance]: 'live00000003',
      [LABELS.role]: 'slots',
    });
    gate.portTaken = true;
    const line =
      'PROXY_GATE_PORT 2080 on 127.0.0.1 is taken by the traffic gate of another Slipway install on this host (container slipway-gate-live00000003): each install on a host needs a gate port of its own; set PROXY_GATE_PORT to a free port';
    expect(await s.preflight()).toBe(line);
    // The gate of the install that is gone was removed all the same; the port's holder was not.
    expect(engine.containers.size).toBe(2);
    await expect(s.prepare()).rejects.toThrow(line);
    expect(engine.daemons).toEqual([]);
    engine.containers.clear();
    expect(await s.preflight()).toMatch(/^PROXY_GATE_PORT 2080 on 127\.0\.0\.1 is taken by another process: /);
    gate.portTaken = false;
    expect(await s.preflight()).toBeNull();
    await s.prepare();
    // Its own responder holds the port from now on, across restarts: not a refusal.
    gate.portTaken = true;
    const restarted = new TrafficSlots(engine, gate, config);
    expect(await restarted.preflight()).toBeNull();
    await restarted.prepare();
    expect(engine.daemons).toHaveLength(1);
  });
});

describe('Caddy routes to slots', () => {
  it('a route names the open slot of its service as a file: any number of services, and every cutover, is the same configuration', () => {
    const options = { httpPort: 80, httpsPort: 443, autoHttps: false, acmeEmail: null };
    const one = { version: 'v1', routes: [{ hostname: 'a.test', serviceId: 's1', upstream: '172.16.40.2:80' }] };
    const many = {
      version: 'v2',
      routes: [
        { hostname: 'a.test', serviceId: 's1', upstream: '172.16.40.3:80' },
        ...Array.from({ length: 600 }, (_, i) => ({ hostname: `s${i}.test`, serviceId: `s${i}`, upstream: `172.16.41.${i % 250}:80` })),
        { hostname: 'w.test', serviceId: 'w', upstream: null },
      ],
    };
    expect(buildCaddyConfig(options, null, { routesDir: '/routes' })).toEqual(buildCaddyConfig(options, null, { routesDir: '/routes' }));
    expect(planFiles(one)).toEqual([
      { dir: '_all', names: ['a.test'] },
      { dir: '_waiting', names: [] },
      { dir: '_upstream/a.test', names: ['172.16.40.2:80'] },
    ]);
    const files = planFiles(many);
    expect(files).toHaveLength(603);
    expect(files).toContainEqual({ dir: '_upstream/a.test', names: ['172.16.40.3:80'] });
    expect(files[1]).toEqual({ dir: '_waiting', names: ['w.test'] });
  });
});

describe('the runner with a traffic gate', () => {
  let h: RuntimeHarness;
  const { queue, finished, logs } = runnerSteps(() => h, admin, 10_000);
  afterEach(async () => {
    await h?.close();
  });

  async function setup(): Promise<string> {
    h = await createRuntimeHarness({ gate: true, config: { rootDomain: 'apps.test', routing: config.routing } });
    await h.runner.start();
    const project = await h.services.projects.create(admin, { name: 'Shop', description: '' });
    const view = await h.services.serviceCreation.create(admin, project.id, {
      name: 'web',
      repoUrl: 'container-image',
      containerImage: 'nginx:1.27',
      internalPort: 80,
    } as CreateServiceInput);
    return view.id;
  }

  async function deployOk(serviceId: string): Promise<DeploymentRecord> {
    const d = await finished(await queue(serviceId));
    expect(d.status, (await logs(d.id)).join('\n')).toBe('succeeded');
    return d;
  }

  it('opens the new slot, routes to it, stops the old container, then closes its slot; the proxy gets files, never a load', async () => {
    const serviceId = await setup();
    const first = await deployOk(serviceId);
    expect(h.gate!.open).toEqual(['172.16.40.2']);
    expect(h.proxy.last).toContainEqual({ hostname: 'web-shop.apps.test', serviceId, upstream: '172.16.40.2:80' });
    const apply = h.proxy.apply.bind(h.proxy);
    h.proxy.apply = async (table) => {
      h.journal.add(`proxy.apply ${table.routes.map((r) => r.upstream).join(',')}`);
      return apply(table);
    };
    h.journal.entries.length = 0;
    const second = await deployOk(serviceId);
    expect(h.proxy.last).toContainEqual({ hostname: 'web-shop.apps.test', serviceId, upstream: '172.16.40.3:80' });
    const j = h.journal;
    const opened = j.indexOf('gate.sync 172.16.40.2,172.16.40.3');
    const routed = j.entries.findIndex((entry) => entry.startsWith('proxy.apply') && entry.includes('172.16.40.3:80'));
    const stopped = j.indexOf(`engine.stopAndRemove ${first.containerName}`);
    const closed = j.indexOf('gate.sync 172.16.40.3');
    expect(opened).toBeGreaterThan(-1);
    expect(routed).toBeGreaterThan(opened);
    expect(stopped).toBeGreaterThan(routed);
    expect(closed).toBeGreaterThan(stopped);
    expect((await logs(second.id)).some((l) => /^Routes switched to .*: traffic slot 172\.16\.40\.3 opened; /.test(l))).toBe(true);
    const third = await deployOk(serviceId);
    expect(h.gate!.open).toEqual(['172.16.40.2']);
    expect((await logs(third.id)).join('\n')).toContain('traffic slot 172.16.40.2 opened; ');
  });

  it('when the proxy refuses the new routes, the old slot stays open (its routes still name it) until a table without it is served', async () => {
    const serviceId = await setup();
    const first = await deployOk(serviceId);
    h.proxy.result = { ok: false, detail: 'Caddy rejected the configuration, and keeps serving the previous one: boom' };
    const second = await deployOk(serviceId);
    expect(await logs(second.id)).toContain('The previous container keeps running until the proxy has the new routes; it is stopped then');
    expect(h.gate!.open).toEqual(['172.16.40.2', '172.16.40.3']);
    // The runner's pass: the deployment is over, the new container is the current one, but Caddy still has the old routes.
    await h.services.routing.reconcile();
    await h.runner.reconcile();
    expect(h.gate!.open).toEqual(['172.16.40.2', '172.16.40.3']);
    expect(h.engine.byName(first.containerName!)?.running).toBe(true);
    // Caddy takes the new routes: the next pass closes the old slot and retires its container.
    h.proxy.result = { ok: true, detail: 'loaded' };
    await h.services.routing.reconcile();
    await h.runner.reconcile();
    expect(h.gate!.open).toEqual(['172.16.40.3']);
    expect(h.engine.byName(first.containerName!)).toBeUndefined();
  });

  it("on restart, opens only the current containers' slots before the container of a cut-short cutover goes", async () => {
    const serviceId = await setup();
    const live = await deployOk(serviceId);
    // What a crash mid-cutover leaves: a second container in the other slot, its slot open too.
    const stray = h.engine.addContainer({
      name: 'slipway-stray',
      image: 'nginx:1.27',
      labels: {
        [LABELS.managed]: 'true',
        [LABELS.instance]: h.config.instanceId,
        [LABELS.service]: serviceId,
        [LABELS.deployment]: 'zzzz',
        [LABELS.slot]: '172.16.40.3',
      },
    });
    await h.gate!.sync('172.16.40.0/22', [
      { ip: '172.16.40.2', port: 80 },
      { ip: '172.16.40.3', port: 80 },
    ]);
    await h.runner.stop();
    const apply = h.proxy.apply.bind(h.proxy);
    h.proxy.apply = async (table) => {
      h.journal.add(`proxy.apply ${table.routes.map((r) => r.upstream).join(',')}`);
      return apply(table);
    };
    h.journal.entries.length = 0;
    await h.runner.start();
    // The routes may name the stray's slot: they go back to the live one before the gate closes it.
    const routed = h.journal.indexOf('proxy.apply 172.16.40.2:80');
    const reopened = h.journal.indexOf('gate.sync 172.16.40.2');
    const removed = h.journal.indexOf(`engine.stopAndRemove ${stray.name}`);
    expect(routed).toBeGreaterThan(-1);
    expect(reopened).toBeGreaterThan(routed);
    expect(removed).toBeGreaterThan(reopened);
    expect(h.gate!.open).toEqual(['172.16.40.2']);
    expect(await h.engine.listContainers({ key: LABELS.service, value: serviceId })).toEqual([
      expect.objectContaining({ name: live.containerName }),
    ]);
  });
});
