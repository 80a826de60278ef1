import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ControlPlaneRecord } from '../../src/jobs/control-plane.records.js';
import { traceReads, type ReadTrace } from '../../src/platform/read-trace.js';
import { createHarness, type Harness } from '../helpers/harness.js';
import { createScratchDatabase } from '../helpers/postgres.js';

/*
 * Every statement's tables (src/persistence/statement-tables.ts), on both databases: a read made in a traced call
 * leaves a check of its tables' versions, and every write moves its table's version once it ran, whichever
 * repository sent it (the control planes' heartbeat never said it wrote: nothing cached read it before).
 */

const current = (trace: ReadTrace) => trace.checks.every((check) => check());

describe.each(['sqlite', 'postgresql'] as const)('statement tables on %s', (kind) => {
  let h: Harness | undefined;
  let drop: (() => Promise<void>) | undefined;

  afterEach(async () => {
    vi.restoreAllMocks();
    await h?.close();
    await drop?.();
    h = undefined;
    drop = undefined;
  });

  async function setUp() {
    if (kind === 'postgresql') {
      const scratch = await createScratchDatabase();
      drop = scratch.drop;
      h = await createHarness({ databaseUrl: scratch.url });
    } else {
      h = await createHarness();
    }
    const store = h.database.store;
    const plane: ControlPlaneRecord = {
      id: `plane-${randomBytes(4).toString('hex')}`,
      hostname: 'test',
      pid: 1,
      startedAt: new Date(),
      heartbeatAt: new Date(),
    };
    await store.controlPlanes.register(plane);
    return { store, plane, harness: h };
  }

  it('checks a read until a statement writes its table, and not after writes of other tables', async () => {
    const { store, plane, harness } = await setUp();
    const { trace, result } = traceReads(() => store.controlPlanes.list());
    expect((await result).map((p) => p.id)).toContain(plane.id);
    expect(trace.untracked).toBe(false);
    expect(trace.checks).toHaveLength(1);
    await harness.mintKey('read');
    expect(current(trace)).toBe(true);
    await store.controlPlanes.beat(plane.id, new Date());
    expect(current(trace)).toBe(false);
  });

  it('makes a read stale that saw a transaction which then rolled back', async () => {
    const { store, plane } = await setUp();
    let seen: ReadTrace | undefined;
    await expect(
      store.transaction(async (tx) => {
        await tx.controlPlanes.beat(plane.id, new Date(Date.now() + 60_000));
        // Inside the transaction, which sees its own write before it is undone.
        const { trace, result } = traceReads(() => tx.controlPlanes.list());
        await result;
        seen = trace;
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(seen!.untracked).toBe(false);
    expect(current(seen!)).toBe(false);
  });

  it('checks a read for 2 s at most: another process may write the same tables', async () => {
    const { store } = await setUp();
    const { trace, result } = traceReads(() => store.controlPlanes.list());
    await result;
    expect(current(trace)).toBe(true);
    const now = Date.now();
    vi.spyOn(Date, 'now').mockReturnValue(now + 2_500);
    expect(current(trace)).toBe(false);
  });

  it('cannot check a statement that names no table', async () => {
    const { store } = await setUp();
    const { trace, result } = traceReads(() => store.ping());
    await result;
    expect(trace.untracked).toBe(true);
  });
});
