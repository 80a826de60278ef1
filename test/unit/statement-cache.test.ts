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
