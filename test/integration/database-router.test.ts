import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { NotFoundError, QueryError, ValidationError } from '../../src/domain/errors.js';
import type { DatabaseAdmin, DatabaseEndpoint, Row, TableRef } from '../../src/databases/database-admin.port.js';
import { errorOf } from '../helpers/caller-errors.js';
import { createHarness, type Harness } from '../helpers/harness.js';

/**
 * The database routers through createCaller, on SQLite in memory, with a fake of the DatabaseAdmin
 * port (the adapters are tested against real servers in test/integration/*-admin.test.ts and e2e).
 */
class FakeAdmin implements DatabaseAdmin {
  readonly calls: Array<{ op: string; db: DatabaseEndpoint; args: unknown[] }> = [];
  readonly users: Row[] = [
    { id: 1, name: 'ada' },
    { id: 2, name: 'grace' },
  ];
  released: string[] = [];

  private record(op: string, db: DatabaseEndpoint, ...args: unknown[]) {
    this.calls.push({ op, db, args });
  }
  private table(t: TableRef) {
    if (t.schema !== 'public' || t.name !== 'users') throw new NotFoundError('table', `${t.schema}.${t.name}`);
  }
  async checkReady() {
    return 'SELECT 1 answered (fake)';
  }
  async listTables(db: DatabaseEndpoint, options: { logicalDatabase?: number }) {
    this.record('listTables', db, options);
    return [{ id: 'public.users', name: 'users', schema: 'public', rowCount: this.users.length }];
  }
  async readRows(db: DatabaseEndpoint, table: TableRef, page: { limit: number; offset: number }) {
    this.record('readRows', db, table, page);
    this.table(table);
    return {
      columns: [
        { name: 'id', type: 'integer', primary: true },
        { name: 'name', type: 'text', primary: false },
      ],
      rows: this.users.slice(page.offset, page.offset + page.limit),
      total: this.users.length,
    };
  }
  async query(db: DatabaseEndpoint, text: string, limits: { timeoutMs: number; rowCap: number }, signal: AbortSignal) {
    this.record('query', db, text, limits, signal);
    if (text.startsWith('SELEC ')) throw new QueryError('syntax error at or near "SELEC"', { code: '42601' });
    return { columns: [{ name: 'n', type: 'integer' }], rows: [{ n: 1 }], rowCount: 1, truncated: false };
  }
  async insertRow(db: DatabaseEndpoint, table: TableRef, values: Row) {
    this.record('insertRow', db, table, values);
    this.table(table);
    this.users.push({ id: this.users.length + 1, ...values });
    return { id: this.users.length };
  }
  async updateRow(db: DatabaseEndpoint, table: TableRef, primaryKey: Row, values: Row) {
    this.record('updateRow', db, table, primaryKey, values);
    this.table(table);
    if (Object.keys(primaryKey).join() !== 'id')
      throw new ValidationError('primaryKey', 'primaryKey must name exactly the primary key columns (id)');
  }
  async deleteRow(db: DatabaseEndpoint, table: TableRef, primaryKey: Row) {
    this.record('deleteRow', db, table, primaryKey);
    this.table(table);
    if (Object.keys(primaryKey).join() !== 'id')
      throw new ValidationError('primaryKey', 'primaryKey must name exactly the primary key columns (id)');
  }
  async release(serviceId: string) {
    this.released.push(serviceId);
  }
  async closeAll() {}
}

let h: Harness;
let admin: FakeAdmin;
let running: boolean;

beforeEach(async () => {
  admin = new FakeAdmin();
  running = true;
  h = await createHarness({
    databases: { admin, locator: { locate: async () => (running ? { host: '10.9.8.7' } : null) }, limits: { timeoutMs: 1_500, rowCap: 7 } },
  });
});
afterEach(async () => {
  await h.close();
});

async function databaseService(engine = 'postgres') {
  const api = h.caller();
  const { project } = await api.projects.create({ name: `P ${Math.random()}` });
  const { service } = await api.services.create({
    projectId: project.id,
    name: 'main db',
    repoUrl: 'database',
    repoFullName: `database:${engine}`,
    branch: 'main',
    internalPort: 5432,
  });
  return { project, service };
}

