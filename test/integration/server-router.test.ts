import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { OpensslCertificateIssuer } from '../../adapters/tls/openssl.certificate-issuer.js';
import { DEFAULT_PLATFORM_CONFIG } from '../../src/index.js';
import { errorOf } from '../helpers/caller-errors.js';
import { FakeRegistry, FakeRemoteEngines, FakeSwarm, RecordingServerEvents } from '../helpers/cluster-fakes.js';
import { createHarness, type Harness } from '../helpers/harness.js';

/**
 * The servers router (/api/servers, /api/servers/join, /api/registry) through createCaller on SQLite
 * in memory, over fakes of the swarm, the nodes' engines and the registry (the real thing:
 * test/e2e/cluster-servers.test.ts): validation at the door (unknown fields, bad availability and
 * labels, a malformed token), the error codes of the use cases' refusals, and who may call what.
 */
let h: Harness;
let swarm: FakeSwarm;

beforeEach(async () => {
  swarm = new FakeSwarm();
  h = await createHarness({
    config: { cluster: { ...DEFAULT_PLATFORM_CONFIG.cluster, advertiseAddress: '10.9.0.1' } },
    tls: { issuer: new OpensslCertificateIssuer() },
    cluster: {
      runtime: swarm,
      remoteEngines: new FakeRemoteEngines(),
      registry: new FakeRegistry(),
      events: new RecordingServerEvents(),
      joinUrl: () => 'http://10.9.0.1:3000',
      joinScript: async () => '#!/usr/bin/env bash\necho join\n',
    },
  });
});
afterEach(async () => {
  await h.close();
});

function csrBase64(): string {
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
      path.join(dir, 'k'),
      '-out',
      path.join(dir, 'r'),
      '-subj',
      '/CN=n',
    ]);
    return readFileSync(path.join(dir, 'r')).toString('base64');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('/api/servers', () => {
  it('lists the host, adds a server with its join command, shows and relabels it, removes it', async () => {
    const api = h.caller();
    const { servers } = await api.servers.list();
    expect(servers).toEqual([expect.objectContaining({ local: true, role: 'manager', state: 'ready' })]);
    const { server, join } = await api.servers.create({ name: 'worker-1', labels: { zone: 'a' } });
    expect(server).toMatchObject({ name: 'worker-1', state: 'unknown', labels: { zone: 'a' } });
    expect(join.command).toContain(join.token);
    expect((await api.servers.get({ id: server.id })).server.id).toBe(server.id);
    expect((await api.servers.update({ id: server.id, labels: { zone: 'b' } })).server.labels).toEqual({ zone: 'b' });
    expect(JSON.stringify(await api.servers.list())).not.toContain(join.token);
    expect(await api.servers.delete({ id: server.id })).toEqual({ ok: true });
    expect((await errorOf(api.servers.get({ id: server.id }))).code).toBe('NOT_FOUND');
  });

  it('answers 400 naming the field for unknown fields, bad names, labels and availability', async () => {
    const api = h.caller();
    const local = (await api.servers.list()).servers[0]!;
    expect(await errorOf(api.servers.create({ name: 'x', colour: 'red' } as never))).toMatchObject({
      code: 'BAD_REQUEST',
      field: 'colour',
    });
    expect(await errorOf(api.servers.create({ name: '' }))).toMatchObject({ code: 'BAD_REQUEST', field: 'name' });
    expect(await errorOf(api.servers.update({ id: local.id, availability: 'sideways' as never }))).toMatchObject({
      code: 'BAD_REQUEST',
      field: 'availability',
    });
    const badLabel = await errorOf(api.servers.update({ id: local.id, labels: { 'slipway.server': 'x' } }));
    expect(badLabel.code).toBe('BAD_REQUEST');
    // The only server cannot be drained, nor removed (the last manager).
    expect((await errorOf(api.servers.update({ id: local.id, availability: 'drain' }))).code).toBe('CONFLICT');
    expect((await errorOf(api.servers.delete({ id: local.id }))).code).toBe('CONFLICT');
  });

  it('admits the install’s admins only: read keys read, project-scoped keys get 403', async () => {
    const api = h.caller();
    const { project } = await api.projects.create({ name: 'P' });
    const read = h.caller(await h.mintKey('read'));
    expect((await read.servers.list()).servers).toHaveLength(1);
    expect((await read.servers.registry()).registry.kind).toBe('platform');
    expect((await errorOf(read.servers.create({ name: 'w' }))).code).toBe('FORBIDDEN');
    expect((await errorOf(read.servers.setRegistry({ kind: 'platform' }))).code).toBe('FORBIDDEN');
    const scoped = h.caller(await h.mintKey('write', [project.id]));
    expect((await errorOf(scoped.servers.list())).code).toBe('FORBIDDEN');
    expect((await errorOf(scoped.servers.registry())).code).toBe('FORBIDDEN');
    expect((await errorOf(scoped.servers.create({ name: 'w' }))).code).toBe('FORBIDDEN');
    const anonymous = h.caller('');
    expect((await errorOf(anonymous.servers.list())).code).toBe('UNAUTHORIZED');
  });
});

