import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { databaseService, errorOf, FakeDump, MemoryFiles, MemoryObjectStore } from '../helpers/backups.js';
import { createHarness, type Harness } from '../helpers/harness.js';

/**
 * The general API's backup configurations (`/api/backups`) through createCaller, on SQLite in memory,
 * with fakes of the dump and the disk; the scheduler's own tests are test/unit/backup-scheduler.test.ts,
 * and test/e2e/backup-schedules.test.ts runs them against a real PostgreSQL service.
 */

let h: Harness;
let files: MemoryFiles;
let dump: FakeDump;
let objects: MemoryObjectStore;

beforeEach(async () => {
  files = new MemoryFiles();
  dump = new FakeDump();
  objects = new MemoryObjectStore();
  h = await createHarness({ backups: { dump, files, objectStores: () => objects, locate: async () => ({ containerId: 'c0ffee' }) } });
  h.services.backupRunner.start();
  await h.services.backupRunner.recover();
});
afterEach(async () => {
  await h.services.backupRunner.stop();
  await h.close();
});

describe('backup configurations', () => {
  it('creates, lists, reads and deletes a configuration; its backups stay', async () => {
    const { project, service } = await databaseService(h);
    const api = h.caller().backupConfigurations;
    const { configuration } = await api.create({
      serviceId: service.id,
      schedule: ' 0 3 * * * ',
      storage: 'disk',
      retention: { count: 3, maxAgeDays: 30 },
    });
    expect(configuration).toMatchObject({
      serviceId: service.id,
      projectId: project.id,
      schedule: '0 3 * * *',
      storage: 'disk',
      retention: { count: 3, maxAgeDays: 30 },
      managed: null,
      lastRunAt: null,
      lastError: null,
    });
    // The first slot after now, 03:00 UTC.
    expect(configuration.nextRunAt).toMatch(/T03:00:00\.000Z$/);
    expect(Date.parse(configuration.nextRunAt) - Date.now()).toBeLessThanOrEqual(86_400_000);
    expect((await api.get({ configurationId: configuration.id })).configuration).toEqual(configuration);
    expect((await api.list()).configurations).toEqual([configuration]);
    expect((await api.list({ serviceId: service.id })).configurations).toEqual([configuration]);

    const { backup } = await api.trigger({ configurationId: configuration.id });
    expect(await api.delete({ configurationId: configuration.id })).toEqual({ ok: true });
    expect(await errorOf(api.get({ configurationId: configuration.id }))).toMatchObject({ error: 'not_found' });
    expect((await h.caller().backups.list({ serviceId: service.id })).backups.map((b) => b.id)).toEqual([backup.id]);
  });

  it('keeps 7 backups when the retention names neither a count nor an age, and writes to disk by default', async () => {
    const { service } = await databaseService(h);
    const { configuration } = await h.caller().backupConfigurations.create({ serviceId: service.id, schedule: '@daily' });
    expect(configuration).toMatchObject({ schedule: '@daily', storage: 'disk', retention: { count: 7, maxAgeDays: null } });
  });

  it('triggers a backup now through BackupService: running at once, then succeeded, listed in its records', async () => {
    const { service } = await databaseService(h);
    const api = h.caller().backupConfigurations;
    const { configuration } = await api.create({ serviceId: service.id, schedule: '0 3 * * *', storage: 'disk' });
    const { backup } = await api.trigger({ configurationId: configuration.id });
    expect(backup).toMatchObject({ serviceId: service.id, status: 'running', trigger: 'manual', storage: 'disk', finishedAt: null });
    const second = (await api.trigger({ configurationId: configuration.id })).backup;
    for (let i = 0; i < 200; i++) {
      const { records } = await api.records({ configurationId: configuration.id });
      if (records.every((r) => r.status !== 'running')) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    const { records } = await api.records({ configurationId: configuration.id });
    expect(records.map((r) => [r.id, r.status])).toEqual([
      [second.id, 'succeeded'],
      [backup.id, 'succeeded'],
    ]);
    expect(files.files.has(records[0]!.localPath!)).toBe(true);
    expect((await api.records({ configurationId: configuration.id, limit: 1 })).records.map((r) => r.id)).toEqual([second.id]);
    // The detailed API's own backups are no configuration's records.
    await h.caller().backups.create({ serviceId: service.id, storage: 'disk' });
    expect((await api.records({ configurationId: configuration.id })).records).toHaveLength(2);
    expect((await api.get({ configurationId: configuration.id })).configuration.lastRunAt).toBe(second.createdAt);
    for (const limit of [0, 501])
      expect(await errorOf(api.records({ configurationId: configuration.id, limit }))).toMatchObject({
        error: 'validation_error',
        details: { field: 'limit' },
      });
  });

  it('writes to disk and the object store when its destination says so, and its retention removes from both', async () => {
    await h.caller().settings.update({
      objectStore: {
        endpoint: 'http://127.0.0.1:9',
        region: 'us-east-1',
        bucket: 'backups',
        accessKeyId: 'AKIDEXAMPLE',
        secretAccessKey: 'secret-key-example',
        forcePathStyle: true,
      },
    });
    const { service } = await databaseService(h);
    const api = h.caller().backupConfigurations;
    const { configuration } = await api.create({
      serviceId: service.id,
      schedule: '0 3 * * *',
      storage: 'disk+object',
      retention: { count: 1 },
    });
    const settled = async () => {
      for (let i = 0; i < 200; i++) {
        const { records } = await api.records({ configurationId: configuration.id });
        if (records.every((r) => r.status !== 'running')) return records;
        await new Promise((r) => setTimeout(r, 20));
      }
      throw new Error('backups still running');
    };
    const first = (await api.trigger({ configurationId: configuration.id })).backup;
    const [done] = await settled();
    expect(done).toMatchObject({ id: first.id, status: 'succeeded', storage: 'disk+object' });
    expect(files.files.has(done!.localPath!)).toBe(true);
    expect(objects.objects.has(done!.objectKey!)).toBe(true);
    const second = (await api.trigger({ configurationId: configuration.id })).backup;
    await settled();
    // The retention pass keeps the newest one, and removes the other from both places.
    await h.services.backupScheduler.tick();
    const { records } = await api.records({ configurationId: configuration.id });
    expect(records.map((r) => r.id)).toEqual([second.id]);
    expect(files.files.has(done!.localPath!)).toBe(false);
    expect(objects.objects.has(done!.objectKey!)).toBe(false);
    expect(objects.objects.has(records[0]!.objectKey!)).toBe(true);
  });

  it('refuses a bad schedule with a 400 on `schedule` saying what is wrong, and one that fires more often than every 5 minutes', async () => {
    const { service } = await databaseService(h);
    const api = h.caller().backupConfigurations;
    for (const [schedule, message] of [
      ['0 25 * * *', /The hour field "25": 25 is out of range 0-23/],
      ['0 3 * *', /5 fields .* has 4/],
      ['0 0 30 2 *', /never fires/],
      ['*/2 * * * *', /fires 2 minutes apart at its most frequent; backups may be at most every 5 minutes/],
      ['', /empty/],
    ] as const) {
      const error = await errorOf(api.create({ serviceId: service.id, schedule, storage: 'disk' }));
      expect(error, schedule).toMatchObject({ error: 'validation_error', details: { field: 'schedule' } });
      expect(error.message, schedule).toMatch(message);
    }
    expect(await errorOf(api.create({ serviceId: service.id, schedule: '0 3 * * *', colour: 'red' } as never))).toMatchObject({
      error: 'validation_error',
      details: { field: 'colour' },
    });
    for (const retention of [{ count: 0 }, { maxAgeDays: 3651 }, { count: 1.5 }])
      expect(await errorOf(api.create({ serviceId: service.id, schedule: '0 3 * * *', retention } as never))).toMatchObject({
        error: 'validation_error',
      });
    // `object` needs an object store set.
    expect(await errorOf(api.create({ serviceId: service.id, schedule: '0 3 * * *', storage: 'object' }))).toMatchObject({
      error: 'validation_error',
      details: { field: 'storage' },
    });
    expect((await api.list()).configurations).toEqual([]);
  });

  it('takes database services only, of engines the platform backs up, and at most 10 per database', async () => {
    const api = h.caller();
    const { project } = await api.projects.create({ name: 'Web' });
    const { service: web } = await api.services.create({ projectId: project.id, name: 'web', repoFullName: 'acme/web' });
    expect(await errorOf(api.backupConfigurations.create({ serviceId: web.id, schedule: '0 3 * * *' }))).toMatchObject({
      error: 'not_found',
    });
    // Every engine has its dump tool; one the tool cannot back up is refused.
    dump.unsupported.add('redis');
    const { service: redis } = await databaseService(h, 'redis');
    expect(await errorOf(api.backupConfigurations.create({ serviceId: redis.id, schedule: '0 3 * * *' }))).toMatchObject({
      error: 'not_supported',
    });
    const { service } = await databaseService(h);
    for (let i = 0; i < 10; i++) await api.backupConfigurations.create({ serviceId: service.id, schedule: `${i} 3 * * *` });
    const error = await errorOf(api.backupConfigurations.create({ serviceId: service.id, schedule: '30 3 * * *' }));
    expect(error).toMatchObject({ error: 'validation_error', details: { field: 'serviceId' } });
    expect(error.message).toMatch(/at most 10 backup configurations/);
  });

  it('shows the daily/weekly/monthly switches as managed configurations, editable only through the settings', async () => {
    const { service } = await databaseService(h);
    const api = h.caller();
    expect((await api.backupConfigurations.list({ serviceId: service.id })).configurations).toEqual([]);
    await api.backups.updateSettings({ serviceId: service.id, automaticEnabled: true, keepDaily: 3 });
    const managed = (await api.backupConfigurations.list({ serviceId: service.id })).configurations;
    expect(managed.map((c) => [c.managed, c.schedule, c.retention.count, c.storage])).toEqual([
      ['daily', '0 0 * * *', 3, 'disk'],
      ['weekly', '0 0 * * 1', 4, 'disk'],
      ['monthly', '0 0 1 * *', 12, 'disk'],
    ]);
    // The period under way is due at once (its start), as automatic backups always were.
    const daily = managed[0]!;
    expect(daily.nextRunAt).toBe(`${new Date().toISOString().slice(0, 10)}T00:00:00.000Z`);

    const refused = await errorOf(api.backupConfigurations.delete({ configurationId: daily.id }));
    expect(refused).toMatchObject({ error: 'conflict', details: { managed: 'daily' } });
    expect(refused.message).toMatch(/dailyEnabled/);

    // A trigger of a managed configuration is a backup of its period, and counts as the period's.
    const { backup } = await api.backupConfigurations.trigger({ configurationId: daily.id });
    expect(backup.trigger).toBe('daily');
    expect((await api.backupConfigurations.records({ configurationId: daily.id })).records.map((r) => r.id)).toEqual([backup.id]);

    await api.backups.updateSettings({ serviceId: service.id, dailyEnabled: false, keepWeekly: 9 });
    expect(
      (await api.backupConfigurations.list({ serviceId: service.id })).configurations.map((c) => [c.managed, c.retention.count]),
    ).toEqual([
      ['weekly', 9],
      ['monthly', 12],
    ]);
    await api.backups.updateSettings({ serviceId: service.id, automaticEnabled: false });
    expect((await api.backupConfigurations.list({ serviceId: service.id })).configurations).toEqual([]);
  });

  it('reads for read keys, writes for write keys, and hides other projects as unknown ids', async () => {
    const { project, service } = await databaseService(h);
    const { service: theirs } = await databaseService(h);
    const admin = h.caller().backupConfigurations;
    const { configuration } = await admin.create({ serviceId: service.id, schedule: '0 3 * * *' });
    const other = (await admin.create({ serviceId: theirs.id, schedule: '0 4 * * *' })).configuration;

    const reader = h.caller(await h.mintKey('read')).backupConfigurations;
    expect((await reader.get({ configurationId: configuration.id })).configuration.id).toBe(configuration.id);
    expect((await reader.records({ configurationId: configuration.id })).records).toEqual([]);
    for (const call of [
      reader.create({ serviceId: service.id, schedule: '0 5 * * *' }),
      reader.delete({ configurationId: configuration.id }),
      reader.trigger({ configurationId: configuration.id }),
    ])
      expect(await errorOf(call)).toMatchObject({ error: 'forbidden' });

    const scoped = h.caller(await h.mintKey('write', [project.id])).backupConfigurations;
    expect((await scoped.list()).configurations.map((c) => c.id)).toEqual([configuration.id]);
    for (const call of [
      scoped.get({ configurationId: other.id }),
      scoped.records({ configurationId: other.id }),
      scoped.trigger({ configurationId: other.id }),
      scoped.delete({ configurationId: other.id }),
      scoped.list({ serviceId: theirs.id }),
      scoped.create({ serviceId: theirs.id, schedule: '0 5 * * *' }),
    ]) {
      const error = await errorOf(call);
      expect(error).toMatchObject({ error: 'not_found' });
      expect(JSON.stringify(error)).not.toContain(project.id);
    }
    expect((await admin.list()).configurations).toHaveLength(2);
  });

  it('goes with its database service', async () => {
    const { service } = await databaseService(h);
    const api = h.caller();
    const { configuration } = await api.backupConfigurations.create({ serviceId: service.id, schedule: '0 3 * * *' });
    await api.services.delete({ serviceId: service.id });
    expect(await errorOf(api.backupConfigurations.get({ configurationId: configuration.id }))).toMatchObject({ error: 'not_found' });
    expect(await h.database.store.backupSchedules.get(configuration.id)).toBeNull();
  });
});
