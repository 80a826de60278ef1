import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import type { DeploymentRecord } from '../../src/domain/types.js';
import { restoredVolume } from '../../src/domain/wal-spool.js';
import { DEFAULT_PLATFORM_CONFIG } from '../../src/platform/platform-config.js';
import { LogBus } from '../../src/platform/log-bus.js';
import { SecretBox } from '../../src/platform/secret-box.js';
import { PitrRestoreJobs } from '../../src/pitr/pitr-restore-runner.js';
import { PitrService } from '../../src/pitr/pitr.service.js';
import type { RecoveryRequest } from '../../src/pitr/wal-archive.port.js';
import { databaseService } from '../helpers/backups.js';
import { createHarness, type Harness } from '../helpers/harness.js';
import { admin } from '../helpers/unit-harness.js';
import { baseBackupRecord } from '../helpers/wal-spool.js';

/**
 * PitrRestoreJobs with `replace: true` (an in-place restore), with fakes of PostgreSQL's recovery and of
 * the deployments over the store on SQLite in memory: the recovery fills a volume of its own, and the
 * original is swapped onto it only once that succeeded and the deployment there succeeded; a failed
 * recovery or a failed deployment leaves (or puts) the original on its own volume, untouched.
 */

const T0 = Date.parse('2026-11-28T10:00:00Z');
const at = (s: number) => new Date(T0 + s * 1000);
const S = (n: number) => `0000000100000000000000${n.toString(16).toUpperCase().padStart(2, '0')}`;
const prefix = DEFAULT_PLATFORM_CONFIG.resourcePrefix;

let h: Harness;
afterEach(async () => h?.close());

/** `recovery`: whether the fake recovery succeeds; `deployments`: the outcome of each deployment queued, in turn. */
async function setUp(opts: { recovery: boolean; deployments: Array<DeploymentRecord['status'] | 'refused'> }) {
  h = await createHarness();
  const { service: view } = await databaseService(h);
  const original = (await h.database.store.projects.getService(view.id))!;
  const deps = {
    store: h.database.store,
    secrets: SecretBox.fromSecret('test-secret-key-test-secret-key-0123'),
    clock: { now: () => at(200) },
    logBus: new LogBus(),
    config: DEFAULT_PLATFORM_CONFIG,
    events: { publish: async () => undefined, publishQuietly: async () => undefined } as never,
  };
  const requests: RecoveryRequest[] = [];
  const removed: string[] = [];
  const statusAtRemoval: string[] = [];
  const deployed: Array<{ serviceId: string; dataVolume: string | null }> = [];
  const lines: string[] = [];
  const outcomes = [...opts.deployments];
  const jobs = new PitrRestoreJobs(
    deps,
    {
      recovery: {
        recover: async (request) => {
          requests.push(request);
          if (!opts.recovery) throw new Error('PostgreSQL stopped during recovery (exit 1): FATAL: invalid checkpoint record');
          return { reachedAt: at(25), endOfArchive: false };
        },
        sweep: async () => [],
        removeVolume: async (volume) => {
          removed.push(volume);
          // What the restore's row said when the volume went: an old volume goes only after it ended succeeded.
          statusAtRemoval.push((await h.database.store.pitr.restoresOf(original.id, 1))[0]?.status ?? 'none');
        },
      },
      backups: { verifiedSource: async () => ({ from: 'disk', open: async () => Readable.from([]), cleanup: async () => undefined }) },
      destinations: {} as never,
      env: { resolvedFor: async () => ({ env: { POSTGRES_USER: 'app', POSTGRES_PASSWORD: 'secret-pass' } }) } as never,
      deploy: async (service) => {
        // The volume the deployment would mount is the settings' at the time it is queued.
        deployed.push({ serviceId: service.id, dataVolume: (await h.database.store.pitr.getSettings(service.id))?.dataVolume ?? null });
        const id = `DEP${deployed.length}`.padEnd(12, '0');
        const status = outcomes.shift() ?? 'succeeded';
        if (status === 'refused') throw new Error('The service is scaled to 0 replicas: set replicas to 1 or more, then deploy');
        await h.database.store.deployments.insert({
          id,
          serviceId: service.id,
          commitSha: null,
          status,
          trigger: 'manual',
          imageTag: null,
          containerName: null,
          rollbackOf: null,
          abortRequested: false,
          origin: null,
          startedAt: at(200),
          finishedAt: at(200),
          createdAt: at(200),
        });
        return id;
      },
      log: (_id, line) => void lines.push(line),
    },
    { timeoutMs: 60_000, intervalMs: 60_000, pollMs: 5 },
  );
  const runner = {
    wake: () => undefined,
    createTarget: async () => {
      throw new Error('an in-place restore makes no new service');
    },
  };
  const pitr = new PitrService(deps, { configOf: async () => null }, runner, { lagLimitSeconds: 60 });
  await pitr.put(admin, original.id, { enabled: true });
  await h.database.store.backups.insert(baseBackupRecord(original.id, 'BASE1', S(2), at(10)));
  for (const [n, s] of [
    [2, 12],
    [3, 50],
  ] as const)
    await h.database.store.pitr.insertSegment({
      id: `SEG${n}`.padEnd(12, '0'),
      serviceId: original.id,
      name: S(n),
      timeline: 1,
      walBytes: 16 << 20,
      sizeBytes: 2000,
      checksum: 'sha256:00',
      completedAt: at(s),
      storedAt: at(s + 1),
      localPath: `/w/${S(n)}`,
      objectKey: null,
      storageId: null,
    });
  const queued = await pitr.restore(admin, original.id, { at: at(30).toISOString(), replace: true, confirm: original.name });
  const own = `${prefix}-${original.id}-data`;
  const filled = restoredVolume(prefix, original.id, queued.id);
  const restore = async () => (await h.database.store.pitr.getRestore(queued.id))!;
  const dataVolume = async () => (await h.database.store.pitr.getSettings(original.id))?.dataVolume ?? null;
  return { jobs, original, requests, removed, statusAtRemoval, deployed, lines, own, filled, restore, dataVolume };
}

