import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { RunningDump, VolumeArchive, VolumeRuntime, VolumeStats } from '../../src/index.js';
import { errorOf, MemoryFiles } from '../helpers/backups.js';
import { createHarness, type Harness } from '../helpers/harness.js';

/**
 * Named volumes and their backups through createCaller, on SQLite in memory, with fakes of the volume
 * archive and of the runtime that stops the service (the Docker adapters run in test/e2e/volume-backups.test.ts).
 */

let TAR: Buffer;
let scratchDir: string;
beforeAll(() => {
  // A real tar (3 files, 5 + 3 + 1000 bytes), as the archive's helper would stream it.
  scratchDir = mkdtempSync(path.join(tmpdir(), 'slipway-vol-'));
  const dir = path.join(scratchDir, 'data');
  mkdirSync(path.join(dir, 'sub'), { recursive: true });
  writeFileSync(path.join(dir, 'a.txt'), 'hello');
  writeFileSync(path.join(dir, 'sub', 'b.txt'), 'abc');
  writeFileSync(path.join(dir, 'sub', 'c.bin'), Buffer.alloc(1000, 7));
  TAR = spawnSync('tar', ['-c', '-f', '-', '-C', dir, '--sort=name', '.'], { maxBuffer: 1 << 24 }).stdout;
});
afterAll(() => rmSync(scratchDir, { recursive: true, force: true }));

class FakeArchive implements VolumeArchive {
  archived: Array<{ volume: string; live: boolean }> = [];
  restored: Array<{ volume: string; bytes: Buffer }> = [];
  drillStats: VolumeStats = { files: 3, bytes: 1008 };
  async archive(volume: string, options: { live: boolean }): Promise<RunningDump> {
    this.archived.push({ volume, live: options.live });
    return { stream: Readable.from([TAR]), done: Promise.resolve() };
  }
  async restore(volume: string, input: Readable): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of input) chunks.push(chunk as Buffer);
    this.restored.push({ volume, bytes: Buffer.concat(chunks) });
  }
  async drill(_id: string, input: Readable): Promise<VolumeStats> {
    for await (const _ of input);
    return this.drillStats;
  }
  async sweep() {
    return [];
  }
  async removeVolume() {}
}

class FakeRuntime implements VolumeRuntime {
  steps: string[] = [];
  async stopContainers(serviceId: string) {
    this.steps.push(`stop ${serviceId}`);
    return ['ctr-1', 'ctr-2'];
  }
  async startContainers(ids: string[]) {
    this.steps.push(`start ${ids.join(',')}`);
  }
}

let h: Harness;
let files: MemoryFiles;
let archive: FakeArchive;
let runtime: FakeRuntime;

beforeEach(async () => {
  files = new MemoryFiles();
  archive = new FakeArchive();
  runtime = new FakeRuntime();
  h = await createHarness({ backups: { files, drills: { volumes: archive, disk: async () => null }, volumeRuntime: runtime } });
  h.services.backupRunner.start();
  await h.services.backupRunner.recover();
});
afterEach(async () => {
  await h.services.backupRunner.stop();
  await h.close();
});

async function appWithVolume() {
  const api = h.caller();
  const { project } = await api.projects.create({ name: `P ${Math.random()}` });
  const { service } = await api.services.create({
    projectId: project.id,
    name: 'web',
    repoUrl: 'container-image',
    containerImage: 'nginx:1',
    volumes: [{ name: 'uploads', mountPath: '/srv/uploads' }],
  });
  return service;
}

async function finished(serviceId: string, backupId: string) {
  for (let i = 0; i < 200; i++) {
    const { backups } = await h.caller().volumes.backups({ serviceId, name: 'uploads' });
    const backup = backups.find((b) => b.id === backupId)!;
    if (backup.status !== 'running') return backup;
    await new Promise((r) => setTimeout(r, 20));
  }
  const logs = await h.caller().volumes.logs({ serviceId, name: 'uploads', backupId });
  throw new Error(`backup did not finish: ${logs.logs.map((l) => l.line).join(' | ')}`);
}

const sha = (b: Buffer) => `sha256:${createHash('sha256').update(b).digest('hex')}`;

