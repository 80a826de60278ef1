import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import Docker from 'dockerode';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DockerExecDatabaseDump } from '../../adapters/databases/docker-exec.database-dump.js';
import { DockerScratchDatabases } from '../../adapters/databases/docker.scratch-databases.js';
import { engineDatabaseAdmin } from '../../adapters/composition/root.js';
import type { BackupRecord } from '../../src/backups/backup.records.js';
import { expectationOf } from '../../src/backups/drill-counts.js';
import { type DatabaseEngine, ENGINE_SPECS } from '../../src/domain/database-engines.js';
import { DEFAULT_PLATFORM_CONFIG, type DrillEvent } from '../../src/index.js';
import { MemoryFiles } from '../helpers/backups.js';
import { provisionDocker } from '../helpers/docker.js';
import { createHarness, type Harness } from '../helpers/harness.js';
import { admin, database } from '../helpers/unit-harness.js';

/*
 * Restore drills with their real adapters on the real Docker engine: for every engine family but PostgreSQL
 * (its drill is test/e2e/drills.test.ts's, over HTTP), a database container of the image production runs (here the stand-ins) seeded through the platform's
 * own DatabaseAdmin, dumped and counted by the platform's tools, then drilled: the scratch database
 * (the engine's image on a private network, no port published), the restore with the engine's tool,
 * the readiness check and the counts are all real. Then a planted corrupt backup (bytes that are not
 * a dump, checksummed as stored) failing with pg_restore's own message and a drill.failed event.
 */

const run = promisify(execFile);
const docker = new Docker();
const dump = new DockerExecDatabaseDump(docker);
const adminPort = engineDatabaseAdmin();
const tag = randomBytes(3).toString('hex');
const scratch = new DockerScratchDatabases(docker, `drilltest-${tag}`, `slipway-drilltest-${tag}`);
const files = new MemoryFiles();
const events: DrillEvent[] = [];
const started: string[] = [];
let h: Harness;
let projectId: string;
const sources = new Map<DatabaseEngine, Awaited<ReturnType<typeof source>>>();

async function docker_(...args: string[]): Promise<string> {
  return (await run('docker', args, { maxBuffer: 16 * 1024 * 1024 })).stdout.trim();
}

beforeAll(async () => {
  await provisionDocker({ images: 'postgres,mysql,redis,clickhouse,mongo' });
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
  // The sources start together (their engines' starts are the slow part); the drills then run one at a time.
  const engines = Object.keys(SEEDS) as Array<keyof typeof SEEDS>;
  const ready = await Promise.all(engines.map((engine) => source(engine)));
  engines.forEach((engine, i) => sources.set(engine, ready[i]!));
}, 20 * 60_000);

afterAll(async () => {
  await Promise.all(started.map((name) => docker_('rm', '-f', '-v', name).catch(() => undefined)));
  // Nothing of the drills is left: containers, networks and volumes all carry the test's prefix.
  const left = await docker_('ps', '-a', '--filter', `name=slipway-drilltest-${tag}`, '--format', '{{.Names}}');
  await adminPort.closeAll();
  await h?.close();
  expect(left).toBe('');
});