describe('/api/services/{serviceId}/move', () => {
  it('holds a move to its rules: a database, a server that exists, is ready and active, and is not the one holding it', async () => {
    const api = h.caller();
    // The host's row, as the platform's start makes it.
    const local = (await api.servers.list()).servers[0]!;
    const { project } = await api.projects.create({ name: 'P' });
    const { service: db } = await api.services.create({
      projectId: project.id,
      name: 'orders',
      repoUrl: 'database',
      repoFullName: 'database:postgres',
    });
    const { service: web } = await api.services.create({ projectId: project.id, name: 'web', repoFullName: 'acme/web' });
    expect(db.server).toEqual({ id: local.id, name: local.name, state: 'ready' });

    expect(await errorOf(api.services.move({ serviceId: db.id, serverId: local.id, colour: 'red' } as never))).toMatchObject({
      code: 'BAD_REQUEST',
      field: 'colour',
    });
    expect(await errorOf(api.services.move({ serviceId: db.id } as never))).toMatchObject({ code: 'BAD_REQUEST', field: 'serverId' });
    const stateless = await errorOf(api.services.move({ serviceId: web.id, serverId: local.id }));
    expect(stateless).toMatchObject({ code: 'UNPROCESSABLE_CONTENT', error: 'not_supported' });
    expect(stateless.body.details).toMatchObject({ reason: 'not_stateful' });
    expect(await errorOf(api.services.move({ serviceId: db.id, serverId: 'nosuchserver' }))).toMatchObject({
      code: 'BAD_REQUEST',
      field: 'serverId',
    });
    const same = await errorOf(api.services.move({ serviceId: db.id, serverId: local.id }));
    expect(same).toMatchObject({ code: 'CONFLICT', message: expect.stringContaining(local.name) });
    expect(same.body.details).toMatchObject({ reason: 'same_server' });

    const { server: pending, join } = await api.servers.create({ name: 'worker-1' });
    const notJoined = await errorOf(api.services.move({ serviceId: db.id, serverId: pending.id }));
    expect(notJoined).toMatchObject({ code: 'CONFLICT', message: expect.stringContaining('has not joined') });
    expect(notJoined.body.details).toMatchObject({ reason: 'server_not_ready', state: 'unknown' });

    await h.caller('').servers.join({ token: join.token, csrBase64: csrBase64(), address: '10.9.0.11', hostname: 'w1' });
    swarm.join('node-w1', 'w1', '10.9.0.11');
    await h.services.serverMonitor!.tick();
    await api.servers.update({ id: pending.id, availability: 'drain' });
    expect((await errorOf(api.services.move({ serviceId: db.id, serverId: pending.id }))).body.details).toMatchObject({
      reason: 'server_not_ready',
      availability: 'drain',
    });
    await api.servers.update({ id: pending.id, availability: 'active' });
    // Everything holds: this harness gives the platform no way to remove a moved database's earlier volume, so it moves nothing and says so (the move itself: test/unit/database-move.test.ts, test/e2e/cluster-databases.test.ts).
    const unbuilt = await errorOf(api.services.move({ serviceId: db.id, serverId: pending.id }));
    expect(unbuilt).toMatchObject({ code: 'UNPROCESSABLE_CONTENT', error: 'not_supported' });
    expect(unbuilt.body.details).toMatchObject({ reason: 'move_not_built' });

    // A database whose server is down cannot be copied from it.
    await h.database.store.servers.place(db.id, pending.id, new Date());
    swarm.setState('node-w1', 'down');
    await h.services.serverMonitor!.tick();
    expect((await api.services.overview({ serviceId: db.id })).service).toMatchObject({
      status: 'unavailable',
      server: { id: pending.id, state: 'down' },
    });
    expect((await errorOf(api.services.move({ serviceId: db.id, serverId: local.id }))).body.details).toMatchObject({
      reason: 'holder_down',
    });
    // Nor is the server removed while it holds it.
    expect((await errorOf(api.servers.delete({ id: pending.id }))).body.details).toMatchObject({
      reason: 'holds_volumes',
      databases: [{ id: db.id, name: 'orders' }],
    });
  });

  it("is for callers that may change the database: read keys and other projects' keys are refused", async () => {
    const api = h.caller();
    const { project } = await api.projects.create({ name: 'P' });
    const { project: other } = await api.projects.create({ name: 'Q' });
    const { service: db } = await api.services.create({
      projectId: project.id,
      name: 'orders',
      repoUrl: 'database',
      repoFullName: 'database:postgres',
    });
    const local = (await api.servers.list()).servers[0]!;
    const read = h.caller(await h.mintKey('read'));
    expect((await errorOf(read.services.move({ serviceId: db.id, serverId: local.id }))).code).toBe('FORBIDDEN');
    const elsewhere = h.caller(await h.mintKey('write', [other.id]));
    expect((await errorOf(elsewhere.services.move({ serviceId: db.id, serverId: local.id }))).code).toBe('NOT_FOUND');
    expect((await errorOf(h.caller('').services.move({ serviceId: db.id, serverId: local.id }))).code).toBe('UNAUTHORIZED');
  });
});

