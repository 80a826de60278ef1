import { afterEach, describe, expect, it } from 'vitest';
import { databaseService, errorOf } from '../helpers/backups.js';
import { createHarness, type Harness } from '../helpers/harness.js';

/** The point-in-time recovery routes through createCaller, on SQLite in memory: validation, delegation, the error map. */

let h: Harness;
afterEach(async () => h?.close());

describe('pitr router', () => {
  it('GET shows the defaults and nothing reachable; PUT keeps what it was given', async () => {
    h = await createHarness();
    const { service } = await databaseService(h);
    const api = h.caller();
    const { pitr } = await api.pitr.get({ serviceId: service.id });
    expect(pitr).toMatchObject({
      serviceId: service.id,
      enabled: false,
      storage: 'disk',
      retentionDays: 7,
      window: null,
      lastBaseBackup: null,
    });
    expect(pitr.lag).toEqual({ pendingSegments: 0, pendingBytes: 0, seconds: 0, lagging: false, lastShippedAt: null, lastError: null });
    // This install runs no WAL archiving yet: turning it on is refused, nothing is stored.
    const on = await errorOf(api.pitr.put({ serviceId: service.id, enabled: true, storage: 'disk', retentionDays: 30 }));
    expect(on).toMatchObject({ error: 'not_supported', details: { field: 'enabled' } });
    expect(on.message).toMatch(/runs no container engine to archive WAL/);
    const put = await api.pitr.put({ serviceId: service.id, enabled: false, storage: 'disk', retentionDays: 30 });
    expect(put.pitr).toMatchObject({ enabled: false, storage: 'disk', retentionDays: 30, baseSchedule: '30 0 * * *' });
    expect(put.pitr.nextBaseAt).toBeNull();
    expect((await api.pitr.get({ serviceId: service.id })).pitr).toEqual(put.pitr);
    // Off again: the retention is kept.
    expect((await api.pitr.put({ serviceId: service.id, enabled: false })).pitr).toMatchObject({ enabled: false, retentionDays: 30 });
  });

  it('answers 400 naming the field for retentionDays 0 or over 3650, an at that is not ISO, and unknown fields', async () => {
    h = await createHarness();
    const { service } = await databaseService(h);
    const api = h.caller();
    for (const retentionDays of [0, 3651, 1.5, -1]) {
      const refused = await errorOf(api.pitr.put({ serviceId: service.id, enabled: true, retentionDays }));
      expect(refused.error, String(retentionDays)).toBe('validation_error');
      expect(refused.details.field).toBe('retentionDays');
    }
    for (const bad of ['yesterday', '2026-11-28', '2026-11-28T10:00:00', '', 'T10:00:00Z']) {
      const refused = await errorOf(api.pitr.restore({ serviceId: service.id, at: bad }));
      expect(refused.error, bad).toBe('validation_error');
      expect(refused.details.field).toBe('at');
    }
    const noConfirm = await errorOf(api.pitr.restore({ serviceId: service.id, at: '2026-11-28T10:00:00Z', replace: true }));
    expect(noConfirm.details.field).toBe('confirm');
    const unknown = await errorOf(api.pitr.put({ serviceId: service.id, enabled: true, window: 3 } as never));
    expect(unknown.error).toBe('validation_error');
    expect(unknown.details.field).toBe('window');
    const storage = await errorOf(api.pitr.put({ serviceId: service.id, enabled: true, storage: 'object' }));
    expect(storage).toMatchObject({ error: 'validation_error', details: { field: 'storage' } });
  });

  it('answers 422 outside_window with the window for a second it cannot reach (the future, no archive yet)', async () => {
    h = await createHarness();
    const { service } = await databaseService(h);
    const api = h.caller();
    for (const at of ['2026-01-01T00:00:00Z', new Date(Date.now() + 3_600_000).toISOString()]) {
      const refused = await errorOf(api.pitr.restore({ serviceId: service.id, at }));
      expect(refused.error).toBe('outside_window');
      expect(refused.details).toEqual({ at, window: null });
    }
  });

  it('is for PostgreSQL and TimescaleDB (422 for another engine, 404 for no database) and writes need a write key', async () => {
    h = await createHarness();
    const { service } = await databaseService(h);
    const { service: redis } = await databaseService(h, 'redis');
    const api = h.caller();
    expect((await errorOf(api.pitr.get({ serviceId: redis.id }))).error).toBe('not_supported');
    expect((await errorOf(api.pitr.get({ serviceId: 'x'.repeat(16) }))).error).toBe('not_found');
    const reader = h.caller(await h.mintKey('read'));
    expect((await reader.pitr.get({ serviceId: service.id })).pitr.enabled).toBe(false);
    expect((await errorOf(reader.pitr.put({ serviceId: service.id, enabled: true }))).error).toBe('forbidden');
    expect((await errorOf(reader.pitr.restore({ serviceId: service.id, at: '2026-11-28T10:00:00Z' }))).error).toBe('forbidden');
    const stranger = h.caller(await h.mintKey('write', ['someotherproject']));
    expect((await errorOf(stranger.pitr.get({ serviceId: service.id }))).error).toBe('not_found');
  });

  it("answers a restore's log to a read key, and 404 for a restore of another database or none", async () => {
    h = await createHarness();
    const { service } = await databaseService(h);
    const { service: other } = await databaseService(h);
    const restore = {
      id: 'RESTORE00001',
      serviceId: service.id,
      targetServiceId: service.id,
      at: new Date('2026-11-28T10:00:00Z'),
      replace: true,
      status: 'failed' as const,
      previousVolume: null,
      baseBackupId: null,
      reachedAt: null,
      error: 'x',
      abortRequested: false,
      createdAt: new Date('2026-11-28T10:01:00Z'),
      startedAt: null,
      finishedAt: null,
    };
    await h.database.store.pitr.insertRestore(restore);
    const createdAt = new Date('2026-11-28T10:01:01Z');
    await h.database.store.pitr.appendLogs(restore.id, [
      { line: 'Restoring in place', stream: 'stdout', createdAt },
      { line: 'Failed: x', stream: 'stderr', createdAt },
    ]);
    const reader = h.caller(await h.mintKey('read'));
    const { logs } = await reader.pitr.logs({ serviceId: service.id, restoreId: restore.id });
    expect(logs.map((l) => [l.line, l.stream, l.restoreId])).toEqual([
      ['Restoring in place', 'stdout', restore.id],
      ['Failed: x', 'stderr', restore.id],
    ]);
    for (const [serviceId, restoreId] of [
      [other.id, restore.id],
      [service.id, 'NOSUCHRESTORE'],
    ] as const)
      expect(await errorOf(reader.pitr.logs({ serviceId, restoreId }))).toMatchObject({
        error: 'not_found',
        details: { resource: 'Point-in-time restore' },
      });
    // Its lines go with the service.
    await h.caller().services.delete({ serviceId: service.id });
    expect(await h.database.store.pitr.logs(restore.id, 10)).toEqual([]);
  });
});

describe('pitr rows of a deleted service', () => {
  it('go with it', async () => {
    h = await createHarness();
    const { service } = await databaseService(h);
    const api = h.caller();
    await api.pitr.put({ serviceId: service.id, enabled: false });
    expect(await h.database.store.pitr.getSettings(service.id)).not.toBeNull();
    await api.services.delete({ serviceId: service.id });
    expect(await h.database.store.pitr.getSettings(service.id)).toBeNull();
  });
});
