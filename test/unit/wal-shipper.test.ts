import type { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_PLATFORM_CONFIG } from '../../src/platform/platform-config.js';
import { LogBus } from '../../src/platform/log-bus.js';
import { SecretBox } from '../../src/platform/secret-box.js';
import { PitrArchiver } from '../../src/pitr/pitr-archiver.js';
import { PitrService } from '../../src/pitr/pitr.service.js';
import type { WalSpool } from '../../src/pitr/wal-archive.port.js';
import { type WalDestination, WalShipper } from '../../src/pitr/wal-shipper.js';
import { databaseService } from '../helpers/backups.js';
import { createHarness, type Harness } from '../helpers/harness.js';
import { FakeSpool, walSegment, baseBackupRecord } from '../helpers/wal-spool.js';
import { admin } from '../helpers/unit-harness.js';

/**
 * The WAL shipper over fakes of the spool and the destination: files stored oldest first, recorded and
 * removed from the spool; a destination that is down leaves them in the spool, shown lagging with the
 * reason, and the next pass ships them.
 */

const T0 = Date.parse('2026-11-28T10:00:00Z');
const at = (s: number) => new Date(T0 + s * 1000);
const S = walSegment;

class FakeDestination implements WalDestination {
  down = false;
  stored: string[] = [];
  removed: string[] = [];
  async remove(stored: { localPath: string | null }) {
    if (this.down) throw new Error('connect ECONNREFUSED 127.0.0.1:9000');
    this.removed.push(stored.localPath!);
  }
  async store(_s: string, name: string, bytes: Readable) {
    for await (const _ of bytes);
    if (this.down) throw new Error('connect ECONNREFUSED 127.0.0.1:9000');
    this.stored.push(name);
    return { localPath: `/wal/${name}.gz`, objectKey: null, storageId: null, sizeBytes: 100, checksum: 'sha256:00' };
  }
}

let h: Harness;
afterEach(async () => h?.close());

async function rig() {
  h = await createHarness();
  const { service: db } = await databaseService(h);
  let now = at(0);
  const deps = {
    store: h.database.store,
    secrets: SecretBox.fromSecret('test-secret-key-test-secret-key-0123'),
    clock: { now: () => now },
    logBus: new LogBus(),
    config: DEFAULT_PLATFORM_CONFIG,
    events: {} as never,
  };
  const spool = new FakeSpool();
  const destination = new FakeDestination();
  const shipper = new WalShipper(
    deps,
    spool as unknown as WalSpool,
    async () => destination,
    async () => 'ctr-1',
  );
  // A restore runner stands in (never called): settings can be turned on only where restores run.
  const pitr = new PitrService(deps, { configOf: async () => null }, {} as never, { lagLimitSeconds: 60 });
  await pitr.put(admin, db.id, { enabled: true });
  for (const n of [1, 2, 3]) spool.files.set(S(n), { name: S(n), bytes: 16 << 20, completedAt: at(n * 10) });
  const settings = async () => (await h.database.store.pitr.getSettings(db.id))!;
  return { db, spool, destination, shipper, pitr, settings, setNow: (s: number) => (now = at(s)) };
}

describe('WalShipper', () => {
  it('stores each spooled file oldest first, records it in the archive and empties the spool', async () => {
    const r = await rig();
    r.setNow(40);
    expect(await r.shipper.ship(await r.settings(), AbortSignal.timeout(5_000))).toEqual({ shipped: 3, waiting: 0, error: null });
    expect(r.destination.stored).toEqual([S(1), S(2), S(3)]);
    expect(r.spool.files.size).toBe(0);
    expect((await h.database.store.pitr.segments(r.db.id)).map((s) => [s.name, s.completedAt.toISOString()])).toEqual([
      [S(1), at(10).toISOString()],
      [S(2), at(20).toISOString()],
      [S(3), at(30).toISOString()],
    ]);
    expect((await r.pitr.get(admin, r.db.id)).lag).toMatchObject({ pendingSegments: 0, lagging: false, lastError: null });
  });

  it('keeps the WAL in the spool while the destination is down, shown lagging with the reason; ships it once back', async () => {
    const r = await rig();
    r.destination.down = true;
    r.setNow(200);
    const down = await r.shipper.ship(await r.settings(), AbortSignal.timeout(5_000));
    expect(down).toMatchObject({ shipped: 0, waiting: 3 });
    expect(r.spool.files.size).toBe(3);
    const lagging = (await r.pitr.get(admin, r.db.id)).lag;
    expect(lagging).toMatchObject({ pendingSegments: 3, pendingBytes: 3 * (16 << 20), seconds: 190, lagging: true });
    expect(lagging.lastError).toMatch(/ECONNREFUSED/);
    expect(await h.database.store.pitr.segments(r.db.id)).toEqual([]);

    r.destination.down = false;
    r.setNow(210);
    expect(await r.shipper.ship(await r.settings(), AbortSignal.timeout(5_000))).toEqual({ shipped: 3, waiting: 0, error: null });
    expect((await r.pitr.get(admin, r.db.id)).lag).toMatchObject({ pendingSegments: 0, seconds: 0, lagging: false, lastError: null });
    expect(await h.database.store.pitr.segments(r.db.id)).toHaveLength(3);
  });

  it('takes a file shipped before (its removal from the spool cut off) as shipped', async () => {
    const r = await rig();
    await r.shipper.ship(await r.settings(), AbortSignal.timeout(5_000));
    r.spool.files.set(S(3), { name: S(3), bytes: 16 << 20, completedAt: at(30) });
    expect(await r.shipper.ship(await r.settings(), AbortSignal.timeout(5_000))).toEqual({ shipped: 1, waiting: 0, error: null });
    expect(await h.database.store.pitr.segments(r.db.id)).toHaveLength(3);
  });
});

