import { DriverException } from '@mikro-orm/core';

/**
 * What may be logged of an error. A database error's message starts with the whole statement,
 * values written in by knex (a key's hash, a token, an env value): only the driver's own message
 * and codes are kept. Any other error is logged with its message and stack.
 */
export function loggableError(error: unknown): Record<string, unknown> {
  if (error instanceof DriverException) {
    const message = error.message;
    const cut = message.lastIndexOf(' - ');
    const record = error as DriverException & { code?: unknown; errno?: unknown; sqlState?: unknown };
    return {
      error: `${error.name}: ${cut === -1 ? '(statement not shown)' : message.slice(cut + 3)}`,
      code: record.code ?? record.sqlState ?? record.errno,
    };
  }
  if (error instanceof Error) return { error: error.stack ?? error.message };
  return { error: String(error) };
}
