import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DockerExecDatabaseDump } from '../../adapters/databases/docker-exec.database-dump.js';
import { DockerScratchDatabases } from '../../adapters/databases/docker.scratch-databases.js';
import { engineDatabaseAdmin } from '../../adapters/composition/root.js';
import type { BackupRecord } from '../../src/backups/backup.records.js';
import type { DatabaseEngine } from '../../src/domain/database-engines.js';
import type { DrillEvent } from '../../src/index.js';
import { MemoryFiles } from '../helpers/backups.js';
import { provisionDocker } from '../helpers/docker.js';
import { createHarness, type Harness } from '../helpers/harness.js';
import { admin, database } from '../helpers/unit-harness.js';

/*
 * A planted corrupt backup (bytes that are not a dump, checksummed as stored) drilled with the real
 * adapters on the real Docker engine: the scratch database (PostgreSQL's image on a private network, no
 * port published) is started, pg_restore fails with its own message, the drill ends `failed` and
 * drill.failed goes to the event outbox. One scratch container for the file. Every engine family's
 * passing drill runs on the database container its e2e backup file already deploys
 * (test/e2e/drills.test.ts for PostgreSQL, test/helpers/backup-round-trips.ts for MySQL, ClickHouse,
 * Redis and MongoDB): no source database of its own here.
 */

const run = promisify(execFile);
const docker = new Docker();
const dump = new DockerExecDatabaseDump(docker);
const adminPort = engineDatabaseAdmin();
const tag = randomBytes(3).toString('hex');
const scratch = new DockerScratchDatabases(docker, `drilltest-${tag}`, `slipway-drilltest-${tag}`);
const files = new MemoryFiles();
const events: DrillEvent[] = [];
let h: Harness;
let projectId: string;

async function docker_(...args: string[]): Promise<string> {
  return (await run('docker', args, { maxBuffer: 16 * 1024 * 1024 })).stdout.trim();
}

beforeAll(async () => {
  await provisionDocker({ images: 'postgres' });
  h = await createHarness({
    databases: { admin: adminPort },
    backups: {
      dump,
      files,
      drills: {
        scratch,
        disk: async () => null,
        publish: async (e) => {
          events.push(e);
        },
      },
    },
  });
  projectId = (await h.services.projects.create(admin, { name: 'drills', description: '' })).id;
}, 5 * 60_000);

afterAll(async () => {
  // Nothing of the drills is left: containers, networks and volumes all carry the test's prefix.
  const left = await docker_('ps', '-a', '--filter', `name=slipway-drilltest-${tag}`, '--format', '{{.Names}}');
  await adminPort.closeAll();
  await h?.close();
  expect(left).toBe('');
});

async function plant(serviceId: string, engine: DatabaseEngine, bytes: Buffer, counts: BackupRecord['counts']): Promise<BackupRecord> {
  const id = `drill${randomBytes(4).toString('hex')}`;
  const localPath = files.pathOf(serviceId, `${id}.dump`);
  files.files.set(localPath, bytes);
  const now = new Date();
  const record: BackupRecord = {
    id,
    serviceId,
    engine,
    status: 'succeeded',
    trigger: 'manual',
    storage: 'disk',
    format: dump.formatOf(engine)!,
    localPath,
    objectKey: null,
    storageId: null,
    sizeBytes: bytes.length,
    checksum: `sha256:${createHash('sha256').update(bytes).digest('hex')}`,
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
    counts,
    drill: null,
  };
  await h.database.store.backups.insert(record);
  return record;
}

async function drill(backup: BackupRecord) {
  await h.services.drills.request(admin, backup.serviceId, backup.id);
  await h.services.drills.runPass();
  return (await h.database.store.backups.get(backup.id))!.drill!;
}

describe('restore drills against a real engine', () => {
  it("fails a planted corrupt backup with pg_restore's own message, and publishes drill.failed", { timeout: 5 * 60_000 }, async () => {
    const service = await h.services.serviceCreation.create(admin, projectId, database('corrupt', 'postgres'));
    const garbage = Buffer.concat([Buffer.from('PGDMP'), randomBytes(4096)]);
    const backup = await plant(service.id, 'postgres', garbage, { unit: 'rows', expected: { 'public.orders': { min: 40, max: 40 } } });
    const result = await drill(backup);
    expect(result.status).toBe('failed');
    expect(result.checksumOk).toBe(true);
    expect(result.reason).toMatch(/^The restore failed: .*pg_restore/);
    expect(events.at(-1)).toMatchObject({ type: 'drill.failed', backupId: backup.id, reason: result.reason });
    // The outcome is an event of the outbox (what notifications and the event stream deliver).
    const outbox = await h.database.store.events.after(0, 100);
    expect(outbox.find((e) => e.type === 'drill.failed')?.data).toMatchObject({
      serviceId: service.id,
      backupId: backup.id,
      reason: result.reason,
    });
    expect(await docker_('ps', '-a', '--filter', `name=slipway-drilltest-${tag}`, '--format', '{{.Names}}')).toBe('');
  });
});
