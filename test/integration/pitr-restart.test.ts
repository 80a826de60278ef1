import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { restoredVolume } from '../../src/domain/wal-spool.js';
import { DEFAULT_PLATFORM_CONFIG } from '../../src/platform/platform-config.js';
import type { PointInTimeRecovery, RecoveryRequest } from '../../src/pitr/wal-archive.port.js';
import { databaseService, FakeDump, MemoryFiles } from '../helpers/backups.js';
import { createHarness, type Harness } from '../helpers/harness.js';
import { FakeSpool, walSegment } from '../helpers/wal-spool.js';

/**
 * A point-in-time restore cut off by a platform restart, through the routes and the composition root on
 * one SQLite file shared by two harnesses (the platform before and after the restart), with a fake of
 * PostgreSQL's recovery that never ends: queued in place over the API, running in the first platform;
 * the second platform's start (PitrRestoreJobs.resume: sweep, recover, start) ends it `failed`, the
 * original on its own volume, never deployed, its filled volume removed; the first platform's run, let go
 * afterwards, cannot turn it back.
 */

let dir = '';
const harnesses: Harness[] = [];
const recoveries: HangingRecovery[] = [];
afterEach(async () => {
  // A run still hanging would hold its platform's stop.
  for (const r of recoveries.splice(0)) r.letGo();
  for (const h of harnesses.splice(0)) {
    await h.services.pitrRestores?.stop();
    await h.close();
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

class HangingRecovery implements PointInTimeRecovery {
  readonly requests: RecoveryRequest[] = [];
  readonly removed: string[] = [];
  readonly calls: string[] = [];
  private release: (() => void) | null = null;
  recover(request: RecoveryRequest) {
    this.requests.push(request);
    this.calls.push('recover');
    return new Promise<never>((_, reject) => {
      this.release = () => reject(new Error('the process ended'));
    });
  }
  async sweep() {
    this.calls.push('sweep');
    return ['slipway-pitr-scratch'];
  }
  async removeVolume(volume: string) {
    this.calls.push(`remove ${volume}`);
    this.removed.push(volume);
  }
  letGo() {
    this.release?.();
  }
}

async function platform(recovery: HangingRecovery, files: MemoryFiles) {
  recoveries.push(recovery);
  const h = await createHarness({
    dataDir: dir,
    backups: {
      dump: new FakeDump(),
      files,
      locate: async () => ({ containerId: 'c0ffee' }),
      walSpool: new FakeSpool(),
      pitrRecovery: recovery,
    },
  });
  harnesses.push(h);
  return h;
}

async function until<T>(what: string, check: () => Promise<T | null | undefined>): Promise<T> {
  for (let i = 0; i < 400; i++) {
    const value = await check();
    if (value) return value;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`${what} did not happen`);
}

describe('a point-in-time restore cut off by a platform restart', () => {
  it('ends an in-place restore failed and leaves the original untouched', async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'pitr-restart-'));
    const files = new MemoryFiles();
    const before = new HangingRecovery();
    const first = await platform(before, files);
    const { service } = await databaseService(first);
    const api = first.caller();
    await api.pitr.put({ serviceId: service.id, enabled: true });
    // An archive: a base backup whose bytes match its checksum, and its WAL.
    const bytes = Buffer.from('base backup tar');
    files.files.set(`/backups/${service.id}/base.tar`, bytes);
    const finishedAt = new Date(Date.now() - 120_000);
    await first.database.store.backups.insert({
      id: 'BASE00000001',
      serviceId: service.id,
      engine: 'postgres',
      status: 'succeeded',
      trigger: 'pitr',
      storage: 'disk',
      format: 'basebackup',
      localPath: `/backups/${service.id}/base.tar`,
      objectKey: null,
      storageId: null,
      sizeBytes: bytes.length,
      checksum: `sha256:${createHash('sha256').update(bytes).digest('hex')}`,
      error: null,
      abortRequested: false,
      createdAt: finishedAt,
      startedAt: finishedAt,
      finishedAt,
      scheduleId: null,
      kind: 'base',
      volume: null,
      volumeMode: null,
      walStart: walSegment(3),
      counts: null,
      drill: null,
    });
    await first.database.store.pitr.insertSegment({
      id: 'SEG000000003',
      serviceId: service.id,
      name: walSegment(3),
      timeline: 1,
      walBytes: 16 << 20,
      sizeBytes: 10,
      checksum: 'sha256:00',
      completedAt: new Date(finishedAt.getTime() + 60_000),
      storedAt: new Date(finishedAt.getTime() + 61_000),
      localPath: `/backups/${service.id}/wal/${walSegment(3)}`,
      objectKey: null,
      storageId: null,
    });
    const at = new Date(finishedAt.getTime() + 30_000).toISOString();
    const { restore } = await api.pitr.restore({ serviceId: service.id, at, replace: true, confirm: service.name });
    first.services.pitrRestores!.start();
    await until('the restore running', async () => (await first.database.store.pitr.getRestore(restore.id))?.status === 'running');
    await until('the recovery under way', async () => before.requests.length > 0);
    const filled = restoredVolume(DEFAULT_PLATFORM_CONFIG.resourcePrefix, service.id, restore.id);
    expect(before.requests[0]?.volume).toBe(filled);

    // The platform stops without ending it (a crash, a host reboot); a new one starts on the same database.
    const after = new HangingRecovery();
    const second = await platform(after, new MemoryFiles());
    await second.services.pitrRestores!.resume();
    const { pitr } = await second.caller().pitr.get({ serviceId: service.id });
    const ended = pitr.restores.find((r) => r.id === restore.id);
    expect(ended).toMatchObject({ status: 'failed', replace: true, targetServiceId: service.id });
    expect(ended?.error).toMatch(/cut off by a platform restart; the original database was left untouched/);
    // The original: still on its own volume, never deployed, its filled volume removed after the scratch went.
    expect((await second.database.store.pitr.getSettings(service.id))?.dataVolume).toBeNull();
    expect(await second.database.store.deployments.list(service.id)).toEqual([]);
    expect(after.calls).toEqual(['sweep', `remove ${filled}`]);
    // Nothing queued is left to run again.
    expect(after.requests).toEqual([]);
    // Its log says so, over the API.
    const { logs } = await second.caller().pitr.logs({ serviceId: service.id, restoreId: restore.id });
    expect(logs.map((l) => l.line)).toContain('Failed: cut off by a platform restart; the original database was left untouched');

    // The first platform's run, let go, cannot turn the outcome back.
    before.letGo();
    await until('the first run to end', async () => before.removed.includes(filled));
    const final = (await second.database.store.pitr.getRestore(restore.id))!;
    expect(final.status).toBe('failed');
    expect(final.error).toMatch(/cut off by a platform restart/);
  });
});