describe('database administration routers', () => {
  it('lists tables, pages rows and passes the endpoint the service runs at, with its env', async () => {
    const { service } = await databaseService();
    const api = h.caller();
    expect(await api.databases.tables({ serviceId: service.id })).toEqual({
      engine: 'postgres',
      tables: [{ id: 'public.users', name: 'users', schema: 'public', rowCount: 2 }],
    });
    const db = admin.calls[0]!.db;
    expect(db).toMatchObject({ serviceId: service.id, engine: 'postgres', host: '10.9.8.7', port: 5432 });
    expect(Object.keys(db.env)).toEqual(expect.arrayContaining(['POSTGRES_DB', 'POSTGRES_USER', 'POSTGRES_PASSWORD']));

    const page = await api.databases.rows({ serviceId: service.id, table: 'public.users', limit: 1, offset: 1 });
    expect(page).toEqual({
      engine: 'postgres',
      table: 'public.users',
      columns: [
        { name: 'id', type: 'integer', primary: true },
        { name: 'name', type: 'text', primary: false },
      ],
      rows: [{ id: 2, name: 'grace' }],
      limit: 1,
      offset: 1,
      total: 2,
    });
    // Defaults: limit 50, offset 0.
    expect(await api.databases.rows({ serviceId: service.id, table: 'public.users' })).toMatchObject({ limit: 50, offset: 0 });
  });

  it('reads the Redis logical database from `database`, 0 when absent', async () => {
    const { service } = await databaseService('redis');
    await h.caller().databases.tables({ serviceId: service.id, database: 3 });
    await h.caller().databases.tables({ serviceId: service.id });
    expect(admin.calls.map((c) => c.args[0])).toEqual([{ logicalDatabase: 3 }, { logicalDatabase: 0 }]);
  });

  it('refuses limit and offset out of range, and a table that is not <schema>.<name>, naming the field', async () => {
    const { service } = await databaseService();
    const api = h.caller();
    for (const [input, field] of [
      [{ limit: 0 }, 'limit'],
      [{ limit: 501 }, 'limit'],
      [{ limit: 2.5 }, 'limit'],
      [{ offset: -1 }, 'offset'],
      [{ limit: '1e3' }, 'limit'],
    ] as const) {
      const { code, body: data } = await errorOf(
        api.databases.rows({ serviceId: service.id, table: 'public.users', ...(input as object) } as never),
      );
      expect(code).toBe('BAD_REQUEST');
      expect(data).toMatchObject({ error: 'validation_error', details: { field } });
    }
    for (const table of ['users', '.users', 'public.']) {
      const { body: data } = await errorOf(api.databases.rows({ serviceId: service.id, table }));
      expect(data).toMatchObject({ error: 'validation_error', details: { field: 'table' } });
    }
    // REST sends numbers as query text.
    expect(
      await api.databases.rows({ serviceId: service.id, table: 'public.users', limit: '1' as never, offset: '0' as never }),
    ).toMatchObject({ limit: 1, offset: 0 });
  });

  it('answers 404 for an unknown table, 400 query_error with the engine message, and passes the limits and a signal', async () => {
    const { service } = await databaseService();
    const api = h.caller();
    expect((await errorOf(api.databases.rows({ serviceId: service.id, table: 'public.nope' }))).body).toMatchObject({ error: 'not_found' });
    const failed = await errorOf(api.databases.query({ serviceId: service.id, sql: 'SELEC 1' }));
    expect(failed.code).toBe('BAD_REQUEST');
    expect(failed.body).toMatchObject({ error: 'query_error', message: 'syntax error at or near "SELEC"', details: { code: '42601' } });
    expect(await api.databases.query({ serviceId: service.id, sql: 'SELECT 1 AS n' })).toEqual({
      columns: [{ name: 'n', type: 'integer' }],
      rows: [{ n: 1 }],
      rowCount: 1,
      truncated: false,
    });
    const call = admin.calls.at(-1)!;
    expect(call.args[1]).toEqual({ timeoutMs: 1_500, rowCap: 7 });
    expect(call.args[2]).toBeInstanceOf(AbortSignal);
    expect((await errorOf(api.databases.query({ serviceId: service.id, sql: '   ' }))).body).toMatchObject({
      error: 'validation_error',
      details: { field: 'sql' },
    });
  });

  it('inserts, updates and deletes rows by primary key', async () => {
    const { service } = await databaseService();
    const api = h.caller();
    expect(await api.databases.insertRow({ serviceId: service.id, table: 'public.users', values: { name: 'linus' } })).toEqual({
      ok: true,
      table: 'public.users',
      id: 3,
    });
    expect(
      await api.databases.updateRow({ serviceId: service.id, table: 'public.users', primaryKey: { id: 3 }, values: { name: 'l' } }),
    ).toEqual({ ok: true });
    expect(await api.databases.deleteRow({ serviceId: service.id, table: 'public.users', primaryKey: { id: 3 } })).toEqual({ ok: true });
    expect(
      (await errorOf(api.databases.updateRow({ serviceId: service.id, table: 'public.users', primaryKey: {}, values: { name: 'x' } })))
        .body,
    ).toMatchObject({ details: { field: 'primaryKey' } });
    expect(
      (await errorOf(api.databases.updateRow({ serviceId: service.id, table: 'public.users', primaryKey: { id: 1 }, values: {} }))).body,
    ).toMatchObject({ details: { field: 'values' } });
    expect(
      (await errorOf(api.databases.deleteRow({ serviceId: service.id, table: 'public.users', primaryKey: { name: 'x' } }))).body,
    ).toMatchObject({ details: { field: 'primaryKey' } });
    expect(admin.calls.map((c) => c.op)).toEqual(['insertRow', 'updateRow', 'deleteRow', 'deleteRow']);
  });

  it('409 not_running when the database has no running container', async () => {
    const { service } = await databaseService();
    running = false;
    const { code, body: data } = await errorOf(h.caller().databases.tables({ serviceId: service.id }));
    expect(code).toBe('CONFLICT');
    expect(data).toMatchObject({ error: 'not_running' });
    expect(admin.calls).toEqual([]);
  });

  it("404 for a service that is not a database, and for one out of the key's scope", async () => {
    const api = h.caller();
    const { project } = await api.projects.create({ name: 'Web' });
    const { service: web } = await api.services.create({
      projectId: project.id,
      name: 'web',
      repoUrl: 'https://github.com/acme/web.git',
      repoFullName: 'acme/web',
      branch: 'main',
      internalPort: 3000,
    });
    expect((await errorOf(api.databases.tables({ serviceId: web.id }))).code).toBe('NOT_FOUND');
    const { service: db } = await databaseService();
    const other = await h.mintKey('write', [project.id]);
    expect((await errorOf(h.caller(other).databases.tables({ serviceId: db.id }))).code).toBe('NOT_FOUND');
    expect(admin.calls).toEqual([]);
  });

  it('read keys read tables and rows; query and edits need a write key', async () => {
    const { service } = await databaseService();
    const reader = h.caller(await h.mintKey('read'));
    await reader.databases.tables({ serviceId: service.id });
    await reader.databases.rows({ serviceId: service.id, table: 'public.users' });
    expect((await errorOf(reader.databases.query({ serviceId: service.id, sql: 'SELECT 1' }))).code).toBe('FORBIDDEN');
    expect((await errorOf(reader.databases.insertRow({ serviceId: service.id, table: 'public.users', values: { name: 'x' } }))).code).toBe(
      'FORBIDDEN',
    );
    expect(
      (
        await errorOf(
          reader.databases.updateRow({ serviceId: service.id, table: 'public.users', primaryKey: { id: 1 }, values: { name: 'x' } }),
        )
      ).code,
    ).toBe('FORBIDDEN');
    expect((await errorOf(reader.databases.deleteRow({ serviceId: service.id, table: 'public.users', primaryKey: { id: 1 } }))).code).toBe(
      'FORBIDDEN',
    );
    expect(admin.calls.map((c) => c.op)).toEqual(['listTables', 'readRows']);
  });

  it('closes the pools of a deleted database service', async () => {
    const { service } = await databaseService();
    await h.caller().services.delete({ serviceId: service.id });
    expect(admin.released).toEqual([service.id]);
  });
});
