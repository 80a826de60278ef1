import { createHash } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { databaseService, DUMP, errorOf, EXTENSIONS, FakeDump, FORMATS, MemoryFiles, MemoryObjectStore } from '../helpers/backups.js';
import { createHarness, type Harness } from '../helpers/harness.js';

/**
 * The backup routers through createCaller, on SQLite in memory, with fakes of the ports: the dump tool,
 * the disk and the object store (the adapters run against a real PostgreSQL container and s3rver in
 * test/e2e/backups.test.ts).
 */

let h: Harness;
let dump: FakeDump;
let files: MemoryFiles;
let objects: MemoryObjectStore;
let running: boolean;
let repoints: number;

beforeEach(async () => {
  dump = new FakeDump();
  files = new MemoryFiles();
  objects = new MemoryObjectStore();
  running = true;
  repoints = 0;
  h = await createHarness({
    backups: {
      dump,
      files,
      objectStores: () => objects,
      locate: async () => (running ? { containerId: 'c0ffee' } : null),
      repoint: async () => {
        repoints++;
      },
    },
  });
  h.services.backupRunner.start();
  await h.services.backupRunner.recover();
});
afterEach(async () => {
  await h.services.backupRunner.stop();
  await h.close();
});

async function finished(serviceId: string, backupId: string) {
  for (let i = 0; i < 200; i++) {
    const { backups } = await h.caller().backups.list({ serviceId });
    const backup = backups.find((b) => b.id === backupId)!;
    if (backup.status !== 'running') return backup;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error('backup did not finish');
}

const objectStoreSettings = {
  endpoint: 'http://127.0.0.1:9000',
  region: 'us-east-1',
  bucket: 'backups',
  accessKeyId: 'AKIA',
  secretAccessKey: 'very-secret-key',
};
const sha = (b: Buffer) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

describe('backup routers', () => {
  it('lists defaults, makes a disk backup in the background, downloads and restores it', async () => {
    const { service } = await databaseService(h);
    const api = h.caller();
    const empty = await api.backups.list({ serviceId: service.id });
    expect(empty).toMatchObject({
      backups: [],
      settings: { serviceId: service.id, storage: 'disk', automaticEnabled: false, keepDaily: 7, keepWeekly: 4, keepMonthly: 12 },
      objectStore: { connected: false },
    });
    const { backup } = await api.backups.create({ serviceId: service.id, storage: 'disk' });
    expect(backup).toMatchObject({
      status: 'running',
      storage: 'disk',
      format: 'custom',
      trigger: 'manual',
      finishedAt: null,
      engine: 'postgres',
    });
    const done = await finished(service.id, backup.id);
    expect(done).toMatchObject({ status: 'succeeded', sizeBytes: DUMP.length, checksum: sha(DUMP), error: null, objectKey: null });
    expect(files.files.get(done.localPath!)).toEqual(DUMP);
    expect(dump.targets[0]).toMatchObject({ engine: 'postgres', containerId: 'c0ffee' });

    const download = await api.backups.download({ serviceId: service.id, backupId: backup.id });
    expect(download).toMatchObject({ sizeBytes: DUMP.length, fileName: expect.stringMatching(/\.dump$/) });

    const restored = await api.backups.restore({ serviceId: service.id, backupId: backup.id });
    expect(restored).toMatchObject({ ok: true, backup: { id: backup.id, status: 'succeeded' } });
    expect(dump.restored).toEqual([DUMP]);
    // A restore may restart the container (Redis): host ports are pointed at it again before the answer.
    expect(repoints).toBe(1);

    // The log: every step, and no password.
    const { logs } = await api.backups.logs({ serviceId: service.id, backupId: backup.id });
    const text = logs.map((l) => l.line).join('\n');
    expect(text).toMatch(/Backup succeeded/);
    expect(text).toMatch(/Restore finished/);
    const password = (await h.envValues(service.id)).POSTGRES_PASSWORD!;
    expect(text).not.toContain(password);
    expect(text).toContain('********');
  });

  it('stores to the object store, with its secret write-only, and checks the connection for real', async () => {
    const { service } = await databaseService(h);
    const api = h.caller();
    expect((await errorOf(api.backups.create({ serviceId: service.id, storage: 'object' }))).error).toBe('validation_error');
    const { settings } = await api.settings.update({ objectStore: objectStoreSettings });
    expect(settings.objectStore).toEqual({
      ...objectStoreSettings,
      secretAccessKey: undefined,
      forcePathStyle: true,
      hasSecretAccessKey: true,
    });
    expect(JSON.stringify(settings)).not.toContain('very-secret-key');
    const stored = await h.database.store.settings.get('platform');
    expect(stored).not.toContain('very-secret-key');
    expect((await api.backups.list({ serviceId: service.id })).objectStore).toEqual({ connected: true });

    const { backup } = await api.backups.create({ serviceId: service.id, storage: 'disk+object' });
    const done = await finished(service.id, backup.id);
    expect(done.status, done.error ?? '').toBe('succeeded');
    expect(objects.objects.get(done.objectKey!)).toEqual(DUMP);
    expect(files.files.get(done.localPath!)).toEqual(DUMP);

    // Restoring from the object alone: the disk copy is gone.
    await files.remove(done.localPath!);
    await api.backups.restore({ serviceId: service.id, backupId: backup.id });
    expect(dump.restored).toEqual([DUMP]);

    await api.backups.delete({ serviceId: service.id, backupId: backup.id });
    expect(objects.objects.size).toBe(0);
    expect((await errorOf(api.backups.delete({ serviceId: service.id, backupId: backup.id }))).error).toBe('not_found');
  });

  it('fails a backup the object store did not take, removes the partial file and says why', async () => {
    const { service } = await databaseService(h);
    const api = h.caller();
    await api.settings.update({ objectStore: objectStoreSettings });
    objects.down = true;
    const { backup } = await api.backups.create({ serviceId: service.id, storage: 'disk+object' });
    const done = await finished(service.id, backup.id);
    expect(done.status).toBe('failed');
    expect(done.error).toMatch(/ECONNREFUSED/);
    expect(done.checksum).toBe('');
    expect(files.files.size).toBe(0);
    await new Promise((r) => setTimeout(r, 5_100));
    expect((await api.backups.list({ serviceId: service.id })).objectStore).toMatchObject({ connected: false });
    expect((await errorOf(api.backups.restore({ serviceId: service.id, backupId: backup.id }))).error).toBe('conflict');
  }, 15_000);

  it('fails a backup whose dump tool failed, and one of a database that is not running', async () => {
    const { service } = await databaseService(h);
    const api = h.caller();
    dump.failWith = 'pg_dump exited with 1: connection refused';
    const first = await finished(service.id, (await api.backups.create({ serviceId: service.id, storage: 'disk' })).backup.id);
    expect(first).toMatchObject({ status: 'failed', error: 'pg_dump exited with 1: connection refused' });
    expect(files.files.size).toBe(0);
    dump.failWith = null;
    running = false;
    const second = await finished(service.id, (await api.backups.create({ serviceId: service.id, storage: 'disk' })).backup.id);
    expect(second.status).toBe('failed');
    expect(second.error).toMatch(/not running/);
  });

  it('refuses a changed or truncated file with checksum_mismatch and restores nothing', async () => {
    const { service } = await databaseService(h);
    const api = h.caller();
    const done = await finished(service.id, (await api.backups.create({ serviceId: service.id, storage: 'disk' })).backup.id);
    const changed = Buffer.from(DUMP);
    changed[10] = 0;
    files.files.set(done.localPath!, changed);
    const body = await errorOf(api.backups.restore({ serviceId: service.id, backupId: done.id }));
    expect(body).toMatchObject({ error: 'checksum_mismatch', details: { backupId: done.id, expected: done.checksum } });
    files.files.set(done.localPath!, DUMP.subarray(0, 1000));
    expect((await errorOf(api.backups.restore({ serviceId: service.id, backupId: done.id }))).error).toBe('checksum_mismatch');
    expect(dump.restored).toEqual([]);
  });

  it('removes the backups of a deleted database service from every place', async () => {
    const { service } = await databaseService(h);
    const api = h.caller();
    await api.settings.update({ objectStore: objectStoreSettings });
    const done = await finished(service.id, (await api.backups.create({ serviceId: service.id, storage: 'disk+object' })).backup.id);
    expect(done.status).toBe('succeeded');
    await api.services.delete({ serviceId: service.id });
    expect(files.files.size).toBe(0);
    expect(objects.objects.size).toBe(0);
    expect(await h.database.store.backups.list(service.id)).toEqual([]);
  });

  it('backs up and restores every engine, each in its format, with its file name', async () => {
    for (const engine of Object.keys(FORMATS) as Array<keyof typeof FORMATS>) {
      const { service } = await databaseService(h, engine);
      const api = h.caller();
      const { backup } = await api.backups.create({ serviceId: service.id, storage: 'disk' });
      expect(backup).toMatchObject({ engine, format: FORMATS[engine], status: 'running' });
      const done = await finished(service.id, backup.id);
      expect(done.status, done.error ?? '').toBe('succeeded');
      expect(done.localPath).toBe(`/backups/${service.id}/${backup.id}.${EXTENSIONS[FORMATS[engine]]}`);
      const download = await api.backups.download({ serviceId: service.id, backupId: backup.id });
      expect(download.fileName).toMatch(new RegExp(`^main-db-.+-${backup.id}\\.${EXTENSIONS[FORMATS[engine]]}$`));
      expect(await api.backups.restore({ serviceId: service.id, backupId: backup.id })).toMatchObject({ ok: true });
      // Automatic backups are no longer refused for any engine.
      const { settings } = await api.backups.updateSettings({ serviceId: service.id, automaticEnabled: true });
      expect(settings.automaticEnabled).toBe(true);
    }
    expect(dump.targets.map((t) => t.engine)).toEqual(Object.keys(FORMATS));
  });

  it('refuses an engine its dump tool cannot back up with 422 not_supported, automatic backups too', async () => {
    dump.unsupported.add('redis');
    const { service } = await databaseService(h, 'redis');
    const body = await errorOf(h.caller().backups.create({ serviceId: service.id, storage: 'disk' }));
    expect(body).toMatchObject({ error: 'not_supported', details: { engine: 'redis' } });
    const settings = await errorOf(h.caller().backups.updateSettings({ serviceId: service.id, automaticEnabled: true }));
    expect(settings).toMatchObject({ error: 'not_supported', details: { engine: 'redis' } });
  });

  it('keeps read keys to reading and other projects out', async () => {
    const { service, project } = await databaseService(h);
    const reader = h.caller(await h.mintKey('read'));
    expect((await reader.backups.list({ serviceId: service.id })).backups).toEqual([]);
    expect((await errorOf(reader.backups.create({ serviceId: service.id, storage: 'disk' }))).error).toBe('forbidden');
    const other = h.caller(await h.mintKey('write', ['someotherproject']));
    expect((await errorOf(other.backups.list({ serviceId: service.id }))).error).toBe('not_found');
    expect(project.id).toBeTruthy();
    const web = await h.caller().services.create({ projectId: project.id, name: 'web', repoFullName: 'acme/web', branch: 'main' });
    expect((await errorOf(h.caller().backups.list({ serviceId: web.service.id }))).error).toBe('not_found');
  });

  it('changes settings, strictly', async () => {
    const { service } = await databaseService(h);
    const api = h.caller();
    const { settings } = await api.backups.updateSettings({
      serviceId: service.id,
      automaticEnabled: true,
      monthlyEnabled: false,
      keepDaily: 3,
    });
    expect(settings).toMatchObject({ automaticEnabled: true, monthlyEnabled: false, keepDaily: 3, keepWeekly: 4, storage: 'disk' });
    expect((await api.backups.list({ serviceId: service.id })).settings).toMatchObject({ automaticEnabled: true, keepDaily: 3 });
    const unknown = await errorOf(api.backups.updateSettings({ serviceId: service.id, colour: 'red' } as never));
    expect(unknown).toMatchObject({ error: 'validation_error', details: { field: 'colour' } });
    expect((await errorOf(api.backups.updateSettings({ serviceId: service.id, storage: 'object' }))).error).toBe('validation_error');
  });

  it('settles a backup a stopped process left running as failed, with the reason, and removes its partial file', async () => {
    const { service } = await databaseService(h);
    await h.services.backupRunner.stop();
    const id = 'leftoverbackup01';
    await h.database.store.backups.insert({
      id,
      serviceId: service.id,
      engine: 'postgres',
      status: 'running',
      trigger: 'manual',
      storage: 'disk',
      format: 'custom',
      localPath: files.pathOf(service.id, `${id}.dump`),
      objectKey: null,
      storageId: null,
      sizeBytes: 0,
      checksum: '',
      error: null,
      abortRequested: false,
      createdAt: new Date(),
      startedAt: new Date(),
      finishedAt: null,
      scheduleId: null,
      kind: 'dump',
      volume: null,
      volumeMode: null,
      walStart: null,
      counts: null,
      drill: null,
    });
    files.files.set(`${files.pathOf(service.id, `${id}.dump`)}.partial`, Buffer.from('half'));
    h.services.backupRunner.start();
    await h.services.backupRunner.recover();
    const backup = (await h.caller().backups.list({ serviceId: service.id })).backups[0]!;
    expect(backup).toMatchObject({ id, status: 'failed', error: expect.stringMatching(/platform stopped/) });
    expect(backup.finishedAt).not.toBeNull();
    expect(files.files.size).toBe(0);
  });

  it('schedules daily, weekly and monthly backups once per period and keeps only the newest of each', async () => {
    const { service } = await databaseService(h);
    const api = h.caller();
    await api.backups.updateSettings({ serviceId: service.id, automaticEnabled: true, keepDaily: 2 });
    await h.services.backupRunner.stop();
    await h.services.backupScheduler.tick();
    await h.services.backupScheduler.tick();
    const queued = (await api.backups.list({ serviceId: service.id })).backups;
    expect(queued.map((b) => b.trigger).sort()).toEqual(['daily', 'monthly', 'weekly']);
    // Older succeeded dailies beyond the kept number go, from every place.
    for (let i = 1; i <= 3; i++) {
      const id = `olddaily0000000${i}`;
      const localPath = files.pathOf(service.id, `${id}.dump`);
      files.files.set(localPath, DUMP);
      await h.database.store.backups.insert({
        id,
        serviceId: service.id,
        engine: 'postgres',
        status: 'succeeded',
        trigger: 'daily',
        storage: 'disk',
        format: 'custom',
        localPath,
        objectKey: null,
        storageId: null,
        sizeBytes: DUMP.length,
        checksum: sha(DUMP),
        error: null,
        abortRequested: false,
        createdAt: new Date(Date.now() - i * 86_400_000),
        startedAt: null,
        finishedAt: null,
        scheduleId: null,
        kind: 'dump',
        volume: null,
        volumeMode: null,
        walStart: null,
        counts: null,
        drill: null,
      });
    }
    await h.services.backupScheduler.tick();
    const dailies = (await api.backups.list({ serviceId: service.id })).backups.filter(
      (b) => b.trigger === 'daily' && b.status === 'succeeded',
    );
    expect(dailies.map((b) => b.id)).toEqual(['olddaily00000001', 'olddaily00000002']);
    expect(files.files.has(files.pathOf(service.id, 'olddaily00000003.dump'))).toBe(false);
  });
});
