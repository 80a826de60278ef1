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
