import type { Configuration, Dictionary } from '@mikro-orm/core';
import { SqliteConnection, SqliteDriver } from '@mikro-orm/sqlite';
import { boundExecute, useConnection } from './bound-drivers.js';
import { cacheStatements } from './statement-cache.js';

class BoundSqliteConnection extends SqliteConnection {
  override createKyselyDialect(options: Dictionary) {
    const dialect = super.createKyselyDialect(options);
    // The better-sqlite3 database the dialect was just given (private in the type, a plain field at runtime).
    cacheStatements((this as unknown as { database: Parameters<typeof cacheStatements>[0] }).database);
    return dialect;
  }
}
/**
 * better-sqlite3 binds a JavaScript number as a REAL: an integer goes as a BigInt, which it binds as an INTEGER,
 * exactly what the literal MikroORM would have written is (a REAL in a column without affinity, or in typeof(),
 * would not be).
 */
const sqliteNumber = (n: number): number | bigint => (Number.isSafeInteger(n) ? BigInt(n) : n);
Object.defineProperty(BoundSqliteConnection.prototype, 'execute', {
  value: boundExecute(() => '?', sqliteNumber),
  writable: true,
  configurable: true,
});

/** SqliteDriver with every string bound (see bound-drivers.ts). */
export class BoundSqliteDriver extends SqliteDriver {
  constructor(config: Configuration) {
    super(config);
    useConnection(this, BoundSqliteConnection);
  }
}
