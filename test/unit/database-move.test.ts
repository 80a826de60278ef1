import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DeploymentDatabaseMover, type LeftVolumes, type MoveDeployments } from '../../src/cluster/database-move.js';
import type { ServerRecord } from '../../src/cluster/server.records.js';
import { ServiceMoves } from '../../src/cluster/service-move.js';
import type { DeploymentRecord, ServiceRecord } from '../../src/domain/types.js';
import type { DeploymentStatus } from '../../src/domain/deployment-state.js';
import type { ServiceDeps } from '../../src/platform/deps.js';
import { createHarness, type Harness } from '../helpers/harness.js';
import { admin, database, rejection } from '../helpers/unit-harness.js';

/*
 * The move of a database between servers (src/cluster/database-move.ts) over fakes of its deployments and of the
 * volumes it leaves: placed on the target before its deployment runs, the earlier volume removed once that
 * deployment succeeded, the placement put back when it fails, and the refusals.
 */
let h: Harness;
let now: Date;
let local: ServerRecord;
let worker: ServerRecord;
let orders: ServiceRecord;
/** The fake deployments: each one's status, as a test moves it. */
let deployments: Map<string, DeploymentRecord>;
let firstLines: string[];
let removed: Array<{ server: string; serviceId: string }>;
let live: boolean;
let placedAtDeploy: string | null | undefined;

const fakeDeployments: MoveDeployments = {
  async redeployLive(serviceId, firstLine) {
    if (!live) return null;
    placedAtDeploy = (await h.database.store.servers.placementOf(serviceId))?.serverId ?? null;
    const id = `move${deployments.size}`;
    const record = { id, serviceId, status: 'queued' } as DeploymentRecord;
    deployments.set(id, record);
    firstLines.push(typeof firstLine === 'string' ? firstLine : '');
    return record;
  },
};

const volumes: LeftVolumes = {
  async removeOn(server, serviceId) {
    removed.push({ server: server.name, serviceId });
    return [`slipway-${serviceId}-data`];
  },
};

function finish(id: string, status: DeploymentStatus): void {
  deployments.set(id, { ...deployments.get(id)!, status });
}

/** The real store for servers and placements; the fake deployments for what the move runs. */
function deps(): ServiceDeps {
  const store = h.database.store;
  const deploymentsView = {
    get: async (id: string) => deployments.get(id) ?? null,
    listOfServiceByStatus: async (serviceId: string, statuses: DeploymentStatus[]) =>
      [...deployments.values()].filter((d) => d.serviceId === serviceId && statuses.includes(d.status)),
  };
  return {
    store: new Proxy(store, { get: (target, key) => (key === 'deployments' ? deploymentsView : Reflect.get(target, key)) }),
    clock: { now: () => new Date(now) },
  } as unknown as ServiceDeps;
}

function mover(): DeploymentDatabaseMover {
  return new DeploymentDatabaseMover(deps(), fakeDeployments, volumes);
}

beforeEach(async () => {
  now = new Date('2026-11-29T08:00:00.000Z');
  h = await createHarness({ clock: { now: () => new Date(now) } });
  deployments = new Map();
  firstLines = [];
  removed = [];
  live = true;
  placedAtDeploy = undefined;
  local = await h.services.servers.ensureLocal();
  worker = await h.database.store.servers.insert({
    ...local,
    id: 'workerserver0001',
    name: 'worker-1',
    role: 'worker',
    local: false,
    address: '10.9.0.11',
    swarmNodeId: 'node-w1',
    state: 'ready',
    availability: 'active',
  });
  const shop = await h.services.projects.create(admin, { name: 'Shop', description: '' });
  const view = await h.services.serviceCreation.create(admin, shop.id, database('orders', 'postgres'));
  orders = (await h.database.store.projects.getService(view.id))!;
});
afterEach(async () => {
  await h.close();
});

describe('moving a database', () => {
  it('places it on the target, then deploys its live image there; once that succeeds the earlier volume goes', async () => {
    const moves = mover();
    const { deploymentId } = await moves.start(orders, local, worker);
    expect(placedAtDeploy).toBe(worker.id);
    expect(firstLines[0]).toMatch(new RegExp(`^Moving orders from ${local.name} to worker-1: `));
    expect(moves.busy(orders.id)).toBe(true);
    expect((await h.services.serviceReader.get(admin, orders.id)).server).toMatchObject({ id: worker.id, name: 'worker-1' });
    finish(deploymentId, 'succeeded');
    await expect.poll(() => removed, { timeout: 5_000 }).toEqual([{ server: local.name, serviceId: orders.id }]);
    await expect.poll(() => moves.busy(orders.id)).toBe(false);
    expect((await h.database.store.servers.placementOf(orders.id))?.serverId).toBe(worker.id);
  });

  it('a deployment that fails puts the placement back and removes nothing', async () => {
    const moves = mover();
    const { deploymentId } = await moves.start(orders, local, worker);
    finish(deploymentId, 'failed');
    await expect.poll(async () => (await h.database.store.servers.placementOf(orders.id))?.serverId, { timeout: 5_000 }).toBe(local.id);
    await expect.poll(() => moves.busy(orders.id)).toBe(false);
    expect(removed).toEqual([]);
  });

  it('refuses while a deployment of it is under way, and one never deployed (nothing placed either way)', async () => {
    deployments.set('busy', { id: 'busy', serviceId: orders.id, status: 'running' } as DeploymentRecord);
    expect(await rejection(mover().start(orders, local, worker))).toMatchObject({
      code: 'conflict',
      details: { reason: 'deploying', deploymentId: 'busy' },
    });
    expect(await h.database.store.servers.placementOf(orders.id)).toBeNull();
    deployments.clear();
    live = false;
    expect(await rejection(mover().start(orders, local, worker))).toMatchObject({ code: 'conflict', details: { reason: 'not_deployed' } });
    expect((await h.database.store.servers.placementOf(orders.id))?.serverId ?? local.id).toBe(local.id);
  });

  it('through the request: accepted at once with where from and to and its deployment; a second move while one runs is a 409', async () => {
    const running = new ServiceMoves(deps(), mover());
    const accepted = await running.move(admin, orders.id, { serverId: worker.id });
    expect(accepted).toEqual({
      accepted: true,
      serviceId: orders.id,
      from: { id: local.id, name: local.name },
      to: { id: worker.id, name: 'worker-1' },
      deploymentId: 'move0',
    });
    expect(await rejection(running.move(admin, orders.id, { serverId: local.id }))).toMatchObject({ code: 'conflict' });
    finish('move0', 'succeeded');
    await expect.poll(() => removed.length, { timeout: 5_000 }).toBe(1);
  });
});
