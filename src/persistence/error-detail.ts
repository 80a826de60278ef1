import { DriverException } from '@mikro-orm/core';

/**
 * What may be logged of an error. A database error's message may start with the whole statement and
 * its values (a key's hash, a token, an env value): only the driver's own message and codes are kept.
 * Any other error is logged with its message and stack.
 */
export function loggableError(error: unknown): Record<string, unknown> {
  if (error instanceof DriverException) {
    const record = error as DriverException & { code?: unknown; errno?: unknown; sqlState?: unknown; sqlMessage?: unknown };
    const message = error.message;
    const cut = message.lastIndexOf(' - ');
    const own =
      typeof record.sqlMessage === 'string' && record.sqlMessage
        ? record.sqlMessage
        : cut !== -1
          ? message.slice(cut + 3)
          : /\b(select|insert|update|delete)\b/i.test(message)
            ? '(statement not shown)'
            : message;
    return { error: `${error.name}: ${own}`, code: record.code ?? record.sqlState ?? record.errno };
  }
  if (error instanceof Error) return { error: error.stack ?? error.message };
  return { error: String(error) };
}
