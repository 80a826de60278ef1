import type { Configuration } from '@mikro-orm/core';
import { PostgreSqlConnection, PostgreSqlDriver } from '@mikro-orm/postgresql';
import { boundExecute, useConnection } from './bound-drivers.js';

class BoundPostgreSqlConnection extends PostgreSqlConnection {}
Object.defineProperty(BoundPostgreSqlConnection.prototype, 'execute', {
  value: boundExecute((n) => `$${n}`),
  writable: true,
  configurable: true,
});

/** PostgreSqlDriver with every string bound (see bound-drivers.ts). */
export class BoundPostgreSqlDriver extends PostgreSqlDriver {
  constructor(config: Configuration) {
    super(config);
    useConnection(this, BoundPostgreSqlConnection);
  }
}
