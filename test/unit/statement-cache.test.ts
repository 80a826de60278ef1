import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { cacheStatements } from '../../src/persistence/statement-cache.js';

// The better-sqlite3 that @mikro-orm/sqlite brings: the statements the platform really prepares.
const requireOrm = createRequire(createRequire(import.meta.url).resolve('@mikro-orm/sqlite'));
interface Statement {
  busy: boolean;
  all(...params: unknown[]): unknown[];
  iterate(...params: unknown[]): IterableIterator<unknown>;
  run(...params: unknown[]): unknown;
}
interface Db {
  prepare(sql: string): Statement;
  exec(sql: string): void;
  close(): void;
}
const Database = requireOrm('better-sqlite3') as new (file: string) => Db;

describe('the prepared statement cache', () => {
  it('hands back the statement it prepared for the same text, and forgets the least recently used past its size', () => {
    const db = new Database(':memory:');
    let prepared = 0;
    const prepare = db.prepare.bind(db);
    db.prepare = (sql) => {
      prepared++;
      return prepare(sql);
    };
    cacheStatements(db, 2);
    db.exec('create table t (id integer, note text)');
    db.prepare('insert into t values (?, ?)').run(1, 'one');
    db.prepare('insert into t values (?, ?)').run(2, 'two');
    expect(prepared).toBe(1);
    expect(db.prepare('select note from t where id = ?').all(2)).toEqual([{ note: 'two' }]);
    db.prepare('insert into t values (?, ?)'); // used again: now the most recent
    db.prepare('select count(*) as n from t'); // a third text: the select by id goes
    expect(prepared).toBe(3);
    db.prepare('insert into t values (?, ?)');
    expect(prepared).toBe(3);
    db.prepare('select note from t where id = ?');
    expect(prepared).toBe(4);
    db.close();
  });

  it('gives a fresh statement while an iterator holds the kept one, and sees a schema change', () => {
    const db = new Database(':memory:');
    cacheStatements(db);
    db.exec('create table t (id integer)');
    for (let i = 0; i < 3; i++) db.prepare('insert into t values (?)').run(i);
    const iterator = db.prepare('select id from t order by id').iterate();
    expect(iterator.next().value).toEqual({ id: 0 });
    // Reading the same text while the iterator is open is better-sqlite3's own refusal (the connection is busy), not a reused statement's.
    const again = db.prepare('select id from t order by id');
    expect(again.busy).toBe(false);
    iterator.return?.();
    expect(db.prepare('select id from t order by id').all()).toEqual([{ id: 0 }, { id: 1 }, { id: 2 }]);
    expect(db.prepare('select * from t where id = 1').all()).toEqual([{ id: 1 }]);
    db.exec('alter table t add column note text');
    db.exec("update t set note = 'n'");
    expect(db.prepare('select * from t where id = 1').all()).toEqual([{ id: 1, note: 'n' }]);
    db.close();
  });
});

describe('statements through the ORM on SQLite', () => {
  it('bind numbers and dates, so writes at other times reuse one statement; values read back as written', async () => {
    const { openDatabase } = await import('../../src/persistence/database.js');
    const { limitKey } = await import('../../src/accounts/auth-rate-counters.js');
    const prototype = (Database as unknown as { prototype: Db }).prototype;
    const original = prototype.prepare;
    const texts: string[] = [];
    prototype.prepare = function (this: Db, sql: string) {
      texts.push(sql);
      return original.call(this, sql);
    };
    const database = await openDatabase({ dataDir: ':memory:' });
    try {
      const at = (i: number) => new Date(Date.UTC(2026, 10, 29, 8, 0, i, 123));
      const entry = (i: number) => ({
        at: at(i),
        actorKind: 'system' as const,
        actorId: 'bench',
        userId: null,
        operation: 'services.update',
        door: 'rest' as const,
        targetIds: [`s${i}`],
        projectId: null,
        clientAddress: null,
        outcome: 'success',
      });
      await database.store.audit.append(entry(0));
      const before = texts.length;
      for (let i = 1; i <= 40; i++) await database.store.audit.append(entry(i));
      const key = limitKey('auth-attempt', 'signin', '198.51.100.7');
      for (let i = 0; i < 40; i++) await database.store.authLimits.addHit(key, 1_795_000_000 + i);
      // One statement for the 40 inserts at 40 times, a few for the 40 hits at 40 seconds: none per value.
      expect(texts.length - before).toBeLessThanOrEqual(6);

      const listed = await database.store.audit.list({ from: at(10), to: at(20) }, 100);
      expect(listed.map((r) => r.at.toISOString())).toEqual(Array.from({ length: 10 }, (_, i) => at(19 - i).toISOString()));
      expect(listed[0]!.targetIds).toEqual(['s19']);
      expect(await database.store.authLimits.hitsSince(key, 1_795_000_030)).toEqual({ total: 10, oldest: 1_795_000_030 });
    } finally {
      prototype.prepare = original;
      await database.close();
    }
  });
});