describe('PitrRestoreJobs, in place (replace: true)', () => {
  it('recovers into a new volume, swaps the original onto it once deployed there, and lets its old volume go', async () => {
    const t = await setUp({ recovery: true, deployments: ['succeeded'] });
    await t.jobs.pass();
    const restore = await t.restore();
    expect(restore, restore.error ?? '').toMatchObject({ status: 'succeeded', reachedAt: at(25), previousVolume: t.own, error: null });
    // The recovery never touched the original's volume: it filled one of its own, as the original's user.
    expect(t.requests.map((r) => r.volume)).toEqual([t.filled]);
    expect(t.requests[0]?.env.POSTGRES_USER).toBe('app');
    expect(t.deployed).toEqual([{ serviceId: t.original.id, dataVolume: t.filled }]);
    expect(await t.dataVolume()).toBe(t.filled);
    expect(t.removed).toEqual([t.own]);
    expect(t.statusAtRemoval).toEqual(['succeeded']);
    // The restored data is a new timeline: the next base backup is due at once.
    expect((await h.database.store.pitr.getSettings(t.original.id))?.nextBaseAt).toEqual(at(200));
    // The restore's own log (GET .../pitr/restores/:id/logs), secrets masked.
    const logged = (await h.database.store.pitr.logs(restore.id, 100)).map((l) => l.line);
    expect(logged).toEqual(t.lines);
    expect(logged.join('\n')).toMatch(/in place .* into the new volume[\s\S]*Reached [\s\S]*Swapping [\s\S]*runs on the restored data/);
    expect(logged.join('\n')).not.toContain('secret-pass');
  });

  it('a failed recovery leaves the original on its own volume, never deployed, and its half-filled volume goes', async () => {
    const t = await setUp({ recovery: false, deployments: [] });
    await t.jobs.pass();
    const restore = await t.restore();
    expect(restore.status).toBe('failed');
    expect(restore.error).toMatch(/invalid checkpoint record/);
    expect(restore.previousVolume).toBeNull();
    expect(t.deployed).toEqual([]);
    expect(await t.dataVolume()).toBeNull();
    expect(t.removed).toEqual([t.filled]);
  });

  it('a deployment on the restored data that fails puts the original back on its own volume, deployed again', async () => {
    const t = await setUp({ recovery: true, deployments: ['failed', 'succeeded'] });
    await t.jobs.pass();
    const restore = await t.restore();
    expect(restore.status).toBe('failed');
    expect(restore.error).toMatch(/did not start on the restored data \(its deployment ended failed\); it was put back on its own data/);
    expect(t.deployed).toEqual([
      { serviceId: t.original.id, dataVolume: t.filled },
      { serviceId: t.original.id, dataVolume: null },
    ]);
    expect(await t.dataVolume()).toBeNull();
    // Its own volume stays; the filled one goes.
    expect(t.removed).toEqual([t.filled]);
  });

  it('ends a restore a restart cut off while it recovered failed: the original never left its volume, the filled one goes', async () => {
    const t = await setUp({ recovery: true, deployments: [] });
    expect(
      await h.database.store.pitr.transitionRestore((await t.restore()).id, ['queued'], { status: 'running', startedAt: at(201) }),
    ).toBe(true);
    expect(await t.jobs.recover()).toBe(1);
    const after = await t.restore();
    expect(after.status).toBe('failed');
    expect(after.error).toMatch(/cut off by a platform restart; the original database was left untouched/);
    expect(await t.dataVolume()).toBeNull();
    expect(t.deployed).toEqual([]);
    expect(t.removed).toEqual([t.filled]);
    // Settled once: a second start finds nothing running.
    expect(await t.jobs.recover()).toBe(0);
  });

  it('puts an in-place restore a restart cut off during its swap back onto the volume it ran on, deployed there', async () => {
    const t = await setUp({ recovery: true, deployments: ['succeeded'] });
    const id = (await t.restore()).id;
    await h.database.store.pitr.transitionRestore(id, ['queued'], { status: 'running', startedAt: at(201), previousVolume: t.own });
    const settings = (await h.database.store.pitr.getSettings(t.original.id))!;
    await h.database.store.pitr.putSettings({ ...settings, dataVolume: t.filled });
    expect(await t.jobs.recover()).toBe(1);
    expect((await t.restore()).status).toBe('failed');
    // Back on its own volume (null: the default), deployed there, and the filled volume goes.
    expect(await t.dataVolume()).toBeNull();
    expect(t.deployed).toEqual([{ serviceId: t.original.id, dataVolume: null }]);
    expect(t.removed).toEqual([t.filled]);
  });

  it('a deployment that cannot even be queued (scaled to 0) puts the original back on its own volume too', async () => {
    const t = await setUp({ recovery: true, deployments: ['refused', 'refused'] });
    await t.jobs.pass();
    const restore = await t.restore();
    expect(restore.status).toBe('failed');
    expect(restore.error).toMatch(/did not start on the restored data \(its deployment ended without running \(The service is scaled to 0/);
    expect(await t.dataVolume()).toBeNull();
    expect(t.removed).toEqual([t.filled]);
  });
});
