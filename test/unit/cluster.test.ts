import { createHash, X509Certificate } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { OpensslCertificateIssuer } from '../../adapters/tls/openssl.certificate-issuer.js';
import { NodeEngines } from '../../src/cluster/node-engines.js';
import type { ServerRecord } from '../../src/cluster/server.records.js';
import type { ContainerEngine } from '../../src/deployments/container-engine.port.js';
import { DEFAULT_PLATFORM_CONFIG, type Actor } from '../../src/index.js';
import { FakeRegistry, FakeRemoteEngines, FakeSwarm, RecordingServerEvents } from '../helpers/cluster-fakes.js';
import { createHarness, type Harness } from '../helpers/harness.js';
import { admin, database, reader, rejection, scoped } from '../helpers/unit-harness.js';

/*
 * The cluster's use cases (src/cluster) over fakes of the swarm, the nodes' engines and the registry,
 * with the real openssl issuer (certificates are checked, not mocked): servers, the join exchange,
 * the cluster forming on the second server only, the monitor's states and events, removal's refusals,
 * access, the registry's pushes and garbage collection, and the node-engine lookup.
 */
const ADVERTISE = '10.9.0.1';
const member: Actor = { keyId: 'member', access: 'write', projectIds: null, role: 'member', userId: 'u1', via: 'session' };
const SCRIPT = '#!/usr/bin/env bash\necho join\n';

let h: Harness;
let swarm: FakeSwarm;
let registry: FakeRegistry;
let remotes: FakeRemoteEngines;
let events: RecordingServerEvents;
let now: Date;
/** What each reconcile pass asked for by a drain saw: the node's availability and the server row's. */
let reroutes: string[];

async function open(overrides: { ttlMs?: number } = {}) {
  swarm = new FakeSwarm();
  reroutes = [];
  registry = new FakeRegistry();
  remotes = new FakeRemoteEngines();
  events = new RecordingServerEvents();
  now = new Date('2026-11-28T10:00:00.000Z');
  h = await createHarness({
    clock: { now: () => new Date(now) },
    config: {
      cluster: { ...DEFAULT_PLATFORM_CONFIG.cluster, advertiseAddress: ADVERTISE, joinTokenTtlMs: overrides.ttlMs ?? 600_000 },
      deploy: { ...DEFAULT_PLATFORM_CONFIG.deploy, rollbackKeep: 2 },
    },
    tls: { issuer: new OpensslCertificateIssuer() },
    cluster: {
      runtime: swarm,
      remoteEngines: remotes,
      registry,
      events,
      joinUrl: () => 'http://10.9.0.1:3000',
      joinScript: async () => SCRIPT,
      reroute: async () => {
        const servers = await h.database.store.servers.list();
        for (const node of swarm.nodesById.values())
          if (node.role === 'worker')
            reroutes.push(`${node.id}: node ${node.availability}, row ${servers.find((s) => s.swarmNodeId === node.id)?.availability}`);
      },
    },
  });
  return h;
}

beforeEach(async () => {
  await open();
});
afterEach(async () => {
  await h.close();
});

const cluster = () => ({
  servers: h.services.servers,
  join: h.services.serverJoins,
  registry: h.services.registry,
  monitor: h.services.serverMonitor,
  formation: h.services.clusterFormation,
});