describe('named volumes', () => {
  it('are taken on create and update, listed, and refused with the field named', async () => {
    const service = await appWithVolume();
    const api = h.caller();
    expect((await api.volumes.list({ serviceId: service.id })).volumes).toMatchObject([{ name: 'uploads', mountPath: '/srv/uploads' }]);
    await api.services.update({
      serviceId: service.id,
      volumes: [
        { name: 'uploads', mountPath: '/srv/uploads' },
        { name: 'cache', mountPath: '/var/cache/app' },
      ],
    });
    expect((await api.volumes.list({ serviceId: service.id })).volumes.map((v) => v.name)).toEqual(['cache', 'uploads']);

    const bad = [
      { volumes: [{ name: 'Bad Name', mountPath: '/x' }], field: 'volumes.0.name' },
      { volumes: [{ name: 'a', mountPath: 'relative' }], field: 'volumes.0.mountPath' },
      { volumes: [{ name: 'a', mountPath: '/x/../etc' }], field: 'volumes.0.mountPath' },
      { volumes: [{ name: 'a', mountPath: '/proc' }], field: 'volumes.0.mountPath' },
      {
        volumes: [
          { name: 'a', mountPath: '/x' },
          { name: 'a', mountPath: '/y' },
        ],
        field: 'volumes.1.name',
      },
      { volumes: [{ name: 'a', mountPath: '/x', size: 3 }], field: 'volumes.0' },
      { volumes: Array.from({ length: 11 }, (_, i) => ({ name: `v${i}`, mountPath: `/v${i}` })), field: 'volumes' },
    ];
    for (const { volumes, field } of bad) {
      const error = await errorOf(api.services.update({ serviceId: service.id, volumes } as never));
      expect(error.error, JSON.stringify(volumes)).toBe('validation_error');
      expect(JSON.stringify(error.details), JSON.stringify(volumes)).toContain(field);
    }
    // A database's own data directory is the platform's.
    const { project } = await api.projects.create({ name: `P ${Math.random()}` });
    const refused = await errorOf(
      api.services.create({
        projectId: project.id,
        name: 'db',
        repoUrl: 'database',
        repoFullName: 'database:postgres',
        volumes: [{ name: 'data', mountPath: '/var/lib/postgresql/data' }],
      }),
    );
    expect(refused).toMatchObject({ error: 'validation_error', details: { field: 'volumes.0.mountPath' } });
  });
});

describe('volume backups', () => {
  it('backs up stopped (the service stopped and started again) and live, restores after the checksum, drills', async () => {
    const service = await appWithVolume();
    const api = h.caller();
    const { backup } = await api.volumes.createBackup({ serviceId: service.id, name: 'uploads', storage: 'disk' });
    expect(backup).toMatchObject({
      status: 'running',
      kind: 'volume',
      volume: 'uploads',
      volumeMode: 'stopped',
      format: 'tar',
      engine: null,
    });
    const done = await finished(service.id, backup.id);
    expect(done).toMatchObject({
      status: 'succeeded',
      sizeBytes: TAR.length,
      checksum: sha(TAR),
      counts: { unit: 'files', expected: { files: { min: 3, max: 3 }, bytes: { min: 1008, max: 1008 } } },
    });
    expect(archive.archived).toEqual([{ volume: `slipway-${service.id}-vol-uploads`, live: false }]);
    expect(runtime.steps).toEqual([`stop ${service.id}`, 'start ctr-1,ctr-2']);
    const logs = (await api.volumes.logs({ serviceId: service.id, name: 'uploads', backupId: backup.id })).logs.map((l) => l.line);
    expect(logs.join('\n')).toMatch(/of downtime for the snapshot/);
    // The service's status came back with it.
    expect((await h.database.store.projects.getService(service.id))!.status).toBe('idle');

    const live = await api.volumes.createBackup({ serviceId: service.id, name: 'uploads', mode: 'live' });
    await finished(service.id, live.backup.id);
    expect(archive.archived[1]).toMatchObject({ live: true });
    expect(runtime.steps).toHaveLength(2);

    const restored = await api.volumes.restore({ serviceId: service.id, name: 'uploads', backupId: backup.id });
    expect(restored).toMatchObject({ ok: true, backup: { id: backup.id } });
    expect(archive.restored[0]!.bytes).toEqual(TAR);
    expect(runtime.steps.slice(2)).toEqual([`stop ${service.id}`, 'start ctr-1,ctr-2']);

    await api.volumes.drill({ serviceId: service.id, name: 'uploads', backupId: backup.id });
    await h.services.drills.runPass();
    const list = await api.volumes.backups({ serviceId: service.id, name: 'uploads' });
    expect(list.backups.find((b) => b.id === backup.id)!.drill).toMatchObject({
      status: 'passed',
      checksumOk: true,
      counts: { files: 3, bytes: 1008 },
    });
    expect(list.drills).toEqual({ neverDrilled: 1, failed: 0 });

    // The download names a tar; a delete removes the file and the row.
    const download = await api.volumes.download({ serviceId: service.id, name: 'uploads', backupId: backup.id });
    expect(download).toMatchObject({ sizeBytes: TAR.length, fileName: expect.stringMatching(/\.tar$/) });
    await api.volumes.deleteBackup({ serviceId: service.id, name: 'uploads', backupId: live.backup.id });
    expect((await api.volumes.backups({ serviceId: service.id, name: 'uploads' })).backups).toHaveLength(1);
  });

  it('refuses a changed archive on restore and fails its drill with the reason; a drill counting other files fails', async () => {
    const service = await appWithVolume();
    const api = h.caller();
    const { backup } = await api.volumes.createBackup({ serviceId: service.id, name: 'uploads' });
    const done = await finished(service.id, backup.id);
    const corrupt = Buffer.from(TAR);
    corrupt[600] = corrupt[600]! ^ 0xff;
    files.files.set(done.localPath!, corrupt);
    const refused = await errorOf(api.volumes.restore({ serviceId: service.id, name: 'uploads', backupId: backup.id }));
    expect(refused.error).toBe('checksum_mismatch');
    expect(archive.restored).toHaveLength(0);
    expect(runtime.steps).toHaveLength(2);
    await api.volumes.drill({ serviceId: service.id, name: 'uploads', backupId: backup.id });
    await h.services.drills.runPass();
    let drill = (await api.volumes.backups({ serviceId: service.id, name: 'uploads' })).backups[0]!.drill;
    expect(drill).toMatchObject({ status: 'failed', checksumOk: false, reason: expect.stringMatching(/changed or truncated/) });

    files.files.set(done.localPath!, TAR);
    archive.drillStats = { files: 2, bytes: 1005 };
    await api.volumes.drill({ serviceId: service.id, name: 'uploads', backupId: backup.id });
    await h.services.drills.runPass();
    drill = (await api.volumes.backups({ serviceId: service.id, name: 'uploads' })).backups[0]!.drill;
    expect(drill).toMatchObject({
      status: 'failed',
      checksumOk: true,
      reason: expect.stringMatching(/files: 2 restored, 3 at backup time/),
    });
  });

  it("404s an unknown volume, another volume's backup; 400s an unknown field and mode", async () => {
    const service = await appWithVolume();
    const api = h.caller();
    expect((await errorOf(api.volumes.backups({ serviceId: service.id, name: 'nope' }))).error).toBe('not_found');
    const { backup } = await api.volumes.createBackup({ serviceId: service.id, name: 'uploads' });
    await finished(service.id, backup.id);
    await api.services.update({
      serviceId: service.id,
      volumes: [
        { name: 'uploads', mountPath: '/u' },
        { name: 'other', mountPath: '/o' },
      ],
    });
    expect((await errorOf(api.volumes.restore({ serviceId: service.id, name: 'other', backupId: backup.id }))).error).toBe('not_found');
    const unknown = await errorOf(api.volumes.createBackup({ serviceId: service.id, name: 'uploads', extra: 1 } as never));
    expect(unknown.error).toBe('validation_error');
    expect(JSON.stringify(unknown)).toContain('extra');
    const mode = await errorOf(api.volumes.createBackup({ serviceId: service.id, name: 'uploads', mode: 'frozen' } as never));
    expect(JSON.stringify(mode)).toContain('mode');
  });
});

