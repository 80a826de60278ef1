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