/** A node's key and certificate request, as the join script makes them. */
function csr(): { csrBase64: string; keyPem: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'slipway-csr-'));
  try {
    execFileSync('openssl', [
      'req',
      '-new',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      path.join(dir, 'node.key'),
      '-out',
      path.join(dir, 'node.csr'),
      '-subj',
      '/CN=node',
    ]);
    return {
      csrBase64: readFileSync(path.join(dir, 'node.csr')).toString('base64'),
      keyPem: readFileSync(path.join(dir, 'node.key'), 'utf8'),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function addAndJoin(name: string, address: string, nodeId: string, labels?: Record<string, string>) {
  const created = await cluster().servers.add(admin, { name, ...(labels ? { labels } : {}) });
  const bundle = await cluster().join.exchange({ token: created.join.token, ...csr(), address, hostname: name, engineVersion: '20.10.24' });
  swarm.join(nodeId, name, address);
  await cluster().monitor!.tick();
  return { created, bundle };
}

async function record(id: string): Promise<ServerRecord> {
  return (await h.database.store.servers.get(id))!;
}

describe('servers on a single server', () => {
  it('lists the host as the first server, a manager, with its engine, resources and containers; Swarm is never started', async () => {
    swarm.taskList = [
      {
        id: 'c1',
        serviceId: 'svc1',
        name: 'slipway-svc1-d1',
        nodeId: null,
        state: 'running',
        desiredState: 'running',
        containerId: 'c1',
        reservedCpus: 0.5,
        reservedMemoryBytes: 256 * 1024 * 1024,
      },
    ];
    const servers = await cluster().servers.list(admin);
    expect(servers).toHaveLength(1);
    expect(servers[0]).toMatchObject({
      role: 'manager',
      local: true,
      state: 'ready',
      availability: 'active',
      address: ADVERTISE,
      engineVersion: '20.10.24',
      resources: { cpus: 4, memoryMb: 8192, reservedCpus: 0.5, reservedMemoryMb: 256 },
      services: [{ serviceId: 'svc1', name: 'slipway-svc1-d1', tasks: 1 }],
      tasks: [expect.objectContaining({ id: 'c1', state: 'running' })],
    });
    await cluster().servers.add(admin, { name: 'worker-1' });
    await cluster().monitor!.tick();
    expect(swarm.inits).toEqual([]);
    expect(swarm.swarm).toBe('inactive');
    expect(registry.started).toEqual([]);
  });

  it('refuses to drain the only server, and keeps its labels for when the cluster forms', async () => {
    const [local] = await cluster().servers.list(admin);
    const error = await rejection(cluster().servers.update(admin, { id: local!.id, availability: 'drain' }));
    expect(error).toMatchObject({ code: 'conflict', details: { field: 'availability' } });
    const updated = await cluster().servers.update(admin, { id: local!.id, labels: { disk: 'ssd' } });
    expect(updated.labels).toEqual({ disk: 'ssd' });
    expect(swarm.updates).toEqual([]);
  });
});

describe('the engine snapshot the servers are shown with', () => {
  it('is one round of engine calls for the reads of a moment, taken again after a write to the servers', async () => {
    const [local] = await cluster().servers.list(admin);
    let calls = 0;
    const info = swarm.info.bind(swarm);
    swarm.info = async () => {
      calls++;
      return info();
    };
    await h.database.store.servers.update(local!.id, { labels: { disk: 'ssd' } });
    const lists = await Promise.all([1, 2, 3].map(() => cluster().servers.list(admin)));
    expect(lists.map((servers) => servers[0]!.labels)).toEqual([{ disk: 'ssd' }, { disk: 'ssd' }, { disk: 'ssd' }]);
    expect(calls).toBe(1);
    await cluster().servers.get(admin, local!.id);
    expect(calls).toBe(1);
    await h.database.store.servers.update(local!.id, { labels: {} });
    expect((await cluster().servers.list(admin))[0]!.labels).toEqual({});
    expect(calls).toBe(2);
  });
});

describe('adding a server', () => {
  it('answers a one-line command: the script checked by its digest, the token, the CA fingerprint and the manager', async () => {
    const { server, join } = await cluster().servers.add(admin, { name: 'worker-1', labels: { zone: 'a' } });
    expect(server).toMatchObject({ name: 'worker-1', role: 'worker', state: 'unknown', joinedAt: null, labels: { zone: 'a' } });
    expect(join.token).toMatch(/^slwj_[A-Za-z0-9_-]{43}$/);
    expect(join.managerAddress).toBe(`${ADVERTISE}:2377`);
    expect(join.expiresAt).toBe(new Date(now.getTime() + 600_000).toISOString());
    const digest = createHash('sha256').update(SCRIPT).digest('hex');
    const ca = await h.database.store.settings.get('database_tls_ca');
    const fingerprint = new X509Certificate(JSON.parse(ca!).certPem).fingerprint256.replaceAll(':', '').toLowerCase();
    expect(join.command).toBe(
      `f=$(mktemp) && curl -fsS --max-time 60 -o "$f" 'http://10.9.0.1:3000/api/servers/join.sh' && echo "${digest}  $f" | sha256sum -c --quiet - && bash "$f" --url 'http://10.9.0.1:3000' --token '${join.token}' --ca-sha256 '${fingerprint}' --manager '${ADVERTISE}:2377'`,
    );
    // Shown once: stored as a hash only, and no read shows it again.
    const stored = await record(server.id);
    expect(stored.joinTokenHash).toBe(createHash('sha256').update(join.token).digest('hex'));
    expect(JSON.stringify(await cluster().servers.list(admin))).not.toContain(join.token);
    expect(JSON.stringify(stored)).not.toContain(join.token);
  });

  it('refuses a second server of the same name', async () => {
    await cluster().servers.add(admin, { name: 'worker-1' });
    expect(await rejection(cluster().servers.add(admin, { name: 'Worker-1' }))).toMatchObject({
      code: 'conflict',
      details: { field: 'name' },
    });
  });
});

describe('joining', () => {
  it('forms the cluster at the second server only, and hands the node a certificate for its own key, server auth only, naming its address', async () => {
    const { created, bundle } = await addAndJoin('worker-1', '10.9.0.11', 'node-w1', { zone: 'a' });
    expect(swarm.inits).toEqual([ADVERTISE]);
    expect(bundle).toMatchObject({
      serverId: created.server.id,
      name: 'worker-1',
      swarmJoinToken: 'SWMTKN-1-fakeworkertoken',
      managerAddress: `${ADVERTISE}:2377`,
      registryAddress: `${ADVERTISE}:5000`,
      engineTlsPort: 2376,
    });
    const ca = new X509Certificate(Buffer.from(bundle.caCertificateBase64, 'base64'));
    const cert = new X509Certificate(Buffer.from(bundle.certificateBase64, 'base64'));
    expect(cert.verify(ca.publicKey)).toBe(true);
    expect(cert.checkIP('10.9.0.11')).toBe('10.9.0.11');
    expect(cert.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
    expect(cert.subject).toBe('CN=worker-1');
    // The cluster formed: the registry starts, the platform's client certificate is for client auth only.
    await cluster().monitor!.tick();
    expect(registry.started).toHaveLength(1);
    expect(registry.started[0]).toMatchObject({ image: 'registry:2', host: ADVERTISE, port: 5000, username: 'slipway' });
    const client = await cluster().formation!.clientCredentials();
    expect(new X509Certificate(client.certPem).keyUsage).toEqual(['1.3.6.1.5.5.7.3.2']);
    // Linked: the node carries the server's id and the user's labels, and the server is ready.
    expect(swarm.nodesById.get('node-w1')!.labels).toEqual({ zone: 'a', 'slipway.server': created.server.id });
    const [, worker] = await cluster().servers.list(admin);
    expect(worker).toMatchObject({ name: 'worker-1', state: 'ready', address: '10.9.0.11', role: 'worker' });
    expect(worker!.joinedAt).not.toBeNull();
    // The password of the registry is sealed.
    expect(await h.database.store.settings.get('cluster_registry')).not.toContain(registry.started[0]!.password);

    await addAndJoin('worker-2', '10.9.0.12', 'node-w2');
    expect(swarm.inits).toHaveLength(1);
    expect((await cluster().servers.list(admin)).map((s) => s.state)).toEqual(['ready', 'ready', 'ready']);
  });

  it('refuses a wrong, a used and an expired token, and leaves the token usable when it refuses a bad request', async () => {
    const { join } = await cluster().servers.add(admin, { name: 'worker-1' });
    const request = { ...csr(), address: '10.9.0.11', hostname: 'w1' };
    expect(await rejection(cluster().join.exchange({ ...request, token: 'slwj_wrong' }))).toMatchObject({ code: 'invalid_credentials' });
    expect(
      await rejection(cluster().join.exchange({ ...request, token: `${join.token.slice(0, -1)}${join.token.endsWith('A') ? 'B' : 'A'}` })),
    ).toMatchObject({
      code: 'invalid_credentials',
    });
    // A request that is not a certificate request: refused, the token kept.
    expect(
      await rejection(cluster().join.exchange({ ...request, csrBase64: Buffer.from('hello').toString('base64'), token: join.token })),
    ).toMatchObject({
      code: 'validation_error',
    });
    await cluster().join.exchange({ ...request, token: join.token });
    const used = await rejection(cluster().join.exchange({ ...request, token: join.token }));
    expect(used).toMatchObject({ code: 'invalid_credentials', message: expect.stringContaining('already used') });

    const late = await cluster().servers.add(admin, { name: 'worker-2' });
    now = new Date(now.getTime() + 600_001);
    const expired = await rejection(cluster().join.exchange({ ...request, address: '10.9.0.12', token: late.join.token }));
    expect(expired).toMatchObject({ code: 'invalid_credentials', message: expect.stringContaining('expired') });
  });

  it('links the newest attempt from an address, not an earlier one that never joined', async () => {
    const first = await cluster().servers.add(admin, { name: 'attempt-1' });
    await cluster().join.exchange({ token: first.join.token, ...csr(), address: '10.9.0.11', hostname: 'w1' });
    const second = await cluster().servers.add(admin, { name: 'attempt-2' });
    await cluster().join.exchange({ token: second.join.token, ...csr(), address: '10.9.0.11', hostname: 'w1' });
    swarm.join('node-w1', 'w1', '10.9.0.11');
    await cluster().monitor!.tick();
    expect((await record(second.server.id)).swarmNodeId).toBe('node-w1');
    expect(await record(first.server.id)).toMatchObject({ swarmNodeId: null, address: null });
  });
});

describe('the monitor', () => {
  it('records a node going down and coming back once each, as server.down and server.up, however many processes watch', async () => {
    const { created } = await addAndJoin('worker-1', '10.9.0.11', 'node-w1');
    swarm.setState('node-w1', 'down');
    // Two passes (as two processes would make): one change, one event.
    await Promise.all([cluster().monitor!.tick(), cluster().monitor!.tick()]);
    await cluster().monitor!.tick();
    expect(events.events).toEqual([{ type: 'server.down', serverId: created.server.id }]);
    expect((await cluster().servers.get(admin, created.server.id)).state).toBe('down');
    swarm.setState('node-w1', 'ready');
    await cluster().monitor!.tick();
    expect(events.events).toEqual([
      { type: 'server.down', serverId: created.server.id },
      { type: 'server.up', serverId: created.server.id },
    ]);
  });

  it('keeps the last known states while the manager does not answer', async () => {
    const { created } = await addAndJoin('worker-1', '10.9.0.11', 'node-w1');
    swarm.down = true;
    await cluster().monitor!.tick();
    expect(events.events).toEqual([]);
    const listed = await cluster().servers.list(admin);
    expect(listed.find((s) => s.id === created.server.id)).toMatchObject({ state: 'ready', resources: null });
  });
});

describe('changing and removing servers', () => {
  it('drains a server and relabels it on its node, keeping the platform label', async () => {
    const { created } = await addAndJoin('worker-1', '10.9.0.11', 'node-w1');
    const updated = await cluster().servers.update(admin, { id: created.server.id, availability: 'drain', labels: { disk: 'hdd' } });
    expect(updated).toMatchObject({ availability: 'drain', labels: { disk: 'hdd' } });
    expect(swarm.nodesById.get('node-w1')).toMatchObject({
      availability: 'drain',
      labels: { disk: 'hdd', 'slipway.server': created.server.id },
    });
  });

  it('drains in order: the node paused and the row drained, the routes updated, then Swarm drains the node', async () => {
    const { created } = await addAndJoin('worker-1', '10.9.0.11', 'node-w1');
    swarm.taskList = [
      {
        id: 't1',
        serviceId: 's1',
        name: 'web',
        nodeId: 'node-w1',
        state: 'running',
        desiredState: 'running',
        containerId: 'c',
        reservedCpus: 0,
        reservedMemoryBytes: 0,
      },
    ];
    swarm.updates.length = 0;
    await cluster().servers.update(admin, { id: created.server.id, availability: 'drain' });
    expect(reroutes).toEqual(['node-w1: node pause, row drain']);
    expect(swarm.updates.map((u) => u.change.availability)).toEqual(['pause', 'drain']);
    // Drained already: nothing is paused again.
    await cluster().servers.update(admin, { id: created.server.id, availability: 'drain' });
    expect(reroutes).toHaveLength(1);
  });

  it('refuses the last manager, a server that is not drained, one still running tasks, and one holding a database', async () => {
    const { created } = await addAndJoin('worker-1', '10.9.0.11', 'node-w1');
    const [local] = await cluster().servers.list(admin);
    expect(await rejection(cluster().servers.remove(admin, local!.id))).toMatchObject({
      code: 'conflict',
      details: { reason: 'last_manager' },
    });
    expect(await rejection(cluster().servers.remove(admin, created.server.id))).toMatchObject({
      code: 'conflict',
      details: { reason: 'not_drained' },
    });
    await cluster().servers.update(admin, { id: created.server.id, availability: 'drain' });
    swarm.taskList = [
      {
        id: 't1',
        serviceId: 's1',
        name: 'web',
        nodeId: 'node-w1',
        state: 'running',
        desiredState: 'shutdown',
        containerId: 'c',
        reservedCpus: 0,
        reservedMemoryBytes: 0,
      },
    ];
    expect(await rejection(cluster().servers.remove(admin, created.server.id))).toMatchObject({
      code: 'conflict',
      details: { reason: 'draining', tasks: 1 },
    });
    swarm.taskList = [];
    const shop = await h.services.projects.create(admin, { name: 'Shop', description: '' });
    const orders = await h.services.serviceCreation.create(admin, shop.id, database('orders', 'postgres'));
    await h.database.store.servers.place(orders.id, created.server.id, now);
    const holds = await rejection(cluster().servers.remove(admin, created.server.id));
    expect(holds).toMatchObject({ code: 'conflict', details: { reason: 'holds_volumes', databases: [{ id: orders.id, name: 'orders' }] } });
    expect((holds as Error).message).toContain('orders');
  });

  it('removes a drained server: its engine leaves the swarm, its node goes, the platform stops dialling it', async () => {
    const { created } = await addAndJoin('worker-1', '10.9.0.11', 'node-w1');
    await cluster().servers.update(admin, { id: created.server.id, availability: 'drain' });
    await cluster().servers.remove(admin, created.server.id);
    expect(remotes.left).toEqual(['10.9.0.11']);
    expect(swarm.removed).toEqual([{ nodeId: 'node-w1', force: true }]);
    expect(await h.database.store.servers.get(created.server.id)).toBeNull();
    expect(await rejection(cluster().servers.get(admin, created.server.id))).toMatchObject({ code: 'not_found' });
  });

  it('removes a server that never joined at once', async () => {
    const { server } = await cluster().servers.add(admin, { name: 'never' });
    await cluster().servers.remove(admin, server.id);
    expect(swarm.removed).toEqual([]);
    expect(await h.database.store.servers.get(server.id)).toBeNull();
  });
});

describe('databases on the cluster', () => {
  it('shows the server holding a database: the local one by default, another once placed there, unavailable while it is down', async () => {
    const local = await cluster().servers.ensureLocal();
    const shop = await h.services.projects.create(admin, { name: 'Shop', description: '' });
    const orders = await h.services.serviceCreation.create(admin, shop.id, database('orders', 'postgres'));
    const web = await h.services.serviceCreation.create(admin, shop.id, { name: 'web', repoFullName: 'acme/web' });
    expect(orders.server).toEqual({ id: local.id, name: local.name, state: local.state });
    expect(web.server).toBeNull();
    expect((await cluster().servers.get(admin, local.id)).databases).toEqual([{ id: orders.id, name: 'orders' }]);

    const { created } = await addAndJoin('worker-1', '10.9.0.11', 'node-w1');
    await h.database.store.servers.place(orders.id, created.server.id, now);
    expect((await h.services.serviceReader.get(admin, orders.id)).server).toEqual({
      id: created.server.id,
      name: 'worker-1',
      state: 'ready',
    });
    // The servers say which databases they hold.
    expect((await cluster().servers.get(admin, created.server.id)).databases).toEqual([{ id: orders.id, name: 'orders' }]);
    expect((await cluster().servers.get(admin, local.id)).databases).toEqual([]);

    swarm.setState('node-w1', 'down');
    await cluster().monitor!.tick();
    const down = await h.services.serviceReader.get(admin, orders.id);
    expect(down).toMatchObject({
      status: 'unavailable',
      reachable: false,
      server: { id: created.server.id, name: 'worker-1', state: 'down' },
    });
    const listed = (await h.services.projects.list(admin)).flatMap((p) => p.services);
    expect(listed.find((s) => s.id === orders.id)).toMatchObject({ status: 'unavailable', server: { state: 'down' } });
    expect(listed.find((s) => s.id === web.id)).toMatchObject({ status: 'idle', server: null });

    swarm.setState('node-w1', 'ready');
    await cluster().monitor!.tick();
    expect(await h.services.serviceReader.get(admin, orders.id)).toMatchObject({ status: 'idle', server: { state: 'ready' } });
  });

  it('names only the databases that exist when a server holding volumes is removed; a deleted database frees it', async () => {
    const { created } = await addAndJoin('worker-1', '10.9.0.11', 'node-w1');
    await cluster().servers.update(admin, { id: created.server.id, availability: 'drain' });
    const shop = await h.services.projects.create(admin, { name: 'Shop', description: '' });
    const orders = await h.services.serviceCreation.create(admin, shop.id, database('orders', 'postgres'));
    const cache = await h.services.serviceCreation.create(admin, shop.id, database('cache', 'redis'));
    await h.database.store.servers.place(orders.id, created.server.id, now);
    await h.database.store.servers.place(cache.id, created.server.id, now);
    expect(await rejection(cluster().servers.remove(admin, created.server.id))).toMatchObject({
      code: 'conflict',
      details: { reason: 'holds_volumes', databases: [{ id: orders.id }, { id: cache.id }] },
    });
    await h.services.removal.deleteService(admin, cache.id);
    expect(await h.database.store.servers.placementOf(cache.id)).toBeNull();
    expect(await rejection(cluster().servers.remove(admin, created.server.id))).toMatchObject({
      details: { reason: 'holds_volumes', databases: [{ id: orders.id, name: 'orders' }] },
    });
    await h.services.removal.deleteService(admin, orders.id);
    await cluster().servers.remove(admin, created.server.id);
    expect(await h.database.store.servers.get(created.server.id)).toBeNull();
  });
});

describe('who may see and change servers', () => {
  it('admits the install\u2019s admins only: project-scoped keys and members get 403, read keys may read', async () => {
    await cluster().servers.list(reader);
    for (const actor of [scoped('p1'), member]) {
      expect(await rejection(cluster().servers.list(actor))).toMatchObject({ code: 'forbidden' });
      expect(await rejection(cluster().servers.add(actor, { name: 'x' }))).toMatchObject({ code: 'forbidden' });
    }
    expect(await rejection(cluster().servers.add(reader, { name: 'x' }))).toMatchObject({ code: 'forbidden' });
    const token: Actor = { keyId: 't', access: 'write', projectIds: null, scopes: ['project:read'], via: 'token' };
    expect(await rejection(cluster().servers.list(token))).toMatchObject({ code: 'insufficient_scope' });
  });
});

describe('the registry', () => {
  async function deployment(serviceId: string, id: string, status: 'succeeded' | 'failed' | 'running', minutes: number) {
    await h.database.store.deployments.insert({
      id,
      serviceId,
      commitSha: null,
      status,
      trigger: 'manual',
      origin: null,
      imageTag: null,
      containerName: null,
      rollbackOf: null,
      abortRequested: false,
      startedAt: null,
      finishedAt: null,
      createdAt: new Date(now.getTime() + minutes * 60_000),
    });
  }

  it('pushes nothing on a single server, and every build once the cluster formed, recording its digest', async () => {
    const lines: string[] = [];
    expect(await cluster().registry.publish({ id: 'd0', serviceId: 's1' }, 'slipway-s1-d0', (l) => lines.push(l))).toBeNull();
    await addAndJoin('worker-1', '10.9.0.11', 'node-w1');
    const published = await cluster().registry.publish({ id: 'd1', serviceId: 's1' }, 'slipway-s1-d1', (l) => lines.push(l));
    expect(published!.reference).toMatch(new RegExp(`^${ADVERTISE}:5000/slipway/s1@sha256:[0-9a-f]{64}$`));
    expect(registry.pushes).toEqual([expect.objectContaining({ localImage: 'slipway-s1-d1', repository: 'slipway/s1', tag: 'd1' })]);
    expect(await cluster().registry.reference('d1')).toBe(published!.reference);
    // Published once: a second call answers the recorded digest.
    await cluster().registry.publish({ id: 'd1', serviceId: 's1' }, 'slipway-s1-d1', () => {});
    expect(registry.pushes).toHaveLength(1);
  });

  it('collects the images no rollback keeps (ROLLBACK_KEEP live deployments, and those under way), then the blobs', async () => {
    await addAndJoin('worker-1', '10.9.0.11', 'node-w1');
    for (const [id, status, minutes] of [
      ['d1', 'succeeded', 1],
      ['d2', 'failed', 2],
      ['d3', 'succeeded', 3],
      ['d4', 'succeeded', 4],
      ['d5', 'running', 5],
    ] as const) {
      await deployment('s1', id, status, minutes);
      await cluster().registry.publish({ id, serviceId: 's1' }, `slipway-s1-${id}`, () => {});
    }
    expect(await cluster().registry.collect()).toBe(2);
    expect(registry.deleted.map((d) => d.repository)).toEqual(['slipway/s1', 'slipway/s1']);
    expect((await h.database.store.servers.images('s1')).map((i) => i.deploymentId).sort()).toEqual(['d3', 'd4', 'd5']);
    expect(registry.collections).toBe(1);
    // Nothing more to collect: no manifest deleted, the registry not stopped.
    expect(await cluster().registry.collect()).toBe(0);
    expect(registry.collections).toBe(1);
  });

  it('takes an external registry once it accepts the credentials; its password is sealed and never shown', async () => {
    registry.accepts = false;
    const refused = await rejection(
      cluster().registry.configure(admin, {
        kind: 'external',
        address: 'registry.example.com',
        username: 'ci',
        password: 'pa55word-secret',
      }),
    );
    expect(refused).toMatchObject({ code: 'upstream_error' });
    registry.accepts = true;
    const view = await cluster().registry.configure(admin, {
      kind: 'external',
      address: 'registry.example.com',
      username: 'ci',
      password: 'pa55word-secret',
    });
    expect(view).toEqual({ kind: 'external', address: 'registry.example.com', username: 'ci', running: true });
    expect(JSON.stringify(view)).not.toContain('pa55word-secret');
    expect(await h.database.store.settings.get('cluster_registry')).not.toContain('pa55word-secret');
    expect(await rejection(cluster().registry.view(scoped('p1')))).toMatchObject({ code: 'forbidden' });
  });
});

describe('the node-engine lookup', () => {
  it('answers the local engine for the host and for containers on no node, and each node\u2019s engine over mutual TLS', async () => {
    const { created } = await addAndJoin('worker-1', '10.9.0.11', 'node-w1');
    const local = { name: 'local' } as unknown as ContainerEngine;
    const remoteEngine = { name: 'remote' } as unknown as ContainerEngine;
    const factory = new FakeRemoteEngines(remoteEngine);
    const engines = new NodeEngines(
      { store: h.database.store, config: { ...DEFAULT_PLATFORM_CONFIG, cluster: { ...DEFAULT_PLATFORM_CONFIG.cluster } } } as never,
      local,
      factory,
      () => cluster().formation!.clientCredentials(),
    );
    expect(await engines.engineOf({ nodeId: null, containerId: 'c' })).toBe(local);
    expect(await engines.engineOf({ nodeId: swarm.managerId, containerId: 'c' })).toBe(local);
    expect(await engines.engineOf({ nodeId: 'node-w1', containerId: 'c' })).toBe(remoteEngine);
    // One client per node, with the platform's client certificate.
    await engines.engineOfServer(await record(created.server.id));
    expect(factory.connections).toHaveLength(1);
    expect(factory.connections[0]).toMatchObject({ address: '10.9.0.11', port: 2376 });
    expect(new X509Certificate(factory.connections[0]!.credentials.certPem).keyUsage).toEqual(['1.3.6.1.5.5.7.3.2']);
    await expect(engines.engineOf({ nodeId: 'node-unknown', containerId: 'c' })).rejects.toThrow(/No server is node/);
  });
});
