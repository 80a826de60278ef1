import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import type { BackupCounts, BackupRecord } from '../../src/backups/backup.records.js';
import type { ScratchDatabaseSpec, ScratchDatabases } from '../../src/backups/scratch-database.port.js';
import type { CountTarget, DrillEvent, DumpTarget, EngineCounts } from '../../src/index.js';
import { DUMP, FakeDump, MemoryFiles, databaseService, errorOf } from '../helpers/backups.js';
import { createHarness, type Harness } from '../helpers/harness.js';
import { admin } from '../helpers/unit-harness.js';
import { DEFAULT_PLATFORM_CONFIG } from '../../src/platform/platform-config.js';

/*
 * Restore drills, the use case with fakes of its ports on the real store (SQLite in memory): the dump
 * tool (restore and count), the scratch databases, the readiness check, the disk's fill and the events.
 * The drills' adapters run for real in test/integration/drills.test.ts and test/e2e/drills.test.ts.
 */

class FakeClock {
  constructor(private current: Date) {}
  now = () => new Date(this.current);
  advance(ms: number): void {
    this.current = new Date(this.current.getTime() + ms);
  }
}

/** The dump fake, counting what it was told the restored copy holds. */
class CountingDump extends FakeDump {
  held: Record<string, number> = { 'public.orders': 3, 'public.users': 2 };
  restoreError: string | null = null;
  countedAt: CountTarget[] = [];
  override async restore(target: DumpTarget, input: Readable) {
    if (this.restoreError) {
      input.resume();
      throw new Error(this.restoreError);
    }
    this.targets.push(target);
    return super.restore(target, input);
  }
  async count(target: CountTarget): Promise<EngineCounts> {
    this.countedAt.push(target);
    return { unit: 'rows', counts: { ...this.held } };
  }
}

class FakeScratch implements ScratchDatabases {
  started: ScratchDatabaseSpec[] = [];
  removed: string[] = [];
  running = 0;
  maxRunning = 0;
  async start(spec: ScratchDatabaseSpec) {
    this.started.push(spec);
    this.running++;
    this.maxRunning = Math.max(this.maxRunning, this.running);
    await new Promise((r) => setTimeout(r, 5));
    return { containerId: `ctr-${spec.id}`, host: '172.30.0.2' };
  }
  async alive() {
    return { running: true, lastLines: [] };
  }
  async remove(id: string) {
    this.running--;
    this.removed.push(id);
  }
  async sweep() {
    return ['slipway-drill-left'];
  }
}

interface Rig {
  h: Harness;
  clock: FakeClock;
  dump: CountingDump;
  files: MemoryFiles;
  scratch: FakeScratch;
  events: DrillEvent[];
  disk: { usedBytes: number; totalBytes: number };
  serviceId: string;
  projectId: string;
}

const open: Harness[] = [];
afterEach(async () => {
  for (const h of open.splice(0)) await h.close();
});

async function rig(): Promise<Rig> {
  const clock = new FakeClock(new Date('2026-11-27T10:00:00Z'));
  const dump = new CountingDump();
  const files = new MemoryFiles();
  const scratch = new FakeScratch();
  const events: DrillEvent[] = [];
  const disk = { usedBytes: 10_000_000, totalBytes: 100_000_000_000 };
  const h = await createHarness({
    clock,
    backups: {
      dump,
      files,
      drills: {
        scratch,
        ready: async () => 'ready',
        disk: async () => disk,
        publish: async (event) => {
          events.push(event);
        },
      },
    },
  });
  open.push(h);
  const { service, project } = await databaseService(h);
  return { h, clock, dump, files, scratch, events, disk, serviceId: service.id, projectId: project.id };
}

const COUNTS: BackupCounts = { unit: 'rows', expected: { 'public.orders': { min: 3, max: 3 }, 'public.users': { min: 2, max: 2 } } };

/** A succeeded backup of the rig's database, its file on the fake disk. */
async function backup(r: Rig, over: Partial<BackupRecord> = {}, bytes = DUMP): Promise<BackupRecord> {
  const id = over.id ?? `b${Math.random().toString(36).slice(2, 10)}`;
  const localPath = r.files.pathOf(r.serviceId, `${id}.dump`);
  r.files.files.set(localPath, bytes);
  const now = r.clock.now();
  const record: BackupRecord = {
    id,
    serviceId: r.serviceId,
    engine: 'postgres',
    status: 'succeeded',
    trigger: 'manual',
    storage: 'disk',
    format: 'custom',
    localPath,
    objectKey: null,
    storageId: null,
    sizeBytes: DUMP.length,
    checksum: `sha256:${createHash('sha256').update(DUMP).digest('hex')}`,
    error: null,
    abortRequested: false,
    createdAt: now,
    startedAt: now,
    finishedAt: now,
    scheduleId: null,
    kind: 'dump',
    volume: null,
    volumeMode: null,
    walStart: null,
    counts: COUNTS,
    drill: null,
    ...over,
  };
  await r.h.database.store.backups.insert(record);
  return record;
}

