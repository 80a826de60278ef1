import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runId } from '../../src/backups/backup-scheduler.js';
import type { BackupRecord } from '../../src/backups/backup.records.js';
import { DUMP, FakeDump, MemoryFiles } from '../helpers/backups.js';
import { createHarness, type Harness } from '../helpers/harness.js';
import { createScratchDatabase } from '../helpers/postgres.js';
import { admin, database } from '../helpers/unit-harness.js';

/*
 * The backup scheduler with a fake clock on the real store (SQLite; PostgreSQL for two control
 * planes), with fakes of the dump and the disk. No job runner runs: a fired slot's backup stays
 * queued, which is what these tests look at; retention is fed succeeded rows directly.
 */

class FakeClock {
  constructor(private current: Date) {}
  now = () => new Date(this.current);
  set(iso: string): void {
    this.current = new Date(iso);
  }
}

const open: Harness[] = [];
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const h of open.splice(0)) await h.close();
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function platform(clock: FakeClock, opts: { dataDir?: string; databaseUrl?: string; files?: MemoryFiles } = {}): Promise<Harness> {
  const h = await createHarness({ clock, ...opts, backups: { dump: new FakeDump(), files: opts.files ?? new MemoryFiles() } });
  open.push(h);
  return h;
}

function scratchDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'slipway-scheduler-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function databaseOf(h: Harness): Promise<string> {
  const project = await h.services.projects.create(admin, { name: `P ${Math.random()}`, description: '' });
  return (await h.services.serviceCreation.create(admin, project.id, database('db', 'postgres'))).id;
}

const backupsOf = (h: Harness, serviceId: string) => h.database.store.backups.list(serviceId);

function succeeded(serviceId: string, scheduleId: string, id: string, createdAt: Date, files: MemoryFiles): BackupRecord {
  const localPath = files.pathOf(serviceId, `${id}.dump`);
  files.files.set(localPath, DUMP);
  return {
    id,
    serviceId,
    engine: 'postgres',
    status: 'succeeded',
    trigger: 'schedule',
    storage: 'disk',
    format: 'custom',
    localPath,
    storageId: null,
    objectKey: null,
    sizeBytes: DUMP.length,
    checksum: 'sha256:x',
    error: null,
    abortRequested: false,
    createdAt,
    startedAt: createdAt,
    finishedAt: createdAt,
    scheduleId,
    kind: 'dump',
    volume: null,
    volumeMode: null,
    walStart: null,
    counts: null,
    drill: null,
  };
}

