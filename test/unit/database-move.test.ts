import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DatabaseMoveJob, type MovedContainer, type MoveRuntime } from '../../src/cluster/database-move.js';
import type { ServerRecord } from '../../src/cluster/server.records.js';
import { ServiceMoves } from '../../src/cluster/service-move.js';
import type { ServiceRecord } from '../../src/domain/types.js';
import type { ServiceDeps } from '../../src/platform/deps.js';
import { createHarness, type Harness } from '../helpers/harness.js';
import { admin, database, rejection } from '../helpers/unit-harness.js';

/*
 * The move of a database between servers (src/cluster/database-move.ts) over a fake of its runtime:
 * the order of the steps, the new server recorded only after the switch, the downtime in the log, and a
 * failure before the switch leaving the database where it was.
 */
let h: Harness;
let now: Date;
let steps: string[];
let lines: string[];
let failAt: string | null;
let local: ServerRecord;
let worker: ServerRecord;
let orders: ServiceRecord;

class FakeMoveRuntime implements MoveRuntime {
  private step(name: string): void {
    steps.push(name);
    if (failAt === name) throw new Error(`${name} went wrong`);
  }
  async prepare(_s: ServiceRecord, to: ServerRecord): Promise<MovedContainer> {
    this.step('prepare');
    return { serverId: to.id, containerId: 'new-container' };
  }
  async quiesce(): Promise<void> {
    this.step('quiesce');
  }
  async copy(_s: ServiceRecord, _f: ServerRecord, _t: MovedContainer, _signal: AbortSignal, log: (line: string) => void) {
    this.step('copy');
    log('pg_restore: done');
    // The dump and the restore take 3 s of the downtime.
    now = new Date(now.getTime() + 3_000);
    return { bytes: 2048 };
  }
  async switchTo(): Promise<void> {
    this.step('switch');
    // What the store holds while the routes switch: still the old server.
    steps.push(`placed:${(await h.database.store.servers.placementOf(orders.id))?.serverId ?? 'none'}`);
  }
  async resume(): Promise<void> {
    this.step('resume');
  }
  async discard(): Promise<void> {
    this.step('discard');
  }
  async retire(): Promise<void> {
    this.step('retire');
  }
}

/** What the move reads and writes: the store and the clock. */
function deps(): ServiceDeps {
  return { store: h.database.store, clock: { now: () => new Date(now) } } as ServiceDeps;
}

function job(): DatabaseMoveJob {
  return new DatabaseMoveJob(deps(), new FakeMoveRuntime(), () => ({ write: (line) => lines.push(line) }));
}

beforeEach(async () => {
  now = new Date('2026-11-29T08:00:00.000Z');
  h = await createHarness({ clock: { now: () => new Date(now) } });
  steps = [];
  lines = [];
  failAt = null;
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
  it('starts the new one first, stops the old, copies, switches, records the new server, then removes the old; logs the downtime', async () => {
    await job().run(orders, local, worker, AbortSignal.timeout(5_000));
    expect(steps).toEqual(['prepare', 'quiesce', 'copy', 'switch', 'placed:none', 'retire']);
    expect((await h.database.store.servers.placementOf(orders.id))?.serverId).toBe(worker.id);
    expect((await h.services.serviceReader.get(admin, orders.id)).server).toMatchObject({ id: worker.id, name: 'worker-1' });
    expect(lines).toContain('pg_restore: done');
    expect(lines).toContain(
      `Downtime: 3.0 s (stopped on ${local.name} at 2026-11-29T08:00:00.000Z, served from worker-1 at 2026-11-29T08:00:03.000Z)`,
    );
    expect(lines.at(-1)).toBe('orders now lives on worker-1');
  });

  it('a copy that fails starts the old one again and removes the new: the database stays where it was', async () => {
    failAt = 'copy';
    expect(await rejection(job().run(orders, local, worker, AbortSignal.timeout(5_000)))).toMatchObject({ message: 'copy went wrong' });
    expect(steps).toEqual(['prepare', 'quiesce', 'copy', 'discard', 'resume']);
    expect(await h.database.store.servers.placementOf(orders.id)).toBeNull();
    expect(lines).toContain('The move failed: copy went wrong');
    expect(lines.at(-1)).toMatch(/^orders serves from .+ again \(down 0\.0 s\)$/);
  });

  it('a target that does not start leaves the old one untouched', async () => {
    failAt = 'prepare';
    await rejection(job().run(orders, local, worker, AbortSignal.timeout(5_000)));
    expect(steps).toEqual(['prepare']);
    expect(lines.at(-1)).toBe(`orders stays on ${local.name}; it was not stopped`);
  });

  it('through the request: accepted at once with where from and to; a second move while one runs is a 409', async () => {
    let release: () => void = () => {};
    failAt = null;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    // The first move waits in its first step, so it is under way when the second is asked for.
    const slow = new FakeMoveRuntime();
    slow.prepare = async (_s, to) => {
      steps.push('prepare');
      await held;
      return { serverId: to.id, containerId: 'new-container' };
    };
    const running = new ServiceMoves(deps(), new DatabaseMoveJob(deps(), slow, () => ({ write: (line) => lines.push(line) })));
    expect(await running.move(admin, orders.id, { serverId: worker.id })).toEqual({
      accepted: true,
      serviceId: orders.id,
      from: { id: local.id, name: local.name },
      to: { id: worker.id, name: 'worker-1' },
    });
    expect(await rejection(running.move(admin, orders.id, { serverId: worker.id }))).toMatchObject({
      code: 'conflict',
      details: { reason: 'moving' },
    });
    release();
    await expect.poll(async () => (await h.database.store.servers.placementOf(orders.id))?.serverId).toBe(worker.id);
  });
});
