import type { AbstractSqlDriver, EntityManager } from '@mikro-orm/sql';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ServerRecord } from '../../src/cluster/server.records.js';
import { Migration20261129073000 } from '../../src/persistence/migrations/sqlite/Migration20261129073000.js';
import { createHarness, type Harness } from '../helpers/harness.js';
import { admin, database } from '../helpers/unit-harness.js';

/*
 * Databases that existed before servers held volumes (issue 31): the migration records each on the
 * host's server, leaves stateless services and databases already placed elsewhere alone, and the host's
 * first start does the same for an install whose server row did not exist when it ran.
 */
let h: Harness;
beforeEach(async () => {
  h = await createHarness();
});
afterEach(async () => {
  await h.close();
});

function worker(now: Date): ServerRecord {
  return {
    id: 'workerserver0001',
    name: 'worker-1',
    role: 'worker',
    local: false,
    address: '10.9.0.11',
    hostname: 'w1',
    swarmNodeId: 'node-w1',
    labels: {},
    availability: 'active',
    state: 'ready',
    stateChangedAt: now,
    engineVersion: null,
    joinTokenHash: null,
    joinExpiresAt: null,
    joinUsedAt: now,
    joinedAt: now,
    createdAt: now,
    updatedAt: now,
  };
}

describe('where existing databases are recorded', () => {
  it('the migration places every unplaced database on the host, and nothing else', async () => {
    const local = await h.services.servers.ensureLocal();
    const shop = await h.services.projects.create(admin, { name: 'Shop', description: '' });
    const orders = await h.services.serviceCreation.create(admin, shop.id, database('orders', 'postgres'));
    const cache = await h.services.serviceCreation.create(admin, shop.id, database('cache', 'redis'));
    const web = await h.services.serviceCreation.create(admin, shop.id, { name: 'web', repoFullName: 'acme/web' });
    const store = h.database.store;
    await store.servers.insert(worker(new Date()));
    await store.servers.place(cache.id, 'workerserver0001', new Date());
    expect(await store.servers.placementOf(orders.id)).toBeNull();

    // The migration's own statements, on this database (the store's session is the test's way in).
    const em = (store as unknown as { session: { em: EntityManager } }).session.em;
    const migration = new Migration20261129073000(em.getDriver() as AbstractSqlDriver, em.config);
    await migration.up();
    for (const sql of migration.getQueries()) await em.getConnection().execute(String(sql));

    expect((await store.servers.placementOf(orders.id))?.serverId).toBe(local.id);
    expect((await store.servers.placementOf(cache.id))?.serverId).toBe('workerserver0001');
    expect(await store.servers.placementOf(web.id)).toBeNull();
  });

  it('the host\u2019s first start places the databases made before its row existed', async () => {
    const shop = await h.services.projects.create(admin, { name: 'Shop', description: '' });
    const orders = await h.services.serviceCreation.create(admin, shop.id, database('orders', 'postgres'));
    expect(orders.server).toBeNull();
    const local = await h.services.servers.ensureLocal();
    expect((await h.database.store.servers.placementOf(orders.id))?.serverId).toBe(local.id);
    expect((await h.services.serviceReader.get(admin, orders.id)).server).toMatchObject({ id: local.id });
  });
});
