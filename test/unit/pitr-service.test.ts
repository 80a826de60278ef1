import { afterEach, describe, expect, it } from 'vitest';
import { ConflictError, OutsideWindowError, ValidationError } from '../../src/domain/errors.js';
import { DEFAULT_PLATFORM_CONFIG } from '../../src/platform/platform-config.js';
import { PitrService, type PitrRestoreRunner } from '../../src/pitr/pitr.service.js';
import type { WalSegmentRecord } from '../../src/pitr/pitr.records.js';
import { SecretBox } from '../../src/platform/secret-box.js';
import { LogBus } from '../../src/platform/log-bus.js';
import { databaseService } from '../helpers/backups.js';
import { createHarness, type Harness } from '../helpers/harness.js';
import { admin } from '../helpers/unit-harness.js';
import { baseBackupRecord } from '../helpers/wal-spool.js';

/**
 * PitrService, the use case of point-in-time recovery, with fakes of its ports (the restore runner, the
 * object store's settings, the clock) over the store on SQLite in memory: the window and lag it shows,
 * the 422 that gives the window, a restore queued from the right base backup, replace's confirm (restores a
 * restart cut off are the runner's: test/unit/pitr-restore-runner.test.ts).
 */

const T0 = Date.parse('2026-11-28T10:00:00Z');
const at = (s: number) => new Date(T0 + s * 1000);
const S = (n: number) => `0000000100000000000000${n.toString(16).toUpperCase().padStart(2, '0')}`;

let h: Harness;
afterEach(async () => h?.close());

function setUp(nowSecond: number, opts: { objectStore?: boolean } = {}) {
  let now = at(nowSecond);
  const woken: string[] = [];
  const runner: PitrRestoreRunner = {
    wake: () => woken.push('wake'),
    createTarget: async (_actor, original) => ({ ...original, id: `${original.id}-pitr`, name: `${original.name}-pitr` }),
  };
  const deps = {
    store: h.database.store,
    secrets: SecretBox.fromSecret('test-secret-key-test-secret-key-0123'),
    clock: { now: () => now },
    logBus: new LogBus(),
    config: DEFAULT_PLATFORM_CONFIG,
    events: { publish: async () => undefined, publishQuietly: async () => undefined } as never,
  };
  const destinations = {
    configOf: async () => (opts.objectStore ? ({ endpoint: 'http://s3', bucket: 'b' } as never) : null),
  };
  const service = new PitrService(deps, destinations, runner, { lagLimitSeconds: 60 });
  return { service, woken, setNow: (s: number) => (now = at(s)) };
}

function seg(serviceId: string, name: string, completedSecond: number): WalSegmentRecord {
  return {
    id: `${name.slice(-12)}${serviceId.slice(0, 20)}`,
    serviceId,
    name,
    timeline: 1,
    walBytes: 16 * 1024 * 1024,
    sizeBytes: 2000,
    checksum: 'sha256:00',
    completedAt: at(completedSecond),
    storedAt: at(completedSecond + 1),
    localPath: `/w/${name}`,
    objectKey: null,
    storageId: null,
  };
}

