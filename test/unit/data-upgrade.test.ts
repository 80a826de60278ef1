import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/persistence/database.js';
import { SecretBox } from '../../src/platform/secret-box.js';
import { wireSource } from '../../src/projects/project-views.js';
import type { ServiceRecord } from '../../src/domain/types.js';
import { createScratchDatabase } from '../helpers/postgres.js';

/*
 * Upgrading keeps every row: data written by release 0.1.0 (MikroORM 6, better-sqlite3 11, Node 20; see
 * test/fixtures/upgrade/README.md) opens under the current persistence layer, its migrations table is
 * recognised (nothing re-runs), every record reads back as the old release read it, sealed values still
 * open with the fixture's key, and the upgraded database takes new writes.
 */
const FIXTURE = path.resolve(import.meta.dirname, '../fixtures/upgrade');
const secrets = SecretBox.fromSecret(readFileSync(path.join(FIXTURE, 'sqlite-data/secret.key'), 'utf8').trim());

interface Expected {
  projects: Array<{ id: string }>;
  services: Array<{ id: string }>;
  env: unknown[];
  domains: unknown[];
  deployments: Array<{ id: string; serviceId: string }>;
  logs: Array<{ id: number }>;
  apiKeys: unknown[];
  settings: { platform: string | null };
  plainEnv: Record<string, string>;
  emptyProjectId: string;
}

function expected(kind: 'sqlite' | 'postgresql'): Expected {
  return JSON.parse(readFileSync(path.join(FIXTURE, `${kind}-expected.json`), 'utf8')) as Expected;
}

/**
 * A service as release 0.1.0 stored it: the source in the wire's placeholder spelling (what the
 * presenter still answers with), the database settings on every service.
 */
const asOldRow = ({
  source,
  environmentId: _environmentId,
  autoDeploy: _autoDeploy,
  watchPaths: _watchPaths,
  pollIntervalSeconds: _pollIntervalSeconds,
  cancelInProgress: _cancelInProgress,
  previews: _previews,
  ...rest
}: ServiceRecord): unknown => ({ ...rest, ...wireSource(source) });

/** Records as JSON carries them (dates as ISO strings), the form the expected rows were saved in. */
const asJson = (value: unknown): unknown => JSON.parse(JSON.stringify(value));

async function checkEveryRow(database: Database, want: Expected): Promise<void> {
  const store = database.store;
  const services = await store.projects.listAllServices();
  const serviceRows = services.map(asOldRow);
  const serviceIds = services.map((s) => s.id);
  const deployments = (await Promise.all(serviceIds.map((id) => store.deployments.list(id)))).flat();
  expect(asJson(await store.projects.list(null))).toEqual(want.projects);
  // Columns added since 0.1.0 read as their default on old rows: one replica, no limits or reservations, no placement.
  expect(asJson(serviceRows)).toEqual(
    (want.services as object[]).map((s) => ({
      ...s,
      replicas: 1,
      cpuLimitMillis: null,
      memoryLimitMb: null,
      cpuReservationMillis: null,
      memoryReservationMb: null,
      placement: null,
    })),
  );
  // Every project got its first environment, `production`, with the project's id (so its network and
  // generated hostnames are the project's of before), and every service lives in its project's.
  expect(asJson(await store.environments.list(null))).toEqual(
    want.projects.map((p) => {
      const project = p as { id: string; createdAt: string };
      return { id: project.id, projectId: project.id, name: 'production', createdAt: project.createdAt, updatedAt: project.createdAt };
    }),
  );
  expect(services.map((s) => s.environmentId)).toEqual(services.map((s) => s.projectId));
  // Push to deploy's fields: on for what is built or pulled, off for databases; nothing else set.
  for (const service of services) {
    expect(service.autoDeploy).toBe(service.source.kind === 'repository' || service.source.kind === 'image');
    expect([service.watchPaths, service.pollIntervalSeconds, service.cancelInProgress, service.previews]).toEqual([[], null, false, null]);
  }
  expect(asJson(await store.env.list(serviceIds))).toEqual(want.env);
  expect(asJson(await store.domains.list(null))).toEqual(want.domains);
  // Columns added since 0.1.0 read as their empty value on old rows.
  expect(asJson(deployments)).toEqual((want.deployments as object[]).map((d) => ({ ...d, rollbackOf: null, origin: null })));
  expect(asJson((await Promise.all(deployments.map((d) => store.deployments.listLogs(d.id)))).flat())).toEqual(want.logs);
  expect(asJson(await store.apiKeys.list())).toEqual(want.apiKeys);
  expect(await store.settings.get('platform')).toEqual(want.settings.platform);
  // Every sealed value, the secret one included, still opens with the key the old release used.
  const plain = Object.fromEntries(
    (await store.env.list(serviceIds)).map((v) => [`${v.serviceId}/${v.key}`, secrets.decrypt(v.valueEncrypted)]),
  );
  expect(plain).toEqual(want.plainEnv);
  expect(Object.values(plain)).toContain('sk_live_fixture_secret_value');
  const web = services.find((s) => s.gitTokenEncrypted !== null)!;
  expect(secrets.decrypt(web.gitTokenEncrypted!)).toBe('ghp_fixtureGitToken0123456789');
  // Sanity: the fixture is not empty, so the equalities above compared something.
  expect(want.projects).toHaveLength(2);
  expect(want.services).toHaveLength(3);
  expect(want.logs.length).toBeGreaterThanOrEqual(9);
}

