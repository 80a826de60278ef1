import type { Configuration } from '@mikro-orm/core';
import { SqliteConnection, SqliteDriver } from '@mikro-orm/sqlite';
import { boundExecute, useConnection } from './bound-drivers.js';

class BoundSqliteConnection extends SqliteConnection {}
Object.defineProperty(BoundSqliteConnection.prototype, 'execute', { value: boundExecute(() => '?'), writable: true, configurable: true });

/** SqliteDriver with every string bound (see bound-drivers.ts). */
export class BoundSqliteDriver extends SqliteDriver {
  constructor(config: Configuration) {
    super(config);
    useConnection(this, BoundSqliteConnection);
  }
}
