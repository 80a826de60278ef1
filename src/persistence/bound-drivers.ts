import { BetterSqliteConnection, BetterSqliteDriver } from '@mikro-orm/better-sqlite';
import { JsonProperty, Utils, type Configuration, type LoggingOptions, type Transaction } from '@mikro-orm/core';
import type { Knex } from '@mikro-orm/knex';
import { PostgreSqlConnection, PostgreSqlDriver } from '@mikro-orm/postgresql';

/*
 * MikroORM 6 runs every statement of its query builder through `Platform.formatQuery`, which
 * writes each value into the SQL text as an escaped literal, and hands the result to knex as raw
 * SQL with no bindings. Escaping is not binding: SQLite stops reading a statement at a NUL byte,
 * so `description: "a\u0000b"` became a truncated statement (a 500), and every value ended up in
 * the statement text that error messages and logs carry. These connections send the same SQL with
 * its `?` placeholders and the values as bindings, so the driver binds every one of them.
 */

type Execute = (
  this: BindingConnection,
  queryOrKnex: string | Knex.QueryBuilder | Knex.Raw,
  params?: unknown[],
  method?: 'all' | 'get' | 'run',
  ctx?: Transaction,
  loggerContext?: LoggingOptions,
) => Promise<unknown>;

interface BindingConnection {
  ensureConnection(): Promise<void>;
  getKnex(): Knex;
  config: Configuration;
  executeQuery<T>(query: string, cb: () => Promise<T>, context?: LoggingOptions & { query: string; params: unknown[] }): Promise<T>;
  transformRawResult<T>(res: unknown, method: 'all' | 'get' | 'run'): T;
}

function bindingExecute(toBinding: (value: unknown, knex: Knex) => unknown): Execute {
  return async function execute(this: BindingConnection, queryOrKnex, params = [], method = 'all', ctx, loggerContext) {
    await this.ensureConnection();
    let sql: string;
    if (typeof queryOrKnex === 'string') {
      sql = queryOrKnex;
    } else {
      ctx ??= ((queryOrKnex as unknown as { client: { transacting?: boolean } }).client.transacting ? queryOrKnex : null) as Transaction | undefined;
      const native = queryOrKnex.toSQL();
      sql = native.sql;
      params = [...(native.bindings ?? [])];
    }
    sql = this.config.get('onQuery')(sql, params);
    const knex = this.getKnex();
    const bindings = params.map((value) => toBinding(value, knex));
    return this.executeQuery(
      sql,
      async () => {
        const query = bindings.length > 0 ? knex.raw(sql, bindings as Knex.RawBinding[]) : knex.raw(sql);
        if (ctx) query.transacting(ctx as Knex.Transaction);
        return this.transformRawResult(await query, method);
      },
      { query: sql, params, ...loggerContext },
    );
  };
}

/** What formatQuery would have written as a literal, as a value the driver binds instead. */
function commonBinding(value: unknown, knex: Knex): unknown {
  if (value === undefined) return null;
  if (Utils.isRawSql(value)) return knex.raw(value.sql, (value.params ?? []) as Knex.RawBinding[]);
  if (Utils.isPlainObject(value) || (value as Record<symbol, unknown> | null)?.[JsonProperty]) return JSON.stringify(value);
  return value;
}

class BoundBetterSqliteConnection extends BetterSqliteConnection {}
(BoundBetterSqliteConnection.prototype as unknown as { execute: Execute }).execute = bindingExecute((value, knex) => {
  // Dates are stored as epoch milliseconds, as the literal was.
  if (value instanceof Date) return value.getTime();
  if (typeof value === 'boolean') return value ? 1 : 0;
  return commonBinding(value, knex);
});

class BoundPostgreSqlConnection extends PostgreSqlConnection {}
(BoundPostgreSqlConnection.prototype as unknown as { execute: Execute }).execute = bindingExecute((value, knex) => {
  // As the literal was: ISO 8601 in UTC (forceUtcTimezone), cast by the server to the column's type.
  if (value instanceof Date) return value.toISOString();
  return commonBinding(value, knex);
});

type Internals = { connection: unknown; replicas: unknown[]; config: Configuration };

/** BetterSqliteDriver with every value bound. */
export class BoundBetterSqliteDriver extends BetterSqliteDriver {
  constructor(config: Configuration) {
    super(config);
    const self = this as unknown as Internals;
    self.connection = new BoundBetterSqliteConnection(self.config);
    self.replicas = [];
  }
}

/** PostgreSqlDriver with every value bound. */
export class BoundPostgreSqlDriver extends PostgreSqlDriver {
  constructor(config: Configuration) {
    super(config);
    const self = this as unknown as Internals;
    self.connection = new BoundPostgreSqlConnection(self.config);
    self.replicas = [];
  }
}
