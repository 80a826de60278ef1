import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import Docker from 'dockerode';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresPointInTimeRecovery } from '../../adapters/databases/postgres.point-in-time-recovery.js';
import { PostgresWalSpool } from '../../adapters/databases/postgres.wal-archive.js';
import { DockerodeContainerEngine } from '../../adapters/docker/dockerode.container-engine.js';
import { archiveMount } from '../../src/domain/wal-spool.js';
import { docker as dockerCli, provisionDocker } from '../helpers/docker.js';

/*
 * The point-in-time recovery adapters against the stand-in's PostgreSQL 15 (the image the platform runs
 * as postgres:17), started as a deployment starts it with point-in-time recovery on (the spool volume,
 * its README owned by postgres, archive_mode and the platform's archive_command): the spool listed and
 * read, a base backup with its first WAL file, and recovery in scratch containers to a second between
 * two batches of rows, and to a second after the archive's last commit (its end).
 */

const engine = new Docker();
const spool = new PostgresWalSpool(engine);
const tag = randomBytes(4).toString('hex');
const prefix = `slipway-pitrtest-${tag}`;
const recovery = new PostgresPointInTimeRecovery(engine, `pitrtest-${tag}`, prefix);
const env = { POSTGRES_DB: 'shop', POSTGRES_USER: 'shop', POSTGRES_PASSWORD: `pw-${tag}` };
const dir = mkdtempSync(path.join(tmpdir(), 'slipway-pitr-'));
const volumes: string[] = [];
let containerId: string;
let network: string;
let client: pg.Client;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(what: string, check: () => Promise<T | null | undefined>, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`${what}: not in time (${String(last)})`);
    await sleep(300);
  }
}

/** Ships the spool into `dir` the way the platform does (read, stored, removed); resolves with the names. */
async function ship(): Promise<Array<{ name: string; completedAt: Date }>> {
  const files = await spool.list(containerId, AbortSignal.timeout(30_000));
  for (const file of files) {
    const { stream, done } = await spool.read(containerId, file.name, AbortSignal.timeout(30_000));
    await pipeline(stream, createWriteStream(path.join(dir, file.name)));
    await done;
  }
  await spool.remove(
    containerId,
    files.map((f) => f.name),
    AbortSignal.timeout(30_000),
  );
  return files;
}

const archived: Array<{ name: string; completedAt: Date }> = [];
let walStart = '';

beforeAll(async () => {
  await provisionDocker({ images: 'postgres' });
  network = `${prefix}-net`;
  await dockerCli('network', 'create', network);
  const mount = archiveMount(prefix, 'db', 5);
  volumes.push(`${prefix}-db-data`, mount.volumes[0]!.name);
  const state = await new DockerodeContainerEngine(engine).runContainer({
    name: `${prefix}-db`,
    image: 'postgres:17',
    env,
    cmd: ['postgres', ...mount.args],
    labels: {},
    network,
    aliases: [],
    volumes: [{ name: `${prefix}-db-data`, target: '/var/lib/postgresql/data' }, ...mount.volumes],
    files: mount.files,
    signal: AbortSignal.timeout(60_000),
  });
  containerId = state.id;
  client = await until('postgres', async () => {
    const c = new pg.Client({
      host: state.ip!,
      port: 5432,
      ...{ user: env.POSTGRES_USER, password: env.POSTGRES_PASSWORD, database: 'shop' },
    });
    await c.connect();
    return c;
  });
}, 10 * 60_000);

afterAll(async () => {
  await client?.end().catch(() => undefined);
  await dockerCli('rm', '-f', `${prefix}-db`).catch(() => undefined);
  for (const name of (await recovery.sweep().catch(() => [])) as string[]) void name;
  await dockerCli('network', 'rm', network).catch(() => undefined);
  for (const v of volumes) await dockerCli('volume', 'rm', '-f', v).catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
});

