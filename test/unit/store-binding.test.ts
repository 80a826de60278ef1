import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/persistence/database.js';
import { loggableError } from '../../src/persistence/error-detail.js';

/*
 * Values reach the database as bindings, not as literals written into the SQL text: a NUL byte,
 * quotes, backslashes and `?` are stored exactly, and a failed statement is logged without them.
 */
let db: Database;
beforeAll(async () => {
  db = await openDatabase({ dataDir: ':memory:' });
});
afterAll(async () => {
  await db?.close();
});

const now = new Date('2026-01-02T03:04:05.678Z');
const project = (id: string, description: string) => ({
  id,
  name: id,
  slug: id,
  description,
  status: 'idle' as const,
  createdAt: now,
  updatedAt: now,
});

describe('store binding', () => {
  it('stores and finds a value with a NUL byte, quotes, backslashes and question marks exactly', async () => {
    const odd = 'a\u0000b \' " \\ ? ?? \\? ); drop table projects; --';
    await db.store.projects.insert(project('bindingnul000001', odd));
    const read = await db.store.projects.get('bindingnul000001');
    expect(read?.description).toBe(odd);
    expect(read?.createdAt.toISOString()).toBe(now.toISOString());
    await db.store.projects.update('bindingnul000001', { description: `${odd}!` });
    expect((await db.store.projects.get('bindingnul000001'))?.description).toBe(`${odd}!`);
    // A lookup by a value with a NUL finds nothing rather than failing.
    expect(await db.store.projects.getBySlug('binding\u0000nul')).toBeNull();
    expect(await db.store.apiKeys.getByHash('x\u0000y')).toBeNull();
  });

  it('JSON, boolean and null values round-trip', async () => {
    await db.store.apiKeys.insert({
      id: 'bindingkey000001',
      name: "o'k\u0000",
      access: 'read',
      projectIds: ['a', "b'c"],
      prefix: 'slw_x',
      tokenHash: 'h1',
      createdAt: now,
      lastUsedAt: null,
    });
    const key = await db.store.apiKeys.getByHash('h1');
    expect(key).toMatchObject({ name: "o'k\u0000", projectIds: ['a', "b'c"], lastUsedAt: null });
  });

  it('a failed statement is logged with the driver message only, never the values', async () => {
    const secret = 'sha256-of-a-token-0123456789abcdef';
    await db.store.apiKeys.insert({
      id: 'bindingkey000002',
      name: 'k',
      access: 'read',
      projectIds: null,
      prefix: 'slw_y',
      tokenHash: secret,
      createdAt: now,
      lastUsedAt: null,
    });
    const error = await db.store.projects.insert({ ...project('bindingnul000002', secret), name: null as unknown as string }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(Error);
    const logged = JSON.stringify(loggableError(error));
    expect(logged).toMatch(/NOT NULL/i);
    expect(logged).not.toContain(secret);
    expect(logged).not.toMatch(/insert into/i);
  });
});

describe('store binding on PostgreSQL', () => {
  let pgDb: Database | undefined;
  let scratch: { url: string; drop(): Promise<void> } | undefined;
  beforeAll(async () => {
    const { createScratchDatabase } = await import('../helpers/postgres.js');
    scratch = await createScratchDatabase();
    pgDb = await openDatabase({ databaseUrl: scratch.url, dataDir: ':memory:' });
  }, 60_000);
  afterAll(async () => {
    await pgDb?.close();
    await scratch?.drop();
  });

  it('stores quotes, backslashes, ? and dates exactly (PostgreSQL text cannot hold NUL; inputs refuse it)', async () => {
    const odd = '\' " \\ ? ?? \\? $1 ); drop table projects; --';
    await pgDb!.store.projects.insert(project('bindingpg0000001', odd));
    const read = await pgDb!.store.projects.get('bindingpg0000001');
    expect(read?.description).toBe(odd);
    expect(read?.createdAt.toISOString()).toBe(now.toISOString());
    await pgDb!.store.apiKeys.insert({
      id: 'bindingpgkey0001',
      name: "o'k",
      access: 'write',
      projectIds: ["b'c"],
      prefix: 'slw_z',
      tokenHash: 'pg-h1',
      createdAt: now,
      lastUsedAt: null,
    });
    expect(await pgDb!.store.apiKeys.getByHash('pg-h1')).toMatchObject({ name: "o'k", projectIds: ["b'c"], lastUsedAt: null });
    expect(await pgDb!.store.deployments.transition('nope', ['queued'], { status: 'running' })).toBe(false);
  });
});