describe('backup scheduler', () => {
  it('fires a configuration when its slot comes, once, and moves it to the next slot', async () => {
    const clock = new FakeClock(new Date('2026-11-27T01:00:00Z'));
    const h = await platform(clock);
    const serviceId = await databaseOf(h);
    const config = await h.services.backupSchedules.create(admin, { serviceId, schedule: '0 3 * * *', storage: 'disk' });
    expect(config).toMatchObject({ nextRunAt: '2026-11-27T03:00:00.000Z', lastRunAt: null, retention: { count: 7, maxAgeDays: null } });

    clock.set('2026-11-27T02:59:59Z');
    await h.services.backupScheduler.tick();
    expect(await backupsOf(h, serviceId)).toEqual([]);

    clock.set('2026-11-27T03:00:20Z');
    await h.services.backupScheduler.tick();
    await h.services.backupScheduler.tick();
    const [backup, ...rest] = await backupsOf(h, serviceId);
    expect(rest).toEqual([]);
    expect(backup).toMatchObject({
      id: runId(config.id, new Date('2026-11-27T03:00:00Z')),
      status: 'queued',
      trigger: 'schedule',
      storage: 'disk',
      scheduleId: config.id,
    });
    expect(await h.services.backupSchedules.get(admin, config.id)).toMatchObject({
      nextRunAt: '2026-11-28T03:00:00.000Z',
      lastRunAt: '2026-11-27T03:00:20.000Z',
      lastError: null,
    });
    const logs = await h.database.store.backups.listLogs(backup!.id);
    expect(logs.map((l) => l.line)).toEqual(['Backup queued (schedule, storage disk)']);
  });

  it('keeps its schedules across a restart, and runs a slot missed while down once, not once per slot', async () => {
    const dataDir = scratchDir();
    const clock = new FakeClock(new Date('2026-11-27T01:10:00Z'));
    let h = await platform(clock, { dataDir });
    const serviceId = await databaseOf(h);
    const config = await h.services.backupSchedules.create(admin, { serviceId, schedule: '0 * * * *', storage: 'disk' });
    expect(config.nextRunAt).toBe('2026-11-27T02:00:00.000Z');
    await h.close();
    open.splice(open.indexOf(h), 1);

    // Down from 01:10 to 05:30: the slots of 02:00, 03:00, 04:00 and 05:00 passed.
    clock.set('2026-11-27T05:30:00Z');
    h = await platform(clock, { dataDir });
    await h.services.backupScheduler.tick();
    const backups = await backupsOf(h, serviceId);
    expect(backups).toHaveLength(1);
    expect(backups[0]!.id).toBe(runId(config.id, new Date('2026-11-27T05:00:00Z')));
    expect((await h.services.backupSchedules.get(admin, config.id)).nextRunAt).toBe('2026-11-27T06:00:00.000Z');
  });

  it('skips a slot while the previous backup of the configuration still runs, and says so', async () => {
    const clock = new FakeClock(new Date('2026-11-27T01:00:00Z'));
    const h = await platform(clock);
    const serviceId = await databaseOf(h);
    const config = await h.services.backupSchedules.create(admin, { serviceId, schedule: '*/5 * * * *', storage: 'disk' });
    clock.set('2026-11-27T01:05:00Z');
    await h.services.backupScheduler.tick();
    clock.set('2026-11-27T01:10:00Z');
    await h.services.backupScheduler.tick();
    expect(await backupsOf(h, serviceId)).toHaveLength(1);
    const after = await h.services.backupSchedules.get(admin, config.id);
    expect(after.lastError).toMatch(/slot of 2026-11-27T01:10:00.000Z was skipped: backup \w+ of this configuration was still running/);
    expect(after.nextRunAt).toBe('2026-11-27T01:15:00.000Z');
  });

  it('records why a slot queued nothing (the object store was disconnected) and goes on to the next', async () => {
    const clock = new FakeClock(new Date('2026-11-27T01:00:00Z'));
    const h = await platform(clock);
    const serviceId = await databaseOf(h);
    const config = await h.services.backupSchedules.create(admin, { serviceId, schedule: '0 2 * * *', storage: 'disk' });
    await h.database.store.backupSchedules.update(config.id, { storage: 'object' });
    clock.set('2026-11-27T02:00:00Z');
    await h.services.backupScheduler.tick();
    expect(await backupsOf(h, serviceId)).toEqual([]);
    const after = await h.services.backupSchedules.get(admin, config.id);
    expect(after.lastError).toMatch(/No backup was queued for the slot of 2026-11-27T02:00:00.000Z: storage object needs an object store/);
    expect(after.nextRunAt).toBe('2026-11-28T02:00:00.000Z');
  });

  it('applies retention by count: the newest succeeded backups stay, the older go from every place', async () => {
    const clock = new FakeClock(new Date('2026-11-27T12:00:00Z'));
    const files = new MemoryFiles();
    const h = await platform(clock, { files });
    const serviceId = await databaseOf(h);
    const config = await h.services.backupSchedules.create(admin, {
      serviceId,
      schedule: '0 3 * * *',
      storage: 'disk',
      retention: { count: 2 },
    });
    const other = await h.services.backupSchedules.create(admin, {
      serviceId,
      schedule: '0 4 * * *',
      storage: 'disk',
      retention: { count: 5 },
    });
    const store = h.database.store.backups;
    for (let i = 1; i <= 4; i++)
      await store.insert(succeeded(serviceId, config.id, `mine${i}`, new Date(Date.UTC(2026, 10, 27 - i, 3)), files));
    await store.insert(succeeded(serviceId, other.id, 'theirs1', new Date(Date.UTC(2026, 10, 1)), files));
    await store.insert({ ...succeeded(serviceId, config.id, 'running1', new Date(Date.UTC(2026, 10, 27, 3)), files), status: 'running' });
    // The detailed API's own backups are no configuration's.
    await store.insert({
      ...succeeded(serviceId, config.id, 'manual01', new Date(Date.UTC(2026, 9, 1)), files),
      scheduleId: null,
      trigger: 'manual',
    });

    await h.services.backupScheduler.tick();
    const left = (await backupsOf(h, serviceId)).map((b) => b.id).sort();
    expect(left).toEqual(['manual01', 'mine1', 'mine2', 'running1', 'theirs1']);
    expect(files.files.has(files.pathOf(serviceId, 'mine3.dump'))).toBe(false);
    expect(files.files.has(files.pathOf(serviceId, 'mine4.dump'))).toBe(false);
    expect(files.files.has(files.pathOf(serviceId, 'mine2.dump'))).toBe(true);
    const records = await h.services.backupSchedules.records(admin, config.id, 50);
    expect(records.map((b) => b.id)).toEqual(['running1', 'mine1', 'mine2']);
  });

  it('applies retention by age, and never removes the newest succeeded backup', async () => {
    const clock = new FakeClock(new Date('2026-11-27T12:00:00Z'));
    const files = new MemoryFiles();
    const h = await platform(clock, { files });
    const serviceId = await databaseOf(h);
    const config = await h.services.backupSchedules.create(admin, {
      serviceId,
      schedule: '0 3 * * *',
      storage: 'disk',
      retention: { maxAgeDays: 3 },
    });
    expect(config.retention).toEqual({ count: null, maxAgeDays: 3 });
    const day = (n: number) => new Date(Date.parse('2026-11-27T12:00:00Z') - n * 86_400_000);
    for (const [id, age] of [
      ['age1', 1],
      ['age2', 2.9],
      ['age5', 5],
      ['age10', 10],
    ] as const)
      await h.database.store.backups.insert(succeeded(serviceId, config.id, id, day(age), files));
    await h.services.backupScheduler.tick();
    expect((await backupsOf(h, serviceId)).map((b) => b.id)).toEqual(['age1', 'age2']);
    expect(files.files.has(files.pathOf(serviceId, 'age5.dump'))).toBe(false);

    // Weeks later, with no new backup: the newest stays, however old.
    clock.set('2026-12-30T12:00:00Z');
    await h.services.backupScheduler.tick();
    const left = (await backupsOf(h, serviceId)).filter((b) => b.status === 'succeeded').map((b) => b.id);
    expect(left).toEqual(['age1']);
  });
});