describe('the WAL archive pruned to its retention', () => {
  const DAY = 86_400;

  it('removes what is older than retentionDays but what the window\u2019s first second needs, and keeps a file the destination cannot remove', async () => {
    const r = await rig();
    const store = h.database.store;
    // Three days of archive, a base a day, then a retention of one day.
    r.setNow(10);
    await r.shipper.ship(await r.settings(), AbortSignal.timeout(5_000));
    for (const [n, second] of [
      [4, DAY],
      [5, DAY + 10],
      [6, 2 * DAY],
      [7, 2 * DAY + 10],
    ] as const) {
      r.spool.files.set(S(n), { name: S(n), bytes: 16 << 20, completedAt: at(second) });
      r.setNow(second + 1);
      await r.shipper.ship(await r.settings(), AbortSignal.timeout(5_000));
    }
    for (const b of [
      baseBackupRecord(r.db.id, 'b1', S(1), at(5)),
      baseBackupRecord(r.db.id, 'b2', S(4), at(DAY + 5)),
      baseBackupRecord(r.db.id, 'b3', S(6), at(2 * DAY + 5)),
    ])
      await store.backups.insert(b);
    await store.pitr.putSettings({ ...(await r.settings()), retentionDays: 1 });
    const bases: string[] = [];
    const archiverAt = (second: number) =>
      new PitrArchiver(
        { store, clock: { now: () => at(second) } } as never,
        {
          spool: r.spool as unknown as WalSpool,
          destinationOf: async () => r.destination,
          locate: async () => null,
          envOf: async () => ({}),
          removeBase: async (backup) => {
            bases.push(backup.id);
            await store.backups.delete(backup.id);
          },
        },
        {} as never,
      );
    const archiver = archiverAt(2 * DAY + 100);
    // The destination is down: nothing goes, nothing is forgotten.
    r.destination.down = true;
    expect(await archiver.pruneIfDue(await r.settings(), AbortSignal.timeout(5_000))).toEqual({ bases: 1, segments: 0 });
    expect((await store.pitr.segments(r.db.id)).map((s) => s.name)).toEqual([S(1), S(2), S(3), S(4), S(5), S(6), S(7)]);
    // Once pruned, not again for a while; a new archiver (a restart) prunes at once.
    r.destination.down = false;
    expect(await archiver.pruneIfDue(await r.settings(), AbortSignal.timeout(5_000))).toEqual({ bases: 0, segments: 0 });
    const again = archiverAt(2 * DAY + 200);
    expect(await again.pruneIfDue(await r.settings(), AbortSignal.timeout(5_000))).toEqual({ bases: 0, segments: 3 });
    // b2 (the newest base at or before the cutoff) and every segment from its start stay.
    expect(bases).toEqual(['b1']);
    expect(r.destination.removed).toEqual([S(1), S(2), S(3)].map((n) => `/wal/${n}.gz`));
    expect((await store.pitr.segments(r.db.id)).map((s) => s.name)).toEqual([S(4), S(5), S(6), S(7)]);
    expect((await store.backups.listOf(r.db.id, 'base')).map((b) => b.id).sort()).toEqual(['b2', 'b3']);
  });
});