describe('point-in-time recovery of PostgreSQL', () => {
  let second: Date;

  it('archives into the spool, says it archives, and takes a base backup that names its first WAL file', { timeout: 120_000 }, async () => {
    expect(await spool.status({ engine: 'postgres', containerId, env }, AbortSignal.timeout(30_000))).toEqual({
      archiving: true,
      failedCount: 0,
      lastFailure: null,
    });
    await client.query('CREATE TABLE ledger (id serial PRIMARY KEY, note text, at timestamptz DEFAULT clock_timestamp())');
    const base = await spool.baseBackup({ engine: 'postgres', containerId, env }, AbortSignal.timeout(120_000), () => undefined);
    await pipeline(base.stream, createWriteStream(path.join(dir, 'base.tar')));
    await base.done;
    walStart = await base.walStart;
    expect(walStart).toMatch(/^[0-9A-F]{24}$/);
    archived.push(...(await ship()));
    expect(archived.map((f) => f.name)).toContain(walStart);
    expect(archived.some((f) => f.name.endsWith('.backup'))).toBe(true);
  });

  it('recovers exactly the rows committed up to a second, the later rows and a dropped table not', { timeout: 300_000 }, async () => {
    for (let i = 1; i <= 5; i++) await client.query('INSERT INTO ledger (note) VALUES ($1)', [`before ${i}`]);
    // The second after the first batch, and a gap after it: no commit lands in it.
    await sleep(1_100 - (Date.now() % 1000));
    second = new Date(Math.floor(Date.now() / 1000) * 1000);
    await sleep(1_200);
    for (let i = 1; i <= 3; i++) await client.query('INSERT INTO ledger (note) VALUES ($1)', [`after ${i}`]);
    await client.query('CREATE TABLE later (n int)');
    await client.query('DROP TABLE ledger');
    await client.query('SELECT pg_switch_wal()');
    await until('the switched segment in the spool', async () => (await spool.list(containerId, AbortSignal.timeout(10_000))).length > 0);
    archived.push(...(await ship()));

    const rows = await recoverInto(second);
    expect(rows.result.endOfArchive).toBe(false);
    expect(rows.notes).toEqual(['before 1', 'before 2', 'before 3', 'before 4', 'before 5']);
    expect(rows.result.reachedAt!.getTime()).toBeLessThanOrEqual(second.getTime());
    expect(rows.result.reachedAt!.getTime()).toBeGreaterThan(second.getTime() - 2_000);
  });

  it('recovers to the end of the archive for a second after its last commit', { timeout: 300_000 }, async () => {
    const rows = await recoverInto(new Date(Date.now() - 500));
    expect(rows.result.endOfArchive).toBe(true);
    expect(rows.tables).toEqual(['later']);
  });
});

/** Recovers into a new volume, then starts the image on it and reads what it holds. */
async function recoverInto(at: Date) {
  const volume = `${prefix}-restored-${randomBytes(3).toString('hex')}`;
  volumes.push(volume);
  const log: string[] = [];
  const files = archived
    .filter((f) => f.name >= walStart || f.name.endsWith('.history'))
    .map((f) => ({ name: f.name, open: async () => createReadStream(path.join(dir, f.name)) as Readable }));
  const result = await recovery.recover({
    id: randomBytes(4).toString('hex'),
    image: 'postgres:17',
    env,
    volume,
    dataDir: '/var/lib/postgresql/data',
    base: createReadStream(path.join(dir, 'base.tar')),
    files,
    at,
    signal: AbortSignal.timeout(240_000),
    log: (line) => log.push(line),
  });
  const name = `${volume}-check`;
  await dockerCli(
    'run',
    '-d',
    '--name',
    name,
    '--network',
    network,
    '-v',
    `${volume}:/var/lib/postgresql/data`,
    '-e',
    `POSTGRES_PASSWORD=${env.POSTGRES_PASSWORD}`,
    'postgres:17',
  );
  try {
    const ip = await dockerCli('inspect', '-f', `{{(index .NetworkSettings.Networks "${network}").IPAddress}}`, name);
    const check = await until('the recovered server', async () => {
      const c = new pg.Client({ host: ip, port: 5432, user: env.POSTGRES_USER, password: env.POSTGRES_PASSWORD, database: 'shop' });
      await c.connect();
      return c;
    });
    try {
      const tables = (await check.query("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")).rows.map(
        (r) => r.tablename,
      );
      const notes = tables.includes('ledger') ? (await check.query('SELECT note FROM ledger ORDER BY id')).rows.map((r) => r.note) : [];
      return { result, tables, notes, log };
    } finally {
      await check.end();
    }
  } finally {
    await dockerCli('rm', '-f', name);
  }
}
