import type { EntityManager } from '@mikro-orm/core';
import { noteCheckedRead, noteUntrackedRead, tracingReads } from '../platform/read-trace.js';
import type { WriteCounter } from './repository.js';

/**
 * What each statement the platform sends reads or writes, by table, seen where every statement passes
 * (bound-drivers.ts): a write moves its table's version once it ran, so a read cached before it (a
 * VersionedCache entry, a kept answer) is stale at once, whichever repository made the write; a read made
 * inside a traced call (src/platform/read-trace.ts) leaves a check of its tables' versions, so an answer made
 * of such reads can be sent again until one of them is written.
 */

/** The parts of a statement that matter here, from its text (as generated, values bound apart). */
interface Statement {
  kind: 'read' | 'write' | 'other';
  /** read: every table named after FROM or JOIN; write: the one written. Null when one could not be named. */
  tables: string[] | null;
}

/**
 * Another process may write the same tables (the CLI on the same SQLite file, a second control plane): a
 * read is checked for this long at most, as the API key cache is (docs/decisions.md).
 */
const CHECKED_READ_MAX_AGE_MS = 2_000;

const READ = /^\s*select\b/i;
const WRITE = /^\s*(?:insert(?:\s+or\s+\w+)?\s+into|replace\s+into|update(?:\s+or\s+\w+)?|delete\s+from)\s+([`"])([^`"]+)\1/i;
/**
 * After FROM or JOIN: a quoted table, or a parenthesis opening a subquery (whose own FROM is read in turn). A
 * quoted name followed by a dot is not one (a column, as in `extract(epoch from "d"."at")`, or a schema).
 */
const FROM_OR_JOIN = /\b(?:from|join)\s+(?:([`"])([^`"]+)\1(\s*\.)?|(\())?/gi;
/** What a statement's answer depends on besides its tables: a clock, chance, the connection's last write. */
const NOT_TABLES =
  /\b(?:now|random|randomblob|date|time|datetime|julianday|strftime|unixepoch|clock_timestamp|statement_timestamp|transaction_timestamp|timeofday|nextval|currval|gen_random_uuid|changes|total_changes|last_insert_rowid)\s*\(|\b(?:current_timestamp|current_date|current_time|localtime|localtimestamp)\b/i;

const parsed = new Map<string, Statement>();
const MAX_PARSED = 2_000;

/** The statement's kind and tables; the same texts come again and again, so each is read once. */
export function statementOf(sql: string): Statement {
  let statement = parsed.get(sql);
  if (statement) return statement;
  statement = parse(sql);
  if (parsed.size >= MAX_PARSED) parsed.delete(parsed.keys().next().value as string);
  parsed.set(sql, statement);
  return statement;
}

function parse(sql: string): Statement {
  const written = WRITE.exec(sql);
  if (written) return { kind: 'write', tables: [written[2]!] };
  if (!READ.test(sql)) return { kind: 'other', tables: null };
  if (NOT_TABLES.test(sql)) return { kind: 'read', tables: null };
  const tables = new Set<string>();
  for (const match of sql.matchAll(FROM_OR_JOIN)) {
    if (match[2] && !match[3]) tables.add(match[2]);
    else if (!match[4]) return { kind: 'read', tables: null };
  }
  return { kind: 'read', tables: tables.size > 0 ? [...tables] : null };
}

interface Watch {
  /** A table's counter key (its entity's name, as the repositories and caches name it) by table name. */
  entities: Map<string, string>;
  counter: WriteCounter;
  /** A transaction's own counter (Store.transaction moves its tables again when it ends), by its context. */
  transactions: WeakMap<object, WriteCounter>;
}

/** By connection: the driver's connection is what sees every statement, whatever entity manager sent it. */
const watches = new WeakMap<object, Watch>();

/** Watches the statements of `em`'s connection, counting writes in `counter` (the store's). */
export function watchStatements(em: EntityManager, counter: WriteCounter): void {
  const entities = new Map<string, string>();
  for (const meta of em.getMetadata().getAll().values()) {
    if (meta.tableName && meta.className) entities.set(meta.tableName, meta.className);
  }
  watches.set(em.getConnection(), { entities, counter, transactions: new WeakMap() });
}

/** Writes made in the transaction of `em` count in `counter` too. */
export function watchTransaction(em: EntityManager, counter: WriteCounter): void {
  const context = em.getTransactionContext();
  if (context) watches.get(em.getConnection())?.transactions.set(context as object, counter);
}

/**
 * Before a statement runs: a traced read leaves its check (its tables' version, taken before it runs, so a
 * write that lands meanwhile makes it stale), or makes the answer untracked. Returns what to do after it ran.
 */
export function beforeStatement(connection: object, sql: string, transaction: unknown): (() => void) | undefined {
  const watch = watches.get(connection);
  const traced = tracingReads();
  if (!watch) {
    if (traced) noteUntrackedRead();
    return undefined;
  }
  const statement = statementOf(sql);
  if (statement.kind === 'read') {
    if (traced) noteRead(watch, statement.tables);
    return undefined;
  }
  if (traced) noteUntrackedRead();
  const counter = (transaction ? watch.transactions.get(transaction as object) : undefined) ?? watch.counter;
  // A write of a table not named (DDL, a statement of another form) may have changed any.
  const entities = statement.tables?.map((table) => watch.entities.get(table)) ?? [];
  const all = statement.tables === null || entities.some((entity) => entity === undefined);
  return () => {
    for (const entity of all ? watch.entities.values() : (entities as string[])) counter.bump(entity);
  };
}

function noteRead(watch: Watch, tables: string[] | null): void {
  const entities = tables?.map((table) => watch.entities.get(table));
  if (!entities || entities.some((entity) => entity === undefined)) {
    noteUntrackedRead();
    return;
  }
  const names = entities as string[];
  const version = watch.counter.of(names);
  const at = Date.now();
  noteCheckedRead(() => watch.counter.of(names) === version && Date.now() - at <= CHECKED_READ_MAX_AGE_MS);
}
