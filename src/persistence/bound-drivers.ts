import type { Configuration, Platform, Transaction } from '@mikro-orm/core';
import { CompiledQuery } from 'kysely';
import { beforeStatement } from './statement-tables.js';

/*
 * MikroORM (6 and 7 alike) runs each statement through `Platform.formatQuery`, which writes every value
 * into the SQL text as an escaped literal and sends no parameters. Escaping is not binding: SQLite
 * stops reading a statement at a NUL byte, so `description: "a\u0000b"` became a truncated statement
 * (a 500), and every value ended up in the statement text that errors carry. These connections send
 * strings, the values users type, as bound parameters; the rest (numbers, dates, booleans, JSON the
 * platform serialises, raw fragments) is written as MikroORM writes it.
 */

interface Prepared {
  query: string;
  params: unknown[];
  formatted: string;
}

interface ConnectionInternals {
  ensureConnection(): Promise<void>;
  prepareQuery(query: unknown, params?: unknown[]): Prepared;
  getSql(query: string, formatted: string, loggerContext?: unknown): string;
  executeQuery<T>(sql: string, cb: () => Promise<T>, context?: unknown): Promise<T>;
  transformRawResult<T>(res: unknown, method: 'all' | 'get' | 'run'): T;
  getClient(): { executeQuery(query: CompiledQuery, abort?: unknown): Promise<unknown> };
  readonly platform: Platform;
}

/** A plain decimal number, as `quoteValue` writes numbers (no exponent, no sign but a minus, at most 15 digits: exact as a double). */
const NUMBER_LITERAL = /^-?\d{1,15}(\.\d{1,15})?$/;

/** formatQuery's walk over `?` (value), `??` (identifier) and `\?` (a literal `?`), binding strings. */
export function bindStrings(
  platform: Platform,
  sql: string,
  params: readonly unknown[],
  placeholder: (n: number) => string,
  bindNumber?: (n: number) => unknown,
): { sql: string; parameters: unknown[] } {
  const parameters: unknown[] = [];
  if (params.length === 0) return { sql, parameters };
  let j = 0;
  let out = '';
  const value = (v: unknown) => {
    if (typeof v !== 'string') {
      const literal = String(platform.quoteValue(v));
      // A number literal (a number, or a date as MikroORM writes it: its epoch milliseconds) is bound as the number it says.
      if (bindNumber && NUMBER_LITERAL.test(literal)) {
        parameters.push(bindNumber(Number(literal)));
        return placeholder(parameters.length);
      }
      return literal;
    }
    parameters.push(v);
    return placeholder(parameters.length);
  };
  let pos = 0;
  if (sql.startsWith('??')) {
    out += platform.quoteIdentifier(params[j++] as string);
    pos = 2;
  } else if (sql.startsWith('?')) {
    out += value(params[j++]);
    pos = 1;
  }
  while (pos < sql.length) {
    const idx = sql.indexOf('?', pos + 1);
    if (idx === -1) {
      out += sql.substring(pos);
      break;
    }
    if (sql.substring(idx - 1, idx + 1) === '\\?') {
      out += `${sql.substring(pos, idx - 1)}?`;
      pos = idx + 1;
    } else if (sql.substring(idx, idx + 2) === '??') {
      out += sql.substring(pos, idx) + platform.quoteIdentifier(params[j++] as string);
      pos = idx + 2;
    } else {
      out += sql.substring(pos, idx) + value(params[j++]);
      pos = idx + 1;
    }
  }
  return { sql: out, parameters };
}

/** Cancellation controls ride on the logger context (see AbstractSqlConnection): passed on, not logged. */
function splitAbort(loggerContext: Record<string, unknown> | undefined): { abort?: unknown; rest?: Record<string, unknown> } {
  if (loggerContext?.signal == null && loggerContext?.inflightQueryAbortStrategy == null) return { rest: loggerContext };
  const { signal, inflightQueryAbortStrategy, ...rest } = loggerContext;
  return { abort: { signal, inflightQueryAbortStrategy }, rest };
}

/**
 * `bindNumber`: numbers and dates (what MikroORM writes as a number) are bound too, as it converts them. SQLite's connection keeps its prepared statements by
 * their text (statement-cache.ts): with every time and count written into the text, nearly each write was a
 * statement of its own (2,805 texts of 2,835 statements in a seeding of 200 deployments), prepared, used once and
 * freed only when a full GC finalised it, so that seeding 4,000 deployments left 288 MB of the C heap behind
 * (JavaScript's live heap after it: 38 MB).
 */
export function boundExecute(placeholder: (n: number) => string, bindNumber?: (n: number) => unknown) {
  return async function execute(
    this: ConnectionInternals,
    query: unknown,
    params: unknown[] = [],
    method: 'all' | 'get' | 'run' = 'all',
    ctx?: Transaction,
    loggerContext?: Record<string, unknown>,
  ): Promise<unknown> {
    await this.ensureConnection();
    const q = this.prepareQuery(query, params);
    const sql = this.getSql(q.query, q.formatted, loggerContext);
    const { abort, rest } = splitAbort(loggerContext);
    // What it reads is checked later, what it writes is counted once it ran (statement-tables.ts).
    const ran = beforeStatement(this, q.query, ctx);
    try {
      return await this.executeQuery(
        sql,
        async () => {
          const bound = bindStrings(this.platform, q.query, q.params, placeholder, bindNumber);
          const client = (ctx as unknown as ReturnType<ConnectionInternals['getClient']> | undefined) ?? this.getClient();
          const res = await client.executeQuery(CompiledQuery.raw(bound.sql, bound.parameters), abort);
          return this.transformRawResult(res, method);
        },
        { ...q, ...rest },
      );
    } finally {
      ran?.();
    }
  };
}

type DriverInternals = { connection: unknown; replicas: unknown[]; config: Configuration };

/** Swaps the driver's connection for the binding one (no replicas are configured). */
export function useConnection(driver: object, Connection: new (config: Configuration) => unknown): void {
  const self = driver as DriverInternals;
  self.connection = new Connection(self.config);
  self.replicas = [];
}