async function checkNewWrites(database: Database, want: Expected): Promise<void> {
  const store = database.store;
  const deployment = want.deployments[0]!;
  const [line] = await store.deployments.appendLogs(deployment.id, [
    { line: 'after the upgrade', stream: 'stdout', createdAt: new Date('2026-12-01T00:00:00.000Z') },
  ]);
  // Log ids go on from the old release's sequence: streams resume by id.
  expect(line!.id).toBeGreaterThan(Math.max(...want.logs.map((l) => l.id)));
  expect((await store.deployments.listLogs(deployment.id)).at(-1)).toMatchObject({ line: 'after the upgrade' });
  const now = new Date('2026-12-01T00:00:01.000Z');
  await store.projects.insert({
    id: 'upgradedproject1',
    name: 'After',
    slug: 'after',
    description: '',
    status: 'active',
    createdAt: now,
    updatedAt: now,
  });
  const projects = await store.projects.list(null);
  expect(projects.map((p) => p.id)).toEqual([...want.projects.map((p) => p.id), 'upgradedproject1']);
  // A unique column still refuses a duplicate written by the old release.
  await expect(
    store.projects.insert({
      id: 'upgradedproject2',
      name: 'Dup',
      slug: (projects[0] as { slug: string }).slug,
      description: '',
      status: 'active',
      createdAt: now,
      updatedAt: now,
    }),
  ).rejects.toThrow(/conflicts/);
}

describe('data written by release 0.1.0', () => {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterAll(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  it('SQLite: the data directory opens with every row intact and takes new writes', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'slipway-upgrade-'));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    // A copy: opening migrates and writes (WAL), and the checked-in bytes must stay the old release's.
    cpSync(path.join(FIXTURE, 'sqlite-data'), dataDir, { recursive: true });
    const database = await openDatabase({ dataDir });
    try {
      expect(database.kind).toBe('sqlite');
      await checkEveryRow(database, expected('sqlite'));
      await checkNewWrites(database, expected('sqlite'));
    } finally {
      await database.close();
    }
    // And again after a restart on the new release.
    const reopened = await openDatabase({ dataDir });
    try {
      expect(await reopened.store.projects.get('upgradedproject1')).toMatchObject({ name: 'After' });
    } finally {
      await reopened.close();
    }
  });

  it('PostgreSQL: a dump of the old release restores and opens with every row intact and takes new writes', async () => {
    const scratch = await createScratchDatabase();
    cleanups.push(() => scratch.drop());
    // pg_dump 15.14+ brackets its output with psql-only \restrict lines; everything else is plain SQL.
    const dump = readFileSync(path.join(FIXTURE, 'postgresql-dump.sql'), 'utf8')
      .split('\n')
      .filter((line) => !line.startsWith('\\'))
      .join('\n');
    const client = new pg.Client({ connectionString: scratch.url });
    await client.connect();
    try {
      await client.query(dump);
    } finally {
      await client.end();
    }
    const database = await openDatabase({ databaseUrl: scratch.url, dataDir: ':memory:' });
    try {
      expect(database.kind).toBe('postgresql');
      await checkEveryRow(database, expected('postgresql'));
      await checkNewWrites(database, expected('postgresql'));
    } finally {
      await database.close();
    }
  });
});
