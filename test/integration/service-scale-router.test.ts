import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../helpers/harness.js';

let h: Harness;
beforeEach(async () => {
  h = await createHarness();
});
afterEach(async () => {
  await h.close();
});

describe('changing a service’s resources', () => {
  it('changes only them: a container-image service stays one (its source is not rewritten)', async () => {
    const api = h.caller();
    const { project } = await api.projects.create({ name: 'Scale' });
    const { service } = await api.services.create({
      projectId: project.id,
      name: 'web',
      repoUrl: 'container-image',
      containerImage: 'busybox:latest',
      internalPort: 3000,
      resources: { cpuLimit: 0.5, memoryLimitMb: 64 },
    });
    const before = await h.database.store.projects.getService(service.id);
    const patched = (await api.services.update({ serviceId: service.id, resources: { memoryReservationMb: 32, cpuReservation: 0.25 } }))
      .service;
    expect(patched).toMatchObject({
      repoFullName: 'image:busybox:latest',
      repoUrl: 'container-image',
      containerImage: 'busybox:latest',
      resources: { cpuLimit: 0.5, memoryLimitMb: 64, cpuReservation: 0.25, memoryReservationMb: 32 },
    });
    const after = await h.database.store.projects.getService(service.id);
    expect(after?.source).toEqual(before?.source);
  });
});

describe('changing a service’s replicas', () => {
  it('takes 0 to SERVICE_MAX_REPLICAS (0: stopped and kept, no deployment), refuses the rest naming replicas; a database keeps one', async () => {
    const api = h.caller();
    const { project } = await api.projects.create({ name: 'Replicas' });
    const { service } = await api.services.create({
      projectId: project.id,
      name: 'web',
      repoUrl: 'container-image',
      containerImage: 'busybox:latest',
      internalPort: 3000,
      replicas: 3,
    });
    expect(service.replicas).toBe(3);
    const stopped = (await api.services.update({ serviceId: service.id, replicas: 0 })).service;
    expect(stopped).toMatchObject({ replicas: 0, status: 'stopped' });
    await expect(api.deployments.create({ serviceId: service.id })).rejects.toMatchObject({ code: 'CONFLICT' });
    // Never deployed: back to idle, not active.
    expect((await api.services.update({ serviceId: service.id, replicas: 2 })).service).toMatchObject({ replicas: 2, status: 'idle' });
    for (const replicas of [-1, 11, 1.5]) {
      const error = await api.services.update({ serviceId: service.id, replicas }).catch((e: unknown) => e);
      expect(error, String(replicas)).toMatchObject({ code: 'BAD_REQUEST' });
      expect(JSON.stringify(error), String(replicas)).toContain('replicas');
    }
    const { service: db } = await api.services.create({
      projectId: project.id,
      name: 'db',
      repoUrl: 'database',
      repoFullName: 'database:postgres',
      branch: 'main',
      internalPort: 5432,
    });
    const refused = await api.services.update({ serviceId: db.id, replicas: 2 }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 'BAD_REQUEST', cause: { details: { field: 'replicas' } } });
    expect((refused as Error).message).toContain('exactly one replica');
  });
});

describe('a service’s placement', () => {
  it('is taken on create and PATCH, shown, cleared with null; a label no server has is a 400 listing those that exist; not for databases', async () => {
    const api = h.caller();
    const now = new Date();
    await h.database.store.servers.insert({
      id: 'srv-placement-1',
      name: 'eu-1',
      role: 'worker',
      local: false,
      address: null,
      hostname: null,
      swarmNodeId: null,
      labels: { zone: 'eu', disk: 'ssd' },
      availability: 'active',
      state: 'unknown',
      stateChangedAt: now,
      engineVersion: null,
      joinTokenHash: null,
      joinExpiresAt: null,
      joinUsedAt: null,
      joinedAt: null,
      createdAt: now,
      updatedAt: now,
    } as never);
    const { project } = await api.projects.create({ name: 'Placement' });
    const { service } = await api.services.create({
      projectId: project.id,
      name: 'web',
      repoUrl: 'container-image',
      containerImage: 'busybox:latest',
      internalPort: 3000,
      placement: { must: { zone: 'eu' }, mustNot: { disk: 'hdd' } },
    });
    expect(service.placement).toEqual({ must: { zone: 'eu' }, mustNot: { disk: 'hdd' }, role: null });
    const patched = (await api.services.update({ serviceId: service.id, placement: { role: 'worker' } })).service;
    expect(patched.placement).toEqual({ must: {}, mustNot: {}, role: 'worker' });
    // Other changes keep it.
    expect((await api.services.update({ serviceId: service.id, replicas: 2 })).service.placement).toEqual(patched.placement);
    expect((await api.services.update({ serviceId: service.id, placement: null })).service.placement).toBeNull();

    const unknown = await api.services.update({ serviceId: service.id, placement: { must: { zone: 'ap' } } }).catch((e: unknown) => e);
    expect(unknown).toMatchObject({ code: 'BAD_REQUEST' });
    expect(String((unknown as Error).message)).toBe('No server has the label zone=ap; the labels that exist are: disk=ssd, zone=eu');
    for (const bad of [{ must: { zone: 'eu' }, colour: 'red' }, { role: 'boss' }, { must: { 'Zone!': 'eu' } }]) {
      const error = await api.services.update({ serviceId: service.id, placement: bad as never }).catch((e: unknown) => e);
      expect(error, JSON.stringify(bad)).toMatchObject({ code: 'BAD_REQUEST' });
      expect(JSON.stringify(error), JSON.stringify(bad)).toContain('placement');
    }
    expect((await h.database.store.projects.getService(service.id))?.placement).toBeNull();

    const { service: db } = await api.services.create({
      projectId: project.id,
      name: 'db',
      repoUrl: 'database',
      repoFullName: 'database:postgres',
    });
    const refused = await api.services.update({ serviceId: db.id, placement: { must: { zone: 'eu' } } }).catch((e: unknown) => e);
    expect(refused).toMatchObject({ code: 'BAD_REQUEST' });
    expect(String((refused as Error).message)).toMatch(/server that holds its volume/);
  });
});
