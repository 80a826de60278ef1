import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_PLATFORM_CONFIG } from '../../src/platform/platform-config.js';
import type { Actor } from '../../src/index.js';
import { containerLimitsOf, DEFAULT_SCALE } from '../../src/domain/service-scale.js';
import { scaleAfter } from '../../src/projects/service-scale-rules.js';
import { createRuntimeHarness, until, type RuntimeHarness } from '../helpers/runtime-fakes.js';

const admin: Actor = { keyId: 'admin', access: 'write', projectIds: null };
const DOCKERFILE_APP = {
  Dockerfile: 'FROM node:22-bookworm-slim\nWORKDIR /app\nCOPY . .\nCMD ["node", "server.js"]\n',
  'server.js': "require('http').createServer((req, res) => res.end('hi')).listen(process.env.PORT);\n",
};

async function rejection(promise: Promise<unknown>): Promise<Error & { code?: string; details?: Record<string, unknown> }> {
  try {
    await promise;
  } catch (error) {
    return error as Error & { code?: string; details?: Record<string, unknown> };
  }
  throw new Error('expected a rejection');
}

describe('replicas and resources: the rules', () => {
  const config = DEFAULT_PLATFORM_CONFIG;

  it('keeps one replica; refuses more than SERVICE_MAX_REPLICAS, several, and 0 until the replica rollout, naming replicas', async () => {
    expect(await scaleAfter(DEFAULT_SCALE, {}, { config, stateful: false })).toEqual(DEFAULT_SCALE);
    const over = await rejection(scaleAfter(DEFAULT_SCALE, { replicas: 11 }, { config, stateful: false }));
    expect(over).toMatchObject({ code: 'validation_error', details: { field: 'replicas' } });
    expect(over.message).toContain('At most 10');
    expect(await rejection(scaleAfter(DEFAULT_SCALE, { replicas: 3 }, { config, stateful: false }))).toMatchObject({
      details: { field: 'replicas' },
    });
    const database = await rejection(scaleAfter(DEFAULT_SCALE, { replicas: 2 }, { config, stateful: true }));
    expect(database.message).toContain('exactly one replica');
  });

  it('keeps CPUs to the thousandth, merges a partial change (null clears), and holds a reservation within its limit', async () => {
    const scale = await scaleAfter(DEFAULT_SCALE, { resources: { cpuLimit: 0.5, memoryLimitMb: 256 } }, { config, stateful: false });
    expect(scale).toMatchObject({ cpuLimitMillis: 500, memoryLimitMb: 256, cpuReservationMillis: null, memoryReservationMb: null });
    const cleared = await scaleAfter(scale, { resources: { cpuLimit: null } }, { config, stateful: false });
    expect(cleared).toMatchObject({ cpuLimitMillis: null, memoryLimitMb: 256 });
    const above = await rejection(scaleAfter(scale, { resources: { memoryReservationMb: 512 } }, { config, stateful: false }));
    expect(above).toMatchObject({ details: { field: 'resources.memoryReservationMb' } });
    const cpuAbove = await rejection(scaleAfter(scale, { resources: { cpuReservation: 1 } }, { config, stateful: false }));
    expect(cpuAbove).toMatchObject({ details: { field: 'resources.cpuReservation' } });
  });

  it('refuses at once a reservation no server can hold, naming what it needs and what the largest free server has', async () => {
    const capacity = async () => [
      { name: 'a', freeCpus: 2, freeMemoryMb: 2048 },
      { name: 'b', freeCpus: 1, freeMemoryMb: 1024 },
    ];
    const memory = await rejection(
      scaleAfter(DEFAULT_SCALE, { resources: { memoryReservationMb: 4096 } }, { config, stateful: false, capacity }),
    );
    expect(memory.message).toBe('No server can hold this service: it needs 4096 MB, the largest free server has 2048 MB');
    const cpu = await rejection(scaleAfter(DEFAULT_SCALE, { resources: { cpuReservation: 3 } }, { config, stateful: false, capacity }));
    expect(cpu.message).toBe('No server can hold this service: it needs 3 CPUs, the largest free server has 2');
    // What fits is kept; what the service reserves already counts as free for it.
    const fits = await scaleAfter(DEFAULT_SCALE, { resources: { memoryReservationMb: 2048 } }, { config, stateful: false, capacity });
    const grown = await scaleAfter(fits, { resources: { memoryReservationMb: 4000 } }, { config, stateful: false, capacity });
    expect(grown.memoryReservationMb).toBe(4000);
  });

  it("gives the engine Docker's units: NanoCPUs, bytes, and a CPU weight for a reservation", () => {
    expect(containerLimitsOf(DEFAULT_SCALE)).toEqual({});
    expect(
      containerLimitsOf({ replicas: 1, cpuLimitMillis: 1500, memoryLimitMb: 64, cpuReservationMillis: 250, memoryReservationMb: 32 }),
    ).toEqual({ nanoCpus: 1_500_000_000, memoryBytes: 64 * 1024 * 1024, memoryReservationBytes: 32 * 1024 * 1024, cpuShares: 256 });
  });
});

describe('replicas and resources on a service', () => {
  let h: RuntimeHarness;
  afterEach(async () => {
    await h.close();
  });

  it('are shown, changed by PATCH, and given to the next deployment\u2019s container', async () => {
    h = await createRuntimeHarness({});
    await h.runner.start();
    const project = await h.services.projects.create(admin, { name: 'Shop', description: '' });
    h.git.repos.set('https://git.test/acme/web.git', { files: DOCKERFILE_APP, commitSha: 'a'.repeat(40) });
    const created = await h.services.serviceCreation.create(admin, project.id, {
      name: 'web',
      repoFullName: 'acme/web',
      resources: { cpuLimit: 0.25, memoryLimitMb: 128 },
    });
    expect(created.replicas).toBe(1);
    expect(created.resources).toEqual({ cpuLimit: 0.25, memoryLimitMb: 128, cpuReservation: null, memoryReservationMb: null });
    const changed = await h.services.serviceChanges.update(admin, created.id, { resources: { memoryReservationMb: 64 } });
    expect(changed.resources).toEqual({ cpuLimit: 0.25, memoryLimitMb: 128, cpuReservation: null, memoryReservationMb: 64 });
    expect(await rejection(h.services.serviceChanges.update(admin, created.id, { replicas: 2 }))).toMatchObject({
      details: { field: 'replicas' },
    });

    const deployment = await h.services.deployments.create(admin, created.id);
    await until(async () => {
      const d = await h.database.store.deployments.get(deployment.id);
      return d && ['succeeded', 'failed'].includes(d.status) ? d : null;
    });
    const run = h.engine.runs.find((r) => r.labels['slipway.service'] === created.id);
    expect(run?.limits).toEqual({ nanoCpus: 250_000_000, memoryBytes: 128 * 1024 * 1024, memoryReservationBytes: 64 * 1024 * 1024 });
  });
});