describe('/api/servers/join', () => {
  it('exchanges a token once, for anyone holding it; a wrong, used or malformed one is refused', async () => {
    const { join, server } = await h.caller().servers.create({ name: 'worker-1' });
    const anonymous = h.caller('');
    const request = { token: join.token, csrBase64: csrBase64(), address: '10.9.0.11', hostname: 'w1' };
    const bundle = await anonymous.servers.join(request);
    expect(bundle).toMatchObject({ serverId: server.id, name: 'worker-1', managerAddress: '10.9.0.1:2377', engineTlsPort: 2376 });
    expect(await errorOf(anonymous.servers.join(request))).toMatchObject({ code: 'UNAUTHORIZED', error: 'invalid_credentials' });
    expect((await errorOf(anonymous.servers.join({ ...request, token: `slwj_${'x'.repeat(43)}` }))).code).toBe('UNAUTHORIZED');
    expect(await errorOf(anonymous.servers.join({ ...request, address: 'not an address' }))).toMatchObject({ code: 'BAD_REQUEST' });
    expect(await errorOf(anonymous.servers.join({ ...request, extra: 1 } as never))).toMatchObject({ code: 'BAD_REQUEST', field: 'extra' });
    expect((await anonymous.servers.joinScript()).body).toContain('#!/usr/bin/env bash');
  });
});

describe('/api/registry', () => {
  it('needs the external registry’s address and credentials, and never shows its password', async () => {
    const api = h.caller();
    expect(await errorOf(api.servers.setRegistry({ kind: 'external', address: 'registry.example.com' }))).toMatchObject({
      code: 'BAD_REQUEST',
    });
    expect(await errorOf(api.servers.setRegistry({ kind: 'platform', password: 'x' }))).toMatchObject({
      code: 'BAD_REQUEST',
      field: 'password',
    });
    const { registry } = await api.servers.setRegistry({
      kind: 'external',
      address: 'registry.example.com',
      username: 'u',
      password: 'hunter2-secret',
    });
    expect(registry).toMatchObject({ kind: 'external', address: 'registry.example.com', username: 'u' });
    expect(JSON.stringify(await api.servers.registry())).not.toContain('hunter2-secret');
    expect(await h.database.store.settings.get('cluster_registry')).not.toContain('hunter2-secret');
  });
});

describe('server events', () => {
  it('publishes a server going down and coming back as server.down and server.up, with its id, name and address', async () => {
    // The composition root's own ServerEvents (the publisher), not the recording fake of the other tests.
    const own = new FakeSwarm();
    const events = await createHarness({
      config: { cluster: { ...DEFAULT_PLATFORM_CONFIG.cluster, advertiseAddress: '10.9.0.1' } },
      tls: { issuer: new OpensslCertificateIssuer() },
      cluster: {
        runtime: own,
        remoteEngines: new FakeRemoteEngines(),
        registry: new FakeRegistry(),
        joinUrl: () => 'http://10.9.0.1:3000',
        joinScript: async () => '#!/usr/bin/env bash\necho join\n',
      },
    });
    try {
      const { join, server } = await events.caller().servers.create({ name: 'worker-1' });
      await events.caller('').servers.join({ token: join.token, csrBase64: csrBase64(), address: '10.9.0.11', hostname: 'w1' });
      own.join('node-w1', 'w1', '10.9.0.11');
      await events.services.serverMonitor!.tick();
      own.setState('node-w1', 'down');
      await events.services.serverMonitor!.tick();
      own.setState('node-w1', 'ready');
      await events.services.serverMonitor!.tick();
      const published = (await events.database.store.events.after(0, 100)).filter((e) => e.type.startsWith('server.'));
      expect(published.map((e) => [e.type, e.data])).toEqual([
        ['server.down', { serverId: server.id, name: 'worker-1', address: '10.9.0.11' }],
        ['server.up', { serverId: server.id, name: 'worker-1', address: '10.9.0.11' }],
      ]);
    } finally {
      await events.close();
    }
  });
});
