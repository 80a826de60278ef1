/** The part of a better-sqlite3 statement the cache looks at. */
interface Statement {
  /** True while an iterator is open on it: it cannot run again until that ends. */
  readonly busy: boolean;
}

interface PreparingDatabase<S extends Statement> {
  prepare(sql: string): S;
}

/**
 * Keeps the statements a better-sqlite3 database prepares, by their text, the most recently used
 * `max` of them. Kysely's SQLite connection prepares every query anew, and preparing cost more than
 * running the query: in a profile of the service overview under load, `prepare` was 11% of the
 * platform's CPU. SQLite re-prepares a kept statement itself when the schema changes. A statement an
 * iterator holds is not handed out twice: that call gets a fresh one. Kept few: statements whose text
 * carries a time (MikroORM writes dates into the text) are each used once, and 500 kept ones cost some
 * 20 MB of RSS in a seeding of 2,000 deployments.
 */
export function cacheStatements<S extends Statement>(database: PreparingDatabase<S>, max = 100): void {
  const prepare = database.prepare.bind(database);
  const kept = new Map<string, S>();
  database.prepare = (sql: string): S => {
    const hit = kept.get(sql);
    if (hit) {
      if (hit.busy) return prepare(sql);
      // Re-inserted: a Map iterates in insertion order, so the first key is the least recently used.
      kept.delete(sql);
      kept.set(sql, hit);
      return hit;
    }
    const statement = prepare(sql);
    kept.set(sql, statement);
    if (kept.size > max) kept.delete(kept.keys().next().value as string);
    return statement;
  };
}
