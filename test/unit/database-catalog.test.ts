import { afterEach, describe, expect, it } from 'vitest';
import type { Actor } from '../../src/index.js';
import { createRuntimeHarness, runnerSteps, type RuntimeHarness } from '../helpers/runtime-fakes.js';

/** Stopping and starting a database service (the general API's /api/databases/:id/stop|start) over fakes of the runtime. */
const admin: Actor = { keyId: 'admin', access: 'write', projectIds: null };

let h: RuntimeHarness;
const { finished, container, logs } = runnerSteps(() => h, admin, 5000);

afterEach(async () => {
  await h?.close();
});

async function deployedRedis() {
  h = await createRuntimeHarness();
  await h.runner.start();
  const p = await h.services.projects.create(admin, { name: 'Shop', description: '' });
  const db = await h.services.databaseCatalog.create(admin, p.id, { name: 'cache', engine: 'redis' });
  const d = await finished((await h.services.deployments.create(admin, db.id)).id);
  expect(d.status, (await logs(d.id)).join('\n')).toBe('succeeded');
  return { db, d, c: container(d.containerName) };
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return (error as { code: string }).code;
  }
  throw new Error('expected a rejection');
}

describe('database stop and start', () => {
  it('stop stops the container and keeps it and its volume; start runs the same container again', async () => {
    const { db, c } = await deployedRedis();
    const stopped = await h.services.databaseCatalog.stop(admin, db.id);
    expect(stopped).toMatchObject({ status: 'stopped', reachable: false });
    expect(c.running).toBe(false);
    expect(h.engine.byName(c.name)).toBeDefined();
    expect(h.engine.volumes.has(`slipway-${db.id}-data`)).toBe(true);
    expect(h.journal.entries).toContain(`engine.stopContainer ${c.name}`);
    // Stopping again changes nothing; admin calls refuse while it is stopped.
    expect((await h.services.databaseCatalog.stop(admin, db.id)).status).toBe('stopped');
    expect(await codeOf(h.services.databases.query(admin, db.id, 'PING'))).toBe('not_running');

    const started = await h.services.databaseCatalog.start(admin, db.id);
    expect(started.status).toBe('active');
    expect(c.running).toBe(true);
    expect(await h.services.deployments.list(admin, db.id)).toHaveLength(1);
  });

  it('start deploys again on the same volume when the stopped container is gone (a restart swept it)', async () => {
    const { db, c } = await deployedRedis();
    await h.services.databaseCatalog.stop(admin, db.id);
    await h.engine.stopAndRemove(c.id, 0);
    const started = await h.services.databaseCatalog.start(admin, db.id);
    expect(started.status).toBe('idle');
    const [latest] = await h.services.deployments.list(admin, db.id);
    const again = await finished(latest!.id);
    expect(again.status, (await logs(again.id)).join('\n')).toBe('succeeded');
    expect(container(again.containerName).volumes).toEqual([{ name: `slipway-${db.id}-data`, target: '/data' }]);
    expect((await h.services.databaseCatalog.get(admin, db.id)).status).toBe('active');
  });

  it('stop of a database that does not run is 409 not_running', async () => {
    h = await createRuntimeHarness();
    const p = await h.services.projects.create(admin, { name: 'Shop', description: '' });
    const db = await h.services.databaseCatalog.create(admin, p.id, { name: 'cache', engine: 'redis' });
    expect(await codeOf(h.services.databaseCatalog.stop(admin, db.id))).toBe('not_running');
    expect((await h.services.databaseCatalog.get(admin, db.id)).status).toBe('idle');
  });

  it('a failed stop restores the status', async () => {
    const { db, c } = await deployedRedis();
    h.engine.stopContainer = async () => {
      throw new Error('engine went away');
    };
    await expect(h.services.databaseCatalog.stop(admin, db.id)).rejects.toThrow('engine went away');
    expect((await h.services.databaseCatalog.get(admin, db.id)).status).toBe('active');
    expect(c.running).toBe(true);
  });
});