describe('two control planes on one database', () => {
  /** The second control plane: another process on the same database (test/helpers/second-control-plane.ts). */
  async function secondControlPlane(target: string): Promise<{ tick(at: string): Promise<void> }> {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', path.join(import.meta.dirname, '../helpers/second-control-plane.ts'), target],
      {
        cwd: path.resolve(import.meta.dirname, '../..'),
        stdio: ['pipe', 'pipe', 'inherit'],
      },
    );
    cleanups.push(async () => {
      child.stdin.end();
      if (child.exitCode === null) await once(child, 'exit');
    });
    const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
    const expectLine = async (want: string) => {
      const { value } = await lines.next();
      if (value !== want) throw new Error(`second control plane said ${JSON.stringify(value)}, not ${want}`);
    };
    await expectLine('ready');
    return {
      async tick(at) {
        child.stdin.write(`tick ${at}\n`);
        await expectLine('done');
      },
    };
  }

  async function neverTwice(first: Harness, second: { tick(at: string): Promise<void> }, clock: FakeClock): Promise<void> {
    const serviceIds: string[] = [];
    const configs: Array<[string, string]> = [];
    for (let i = 0; i < 6; i++) {
      const serviceId = await databaseOf(first);
      serviceIds.push(serviceId);
      for (const [schedule, next] of [
        ['*/5 * * * *', '2026-11-27T04:05:00.000Z'],
        ['0 * * * *', '2026-11-27T05:00:00.000Z'],
      ])
        configs.push([(await first.services.backupSchedules.create(admin, { serviceId, schedule: schedule!, storage: 'disk' })).id, next!]);
    }
    // Three slots of every configuration, each run by both control planes at once.
    for (const at of ['2026-11-27T02:00:30.000Z', '2026-11-27T03:00:10.000Z', '2026-11-27T04:00:00.000Z']) {
      clock.set(at);
      await Promise.all([first.services.backupScheduler.tick(), second.tick(at)]);
      // Each slot's backup ends before the next slot, so no slot is skipped as still running.
      for (const serviceId of serviceIds)
        for (const b of await backupsOf(first, serviceId))
          await first.database.store.backups.update(b.id, { status: 'succeeded', finishedAt: clock.now() });
    }
    for (const [id, nextRunAt] of configs) {
      const records = await first.services.backupSchedules.records(admin, id, 50);
      expect(records, id).toHaveLength(3);
      // One backup per slot, each with the id both control planes derive for it.
      expect(records.map((r) => r.id).sort()).toEqual(
        ['2026-11-27T02:00:00.000Z', '2026-11-27T03:00:00.000Z', '2026-11-27T04:00:00.000Z'].map((s) => runId(id, new Date(s))).sort(),
      );
      expect(await first.services.backupSchedules.get(admin, id)).toMatchObject({
        lastError: null,
        nextRunAt,
      });
    }
  }

  it('SQLite: two schedulers on one file never run the same slot twice', { timeout: 60_000 }, async () => {
    const dataDir = scratchDir();
    const clock = new FakeClock(new Date('2026-11-27T01:00:00Z'));
    const first = await platform(clock, { dataDir });
    await neverTwice(first, await secondControlPlane(dataDir), clock);
  });

  it('PostgreSQL: two schedulers on one database never run the same slot twice', { timeout: 60_000 }, async () => {
    const scratch = await createScratchDatabase();
    cleanups.push(() => scratch.drop());
    const clock = new FakeClock(new Date('2026-11-27T01:00:00Z'));
    const first = await platform(clock, { databaseUrl: scratch.url });
    await neverTwice(first, await secondControlPlane(scratch.url), clock);
  });
});