async function drillOf(r: Rig, id: string) {
  return (await r.h.database.store.backups.get(id))!.drill;
}

async function logsOf(r: Rig, id: string): Promise<string[]> {
  return (await r.h.database.store.backups.listLogs(id)).map((l) => l.line);
}

describe('restore drills', () => {
  it('restores the newest backup into a scratch database, counts it, passes, removes it and tells', async () => {
    const r = await rig();
    const b = await backup(r);
    const { backup: view } = await r.h.caller().backups.drill({ serviceId: r.serviceId, backupId: b.id });
    expect(view.drill).toMatchObject({ status: 'queued', startedAt: null, finishedAt: null, durationMs: null });
    await r.h.services.drills.runPass();
    const drill = await drillOf(r, b.id);
    expect(drill).toMatchObject({ status: 'passed', reason: null, checksumOk: true, counts: { 'public.orders': 3, 'public.users': 2 } });
    // The scratch database: the engine's image and data directory, the original's env, then removed.
    expect(r.scratch.started).toHaveLength(1);
    expect(r.scratch.started[0]).toMatchObject({ engine: 'postgres', dataDir: '/var/lib/postgresql/data' });
    expect(r.scratch.started[0]!.env.POSTGRES_PASSWORD).toBeTruthy();
    expect(r.scratch.removed).toEqual([r.scratch.started[0]!.id]);
    // It restored the stored bytes into the scratch container, and counted it there.
    expect(r.dump.restored.at(-1)!.equals(DUMP)).toBe(true);
    expect(r.dump.targets.at(-1)!.containerId).toBe(`ctr-${r.scratch.started[0]!.id}`);
    expect(r.dump.countedAt.at(-1)).toMatchObject({ host: '172.30.0.2' });
    expect(r.events).toEqual([{ type: 'drill.passed', serviceId: r.serviceId, projectId: r.projectId, backupId: b.id, reason: null }]);
    const logs = await logsOf(r, b.id);
    expect(logs).toContain('Restore drill queued');
    expect(logs.some((l) => l.startsWith('Restore drill passed in'))).toBe(true);
    // Passwords never reach the backup's log.
    for (const line of logs) expect(line).not.toContain(r.scratch.started[0]!.env.POSTGRES_PASSWORD);
    // The listing shows it, with its duration; the summary counts none never drilled nor failed.
    const list = await r.h.caller().backups.list({ serviceId: r.serviceId });
    expect(list.backups[0]!.drill).toMatchObject({ status: 'passed', durationMs: expect.any(Number) });
    expect(list.drills).toEqual({ neverDrilled: 0, failed: 0 });
  });

  it('fails when the restored copy does not hold what the backup counted, naming each table, with an event', async () => {
    const r = await rig();
    const b = await backup(r);
    r.dump.held = { 'public.orders': 1, 'public.users': 2, 'public.extra': 4 };
    await r.h.services.drills.request(await adminActor(r), r.serviceId, b.id);
    await r.h.services.drills.runPass();
    const drill = await drillOf(r, b.id);
    expect(drill!.status).toBe('failed');
    expect(drill!.reason).toContain('public.orders: 1 rows restored, 3 at backup time');
    expect(drill!.reason).toContain('public.extra: 4 rows restored, not there at backup time');
    expect(drill!.reason).not.toContain('public.users');
    expect(r.events.map((e) => e.type)).toEqual(['drill.failed']);
    expect(r.events[0]!.reason).toBe(drill!.reason);
    expect(r.scratch.removed).toHaveLength(1);
    const list = await r.h.caller().backups.list({ serviceId: r.serviceId });
    expect(list.drills).toEqual({ neverDrilled: 0, failed: 1 });
  });

  it('fails a corrupt backup on its checksum before any container starts', async () => {
    const r = await rig();
    const corrupt = Buffer.from(DUMP);
    corrupt[1000] = corrupt[1000]! ^ 0xff;
    const b = await backup(r, {}, corrupt);
    await r.h.services.drills.request(await adminActor(r), r.serviceId, b.id);
    await r.h.services.drills.runPass();
    const drill = await drillOf(r, b.id);
    expect(drill).toMatchObject({ status: 'failed', checksumOk: false });
    expect(drill!.reason).toMatch(/changed or truncated/);
    expect(r.scratch.started).toHaveLength(0);
    expect(r.events.map((e) => e.type)).toEqual(['drill.failed']);
  });

  it("fails with the engine's own message when the restore fails, and removes the scratch database", async () => {
    const r = await rig();
    const b = await backup(r);
    r.dump.restoreError = 'pg_restore: error: input file appears to be a text format dump';
    await r.h.services.drills.request(await adminActor(r), r.serviceId, b.id);
    await r.h.services.drills.runPass();
    const drill = await drillOf(r, b.id);
    expect(drill).toMatchObject({ status: 'failed', checksumOk: true, counts: null });
    expect(drill!.reason).toBe('The restore failed: pg_restore: error: input file appears to be a text format dump');
    expect(r.scratch.removed).toHaveLength(1);
  });

  it('is skipped, with the reason and no event, when the restored copy would take the disk past 90%', async () => {
    const r = await rig();
    const b = await backup(r);
    r.disk.totalBytes = 10_000_000;
    r.disk.usedBytes = 8_500_000;
    await r.h.services.drills.request(await adminActor(r), r.serviceId, b.id);
    await r.h.services.drills.runPass();
    const drill = await drillOf(r, b.id);
    expect(drill!.status).toBe('skipped');
    expect(drill!.reason).toMatch(/the disk is 85\.0% full .* past 90\.0%/);
    expect(r.scratch.started).toHaveLength(0);
    expect(r.events).toEqual([]);
  });

  it('refuses a second drill while one is queued, and a backup that did not succeed', async () => {
    const r = await rig();
    const b = await backup(r);
    const api = r.h.caller();
    await api.backups.drill({ serviceId: r.serviceId, backupId: b.id });
    expect(await errorOf(api.backups.drill({ serviceId: r.serviceId, backupId: b.id }))).toMatchObject({ error: 'conflict' });
    const failed = await backup(r, { status: 'failed', error: 'pg_dump: error' });
    expect(await errorOf(api.backups.drill({ serviceId: r.serviceId, backupId: failed.id }))).toMatchObject({
      error: 'conflict',
      details: { status: 'failed' },
    });
    expect(await errorOf(api.backups.drill({ serviceId: r.serviceId, backupId: 'nope' }))).toMatchObject({ error: 'not_found' });
    // Once it ended, it can be drilled again.
    await r.h.services.drills.runPass();
    await api.backups.drill({ serviceId: r.serviceId, backupId: b.id });
    expect((await drillOf(r, b.id))!.status).toBe('queued');
  });

  it('runs one drill at a time, oldest request first', async () => {
    const r = await rig();
    const first = await backup(r);
    const second = await backup(r);
    await r.h.services.drills.request(await adminActor(r), r.serviceId, first.id);
    r.clock.advance(1000);
    await r.h.services.drills.request(await adminActor(r), r.serviceId, second.id);
    await r.h.services.drills.runPass();
    expect(r.scratch.maxRunning).toBe(1);
    expect(r.scratch.started.map((s) => s.id)).toEqual([first.id.toLowerCase(), second.id.toLowerCase()]);
  });

  it("drills each configuration's newest succeeded backup when due (weekly by default, daily, never when off)", async () => {
    const r = await rig();
    const api = r.h.caller();
    const weekly = (await api.backupConfigurations.create({ serviceId: r.serviceId, schedule: '0 3 * * *', storage: 'disk' }))
      .configuration;
    const off = (await api.backupConfigurations.create({ serviceId: r.serviceId, schedule: '0 4 * * *', storage: 'disk', drill: 'off' }))
      .configuration;
    expect(weekly.drill).toBe('weekly');
    expect(off.drill).toBe('off');
    const older = await backup(r, { scheduleId: weekly.id });
    r.clock.advance(1000);
    const newest = await backup(r, { scheduleId: weekly.id });
    r.clock.advance(1000);
    await backup(r, { scheduleId: weekly.id, status: 'failed' });
    const ofOff = await backup(r, { scheduleId: off.id });
    await r.h.services.drills.scheduleDue(r.clock.now());
    expect((await drillOf(r, newest.id))!.status).toBe('queued');
    expect(await drillOf(r, older.id)).toBeNull();
    expect(await drillOf(r, ofOff.id)).toBeNull();
    await r.h.services.drills.runPass();
    expect((await drillOf(r, newest.id))!.status).toBe('passed');
    // Within the week: not again. A week on: again.
    r.clock.advance(6 * 86_400_000);
    await r.h.services.drills.scheduleDue(r.clock.now());
    expect((await drillOf(r, newest.id))!.status).toBe('passed');
    r.clock.advance(86_400_000);
    await r.h.services.drills.scheduleDue(r.clock.now());
    expect((await drillOf(r, newest.id))!.status).toBe('queued');
    expect((await api.backupConfigurations.get({ configurationId: weekly.id })).configuration.lastDrillAt).toBe(
      r.clock.now().toISOString(),
    );
  });

  it("drills the settings' daily, weekly and monthly backups as their drill setting says", async () => {
    const r = await rig();
    const api = r.h.caller();
    const { settings } = await api.backups.updateSettings({ serviceId: r.serviceId, automaticEnabled: true, drill: 'daily' });
    expect(settings.drill).toBe('daily');
    const daily = await backup(r, { trigger: 'daily' });
    await r.h.services.drills.scheduleDue(r.clock.now());
    expect((await drillOf(r, daily.id))!.status).toBe('queued');
    await api.backups.updateSettings({ serviceId: r.serviceId, drill: 'off' });
    const { configurations } = await api.backupConfigurations.list({ serviceId: r.serviceId });
    expect(configurations.map((c) => c.drill)).toEqual(['off', 'off', 'off']);
  });

  it('does not hold up a stop past its grace for a drill that ignores the abort', async () => {
    const r = await rig();
    const hanging = new FakeScratch();
    hanging.start = (spec) => {
      hanging.started.push(spec);
      return new Promise(() => undefined);
    };
    const h = await createHarness({
      clock: r.clock,
      backups: {
        dump: r.dump,
        files: r.files,
        drills: { scratch: hanging, ready: async () => 'ready', disk: async () => r.disk, limits: { stopGraceMs: 200 } },
      },
    });
    open.push(h);
    const { service } = await databaseService(h);
    const made = await backup({ ...r, h, serviceId: service.id });
    h.services.drills.start();
    await h.services.drills.request(await adminActor(r), service.id, made.id);
    for (let i = 0; i < 200 && hanging.started.length === 0; i++) await new Promise((res) => setTimeout(res, 10));
    expect(hanging.started).toHaveLength(1);
    const began = Date.now();
    await h.services.drills.stop();
    expect(Date.now() - began).toBeLessThan(2_000);
  });

  it('queues no scheduled drill with SCHEDULED_DRILLS off; one asked for still runs', async () => {
    const r = await rig();
    const h = await createHarness({
      clock: r.clock,
      config: { backups: { ...DEFAULT_PLATFORM_CONFIG.backups, scheduledDrills: false } },
      backups: { dump: r.dump, files: r.files, drills: { scratch: r.scratch, ready: async () => 'ready', disk: async () => r.disk } },
    });
    open.push(h);
    const { service } = await databaseService(h);
    const rig2 = { ...r, h, serviceId: service.id };
    const { configuration } = await h
      .caller()
      .backupConfigurations.create({ serviceId: service.id, schedule: '0 3 * * *', storage: 'disk' });
    expect(configuration.drill).toBe('weekly');
    const made = await backup(rig2, { scheduleId: configuration.id });
    await h.services.drills.runPass();
    expect(await drillOf(rig2, made.id)).toBeNull();
    expect(r.scratch.started).toHaveLength(0);
    await h.services.drills.request(await adminActor(r), service.id, made.id);
    await h.services.drills.runPass();
    expect(r.scratch.started).toHaveLength(1);
  });

  it('ends a drill cut off by a restart failed, with an event, and sweeps the scratch leftovers', async () => {
    const r = await rig();
    const b = await backup(r, {
      drill: {
        status: 'running',
        reason: null,
        requestedAt: r.clock.now(),
        startedAt: r.clock.now(),
        finishedAt: null,
        counts: null,
        checksumOk: null,
      },
    });
    await r.h.services.drills.recover();
    expect(await drillOf(r, b.id)).toMatchObject({ status: 'failed', reason: 'The drill was cut off by a platform restart' });
    expect(r.events.map((e) => e.type)).toEqual(['drill.failed']);
  });

  it('counts the backups never drilled in the listing', async () => {
    const r = await rig();
    await backup(r);
    await backup(r);
    await backup(r, { status: 'failed' });
    expect((await r.h.caller().backups.list({ serviceId: r.serviceId })).drills).toEqual({ neverDrilled: 2, failed: 0 });
  });
});

async function adminActor(_r: Rig) {
  return admin;
}
