import { afterEach, describe, expect, it } from 'vitest';
import { walObjectKey } from '../../src/pitr/wal-destinations.js';
import { databaseService, FakeDump, MemoryFiles, MemoryObjectStore } from '../helpers/backups.js';
import { createHarness, type Harness } from '../helpers/harness.js';
import { FakeSpool, walSegment } from '../helpers/wal-spool.js';

/**
 * Point-in-time recovery's archiving through the composition root, on SQLite in memory, with fakes of
 * the container's spool (PostgreSQL's own archiving is test/integration/point-in-time-recovery.test.ts)
 * and of the disk and the object store: PUT turns it on, a pass queues the base backup (a backup of kind
 * `base` run by the backup jobs) and ships the spool; GET shows the window and the lag; an object store
 * that is down leaves the WAL in the spool, shown lagging with the reason, and the next pass ships it.
 */

const S = walSegment;

let h: Harness;
afterEach(async () => {
  await h?.services.backupRunner.stop();
  await h?.close();
});

async function rig() {
  const spool = new FakeSpool();
  const files = new MemoryFiles();
  const objects = new MemoryObjectStore();
  h = await createHarness({
    backups: { dump: new FakeDump(), files, objectStores: () => objects, locate: async () => ({ containerId: 'c0ffee' }), walSpool: spool },
  });
  h.services.backupRunner.start();
  await h.services.backupRunner.recover();
  const { service } = await databaseService(h);
  return { spool, files, objects, service, api: h.caller() };
}

async function baseSucceeded(serviceId: string) {
  for (let i = 0; i < 200; i++) {
    const [base] = await h.database.store.backups.listOf(serviceId, 'base');
    if (base && (base.status === 'succeeded' || base.status === 'failed')) return base;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('the base backup did not finish');
}

describe('pitr archiving', () => {
  it('ships the spool to disk, takes the base backup, and shows the window and the lag', async () => {
    const { spool, files, service, api } = await rig();
    const { pitr: on } = await api.pitr.put({ serviceId: service.id, enabled: true });
    expect(on).toMatchObject({ enabled: true, storage: 'disk', window: null });
    // Archiving not on in the server yet (deployed before): no base backup, the reason shown.
    spool.archiving = false;
    await h.services.pitrArchiver!.pass();
    expect(spool.bases).toBe(0);
    expect((await api.pitr.get({ serviceId: service.id })).pitr.lag.lastError).toMatch(/redeploy it/);
    spool.archiving = true;
    await h.services.pitrArchiver!.pass();
    const base = await baseSucceeded(service.id);
    expect(base).toMatchObject({ status: 'succeeded', kind: 'base', trigger: 'pitr', format: 'basebackup', walStart: S(3) });
    expect(files.files.get(base.localPath!)?.length).toBe(4096);
    // Its WAL arrives: the window opens.
    spool.add(3, new Date(base.finishedAt!.getTime() + 3_000));
    await h.services.pitrArchiver!.pass();
    const { pitr } = await api.pitr.get({ serviceId: service.id });
    expect(pitr.archivedSegments).toBe(1);
    expect(pitr.window).not.toBeNull();
    expect(pitr.lastBaseBackup?.id).toBe(base.id);
    expect(pitr.lag).toMatchObject({ pendingSegments: 0, lagging: false, lastError: null });
    expect(files.files.get(`/backups/${service.id}/wal/${S(3)}`)?.toString()).toBe(`wal ${S(3)}`);
    expect(spool.files.size).toBe(0);
    // A second pass before the slot takes no second base backup.
    await h.services.pitrArchiver!.pass();
    expect(spool.bases).toBe(1);
  });

  it('an object store that is down leaves the WAL in the spool, lagging with the reason; the next pass ships it all', async () => {
    const { spool, objects, service, api } = await rig();
    await api.settings.update({
      objectStore: {
        endpoint: 'http://127.0.0.1:9000',
        region: 'us-east-1',
        bucket: 'wal-archive',
        accessKeyId: 'AKIA',
        secretAccessKey: 'very-secret-key',
      },
    });
    await api.pitr.put({ serviceId: service.id, enabled: true, storage: 'object' });
    await h.services.pitrArchiver!.pass();
    const base = await baseSucceeded(service.id);
    expect(base).toMatchObject({ status: 'succeeded', storage: 'object' });
    objects.down = true;
    spool.add(3, new Date(base.finishedAt!.getTime() + 1_000));
    spool.add(4, new Date(base.finishedAt!.getTime() + 2_000));
    await h.services.pitrArchiver!.pass();
    const down = (await api.pitr.get({ serviceId: service.id })).pitr;
    expect(down.lag).toMatchObject({ pendingSegments: 2, lagging: true });
    expect(down.lag.lastError).toMatch(/ECONNREFUSED/);
    expect(JSON.stringify(down)).not.toContain('very-secret-key');
    expect(down.archivedSegments).toBe(0);
    expect(spool.files.size).toBe(2);
    objects.down = false;
    await h.services.pitrArchiver!.pass();
    const back = (await api.pitr.get({ serviceId: service.id })).pitr;
    expect(back.lag).toMatchObject({ pendingSegments: 0, lagging: false, lastError: null });
    expect(back.archivedSegments).toBe(2);
    expect(back.window).not.toBeNull();
    expect(objects.objects.get(walObjectKey(service.id, S(4)))?.toString()).toBe(`wal ${S(4)}`);
  });
});