describe('volume backup configurations (/api/backups)', () => {
  it('schedules a named volume of a web service: listed with its volume and mode, triggered as a volume backup', async () => {
    const service = await appWithVolume();
    const api = h.caller().backupConfigurations;
    const { configuration } = await api.create({
      serviceId: service.id,
      schedule: '0 4 * * *',
      volume: { name: 'uploads', mode: 'live' },
      retention: { count: 2 },
    });
    expect(configuration).toMatchObject({ serviceId: service.id, volume: { name: 'uploads', mode: 'live' }, retention: { count: 2 } });
    expect((await api.list({ serviceId: service.id })).configurations).toEqual([configuration]);
    const { backup } = await api.trigger({ configurationId: configuration.id });
    expect(backup).toMatchObject({ kind: 'volume', volume: 'uploads', trigger: 'manual', status: 'running' });
    expect(await finished(service.id, backup.id)).toMatchObject({ status: 'succeeded', volumeMode: 'live' });
    // Live: the service was never stopped for it.
    expect(runtime.steps.filter((s) => s.startsWith('stop'))).toEqual([]);
    expect((await api.records({ configurationId: configuration.id })).records.map((r) => r.id)).toEqual([backup.id]);
    // `stopped` is the default mode.
    const stopped = (await api.create({ serviceId: service.id, schedule: '@daily', volume: { name: 'uploads' } })).configuration;
    expect(stopped.volume).toEqual({ name: 'uploads', mode: 'stopped' });
  });

  it('404s a volume the service does not have, 400s a malformed name or mode naming the field; a database configuration has no volume', async () => {
    const service = await appWithVolume();
    const api = h.caller().backupConfigurations;
    expect(await errorOf(api.create({ serviceId: service.id, schedule: '@daily', volume: { name: 'cache' } }))).toMatchObject({
      error: 'not_found',
    });
    const badName = await errorOf(api.create({ serviceId: service.id, schedule: '@daily', volume: { name: 'Bad Name' } }));
    expect(badName).toMatchObject({ error: 'validation_error' });
    expect(JSON.stringify(badName)).toContain('volume.name');
    const badMode = await errorOf(
      api.create({ serviceId: service.id, schedule: '@daily', volume: { name: 'uploads', mode: 'frozen' } } as never),
    );
    expect(JSON.stringify(badMode)).toContain('volume.mode');
    // Without `volume`, a web service is not a database: 404 as before.
    expect(await errorOf(api.create({ serviceId: service.id, schedule: '@daily' }))).toMatchObject({ error: 'not_found' });
  });
});