describe('PitrService', () => {
  it('shows nothing reachable before an archive, then the window, the last base backup and the lag', async () => {
    h = await createHarness();
    const { service: db } = await databaseService(h);
    const { service: pitr, setNow } = setUp(100);
    const empty = await pitr.get(admin, db.id);
    expect(empty).toMatchObject({ enabled: false, storage: 'disk', retentionDays: 7, window: null, lastBaseBackup: null });
    expect(empty.lag).toMatchObject({ pendingSegments: 0, lagging: false });

    await pitr.put(admin, db.id, { enabled: true, retentionDays: 14 });
    await h.database.store.backups.insert(baseBackupRecord(db.id, 'BASE1', S(2), at(10)));
    for (const [n, s] of [
      [2, 12],
      [3, 40],
      [4, 70],
    ] as const)
      await h.database.store.pitr.insertSegment(seg(db.id, S(n), s));
    // WAL waiting in the spool for 90 s, past the 60 s limit: lagging.
    const settings = (await h.database.store.pitr.getSettings(db.id))!;
    await h.database.store.pitr.putSettings({ ...settings, pendingSegments: 2, pendingBytes: 32 << 20, oldestPendingAt: at(10) });
    setNow(100);
    const view = await pitr.get(admin, db.id);
    expect(view).toMatchObject({
      enabled: true,
      retentionDays: 14,
      window: { earliest: at(10).toISOString(), latest: at(70).toISOString() },
      lastBaseBackup: { id: 'BASE1', kind: 'base' },
      archivedSegments: 3,
      archivedBytes: 6000,
    });
    expect(view.lag).toMatchObject({ pendingSegments: 2, seconds: 90, lagging: true });
  });

  it('refuses a second outside the window with 422 giving it; queues one inside from the base that holds it', async () => {
    h = await createHarness();
    const { service: db } = await databaseService(h);
    const { service: pitr, woken } = setUp(200);
    await pitr.put(admin, db.id, { enabled: true });
    await h.database.store.backups.insert(baseBackupRecord(db.id, 'BASE1', S(2), at(10)));
    await h.database.store.backups.insert(baseBackupRecord(db.id, 'BASE2', S(4), at(60)));
    for (const [n, s] of [
      [2, 12],
      [3, 40],
      [4, 70],
      [5, 120],
    ] as const)
      await h.database.store.pitr.insertSegment(seg(db.id, S(n), s));

    for (const second of [5, 121, 300]) {
      const refused = await pitr.restore(admin, db.id, { at: at(second).toISOString() }).catch((e: unknown) => e);
      expect(refused, String(second)).toBeInstanceOf(OutsideWindowError);
      expect((refused as OutsideWindowError).details.window).toEqual({ earliest: at(10).toISOString(), latest: at(120).toISOString() });
    }
    expect(woken).toEqual([]);

    const early = await pitr.restore(admin, db.id, { at: at(30).toISOString() });
    expect(early).toMatchObject({
      status: 'queued',
      baseBackupId: 'BASE1',
      replace: false,
      targetServiceId: `${db.id}-pitr`,
      at: at(30).toISOString(),
    });
    const late = await pitr.restore(admin, db.id, { at: at(100).toISOString() });
    expect(late.baseBackupId).toBe('BASE2');
    expect(woken).toEqual(['wake', 'wake']);
    expect((await h.database.store.pitr.restoresOf(db.id)).map((r) => r.id).sort()).toEqual([early.id, late.id].sort());
  });

  it('refuses replace without confirm naming the original; queues it on the original itself, one at a time', async () => {
    h = await createHarness();
    const { service: db } = await databaseService(h);
    const { service: pitr, woken } = setUp(200);
    await pitr.put(admin, db.id, { enabled: true });
    await h.database.store.backups.insert(baseBackupRecord(db.id, 'BASE1', S(2), at(10)));
    await h.database.store.pitr.insertSegment(seg(db.id, S(2), 50));
    const wrong = await pitr.restore(admin, db.id, { at: at(30).toISOString(), replace: true, confirm: 'other' }).catch((e: unknown) => e);
    expect(wrong).toBeInstanceOf(ValidationError);
    expect((wrong as ValidationError).details.field).toBe('confirm');
    expect(await h.database.store.pitr.restoresOf(db.id)).toEqual([]);
    // Confirmed: queued with the original as its target (no new service), nothing swapped yet.
    const replaced = await pitr.restore(admin, db.id, { at: at(30).toISOString(), replace: true, confirm: db.name });
    expect(replaced).toMatchObject({ status: 'queued', replace: true, targetServiceId: db.id, baseBackupId: 'BASE1' });
    expect(woken).toEqual(['wake']);
    expect((await h.database.store.pitr.getSettings(db.id))?.dataVolume).toBeNull();
    // A second in-place restore while the first has not ended: 409 naming replace.
    const second = await pitr.restore(admin, db.id, { at: at(40).toISOString(), replace: true, confirm: db.name }).catch((e: unknown) => e);
    expect(second).toBeInstanceOf(ConflictError);
    expect((second as ConflictError).details.field).toBe('replace');
    // Beside the original, restores still queue meanwhile.
    expect((await pitr.restore(admin, db.id, { at: at(40).toISOString() })).replace).toBe(false);
  });

  it('sends WAL to the install object store only when one is set, or to a storage instance the caller sees', async () => {
    h = await createHarness();
    const { service: db } = await databaseService(h);
    const without = setUp(100).service;
    const refused = await without.put(admin, db.id, { enabled: true, storage: 'object' }).catch((e: unknown) => e);
    expect((refused as ValidationError).details.field).toBe('storage');
    const unknown = await without.put(admin, db.id, { enabled: true, storage: 'x'.repeat(16) }).catch((e: unknown) => e);
    expect((unknown as ValidationError).details.field).toBe('storage');
    const withStore = setUp(100, { objectStore: true }).service;
    expect(await withStore.put(admin, db.id, { enabled: true, storage: 'object' })).toMatchObject({ enabled: true, storage: 'object' });
  });
});