/** A database service of the platform, its container started as a deployment starts it (the service's env, the engine's command). */
async function source(engine: DatabaseEngine) {
  const service = await h.services.serviceCreation.create(admin, projectId, database(`${engine} src`, engine));
  const env = await h.envValues(service.id);
  const spec = ENGINE_SPECS[engine];
  const name = `slipway-drillsrc-${tag}-${engine}`;
  started.push(name);
  const image = DEFAULT_PLATFORM_CONFIG.databases.images[engine];
  const id = await docker_(
    'run',
    '-d',
    '--init',
    '--name',
    name,
    ...Object.entries(env).flatMap(([k, v]) => ['-e', `${k}=${v}`]),
    image,
    ...(spec.command?.({ logicalReplication: false }) ?? []),
  );
  const host = await docker_('inspect', '-f', '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}', id);
  const endpoint = { serviceId: service.id, engine, host, port: spec.internalPort, env };
  const deadline = Date.now() + 180_000;
  for (;;) {
    try {
      await adminPort.checkReady(endpoint, AbortSignal.timeout(10_000));
      break;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
  const query = async (text: string) => adminPort.query(endpoint, text, { timeoutMs: 30_000, rowCap: 100 }, AbortSignal.timeout(60_000));
  return { service, env, id, host, query };
}

/** A backup of the source as the backup job makes one: counted, dumped, stored, checksummed. */
async function backUp(src: Awaited<ReturnType<typeof source>>, engine: DatabaseEngine): Promise<BackupRecord> {
  const target = { engine, containerId: src.id, env: src.env };
  const counted = await dump.count!({ ...target, host: src.host }, AbortSignal.timeout(60_000), () => {});
  const running = await dump.dump(target, AbortSignal.timeout(120_000), () => {});
  const parts: Buffer[] = [];
  await pipeline(
    running.stream,
    new Writable({
      write(chunk, _e, cb) {
        parts.push(chunk);
        cb();
      },
    }),
  );
  await running.done;
  return plant(src.service.id, engine, Buffer.concat(parts), expectationOf(counted, counted));
}

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

/*
 * PostgreSQL's drill (dump, psql counts with a quoted table name, scratch restore, pass) is proven over
 * real HTTP in test/e2e/drills.test.ts; TimescaleDB shares its adapters. Here: the other families, and
 * PostgreSQL's own message for a corrupt dump.
 */
const SEEDS: Record<Exclude<DatabaseEngine, 'timescale' | 'postgres'>, string[]> = {
  mysql: [
    'CREATE TABLE orders (id int PRIMARY KEY, note varchar(40))',
    "INSERT INTO orders VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'), (5, 'e')",
    'CREATE TABLE empty_one (id int)',
  ],
  redis: ['SET order:1 a', 'SET order:2 b', 'HSET user:1 name ann', 'RPUSH queue x y z', 'SET session:1 s EX 86400'],
  mongodb: [
    '{"insert": "orders", "documents": [{"n": 1}, {"n": 2}, {"n": 3}, {"n": 4}]}',
    '{"insert": "users", "documents": [{"name": "ann"}, {"name": "bob"}]}',
  ],
  clickhouse: [
    'CREATE TABLE orders (id UInt32, note String) ENGINE = MergeTree ORDER BY id',
    "INSERT INTO orders VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'), (5, 'e'), (6, 'f')",
  ],
};

describe('restore drills against real engines', () => {
  for (const engine of Object.keys(SEEDS) as Array<keyof typeof SEEDS>) {
    it(`${engine}: restores the backup into a scratch database and finds what it counted`, { timeout: 8 * 60_000 }, async () => {
      const src = sources.get(engine)!;
      for (const statement of SEEDS[engine]) await src.query(statement);
      const backup = await backUp(src, engine);
      expect(Object.values(backup.counts!.expected).some((r) => r.max > 0)).toBe(true);
      const result = await drill(backup);
      const logs = (await h.database.store.backups.listLogs(backup.id)).map((l) => l.line);
      expect(result.status, `${result.reason}\n${logs.join('\n')}`).toBe('passed');
      expect(result.checksumOk).toBe(true);
      for (const [name, { min, max }] of Object.entries(backup.counts!.expected)) {
        expect(result.counts![name] ?? 0, name).toBeGreaterThanOrEqual(min);
        expect(result.counts![name] ?? 0, name).toBeLessThanOrEqual(max);
      }
      expect(events.at(-1)).toMatchObject({ type: 'drill.passed', backupId: backup.id });
      // The scratch database is gone, and it never published a port.
      expect(logs.some((l) => /no port published/.test(l))).toBe(true);
      expect(await docker_('ps', '-a', '--filter', `name=slipway-drilltest-${tag}`, '--format', '{{.Names}}')).toBe('');
      await docker_('rm', '-f', '-v', `slipway-drillsrc-${tag}-${engine}`);
    });
  }

  it("fails a planted corrupt backup with pg_restore's own message, and publishes drill.failed", { timeout: 5 * 60_000 }, async () => {
    const service = await h.services.serviceCreation.create(admin, projectId, database('corrupt', 'postgres'));
    const garbage = Buffer.concat([Buffer.from('PGDMP'), randomBytes(4096)]);
    const backup = await plant(service.id, 'postgres', garbage, { unit: 'rows', expected: { 'public.orders': { min: 40, max: 40 } } });
    const result = await drill(backup);
    expect(result.status).toBe('failed');
    expect(result.checksumOk).toBe(true);
    expect(result.reason).toMatch(/^The restore failed: .*pg_restore/);
    expect(events.at(-1)).toMatchObject({ type: 'drill.failed', backupId: backup.id, reason: result.reason });
  });
});
