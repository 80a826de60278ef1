import { ValidationError } from '../../src/domain/errors.js';

/**
 * The query console's command line: one Redis command, split like redis-cli splits it (its `sdssplitargs`),
 * never through a shell. Arguments are bytes, since `\xHH` can write any byte.
 *
 * - Unquoted: a word ends at whitespace.
 * - Double quotes: `\"`, `\\`, `\n`, `\r`, `\t`, `\b`, `\a` and `\xHH` (two hex digits) are escapes; `\` before
 *   anything else gives that character.
 * - Single quotes: literal, except `\'` for a quote.
 * - A closing quote must be followed by whitespace or the end; an unclosed quote is refused.
 * - One command per query: a line break outside quotes (after trimming the text) is refused, so a pasted
 *   second command is never silently read as arguments of the first.
 */
export function splitCommandLine(text: string): Buffer[] {
  const chars = Array.from(text.trim());
  const args: Buffer[] = [];
  let i = 0;
  const isSpace = (c: string | undefined) => c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\v' || c === '\f';
  const isHex = (c: string | undefined) => c !== undefined && /^[0-9a-fA-F]$/.test(c);
  const refuse = (message: string) => new ValidationError('sql', message);

  while (i < chars.length) {
    const c = chars[i]!;
    if (isSpace(c)) {
      if (c === '\n' || c === '\r') throw refuse('One command per query: the text has a line break outside quotes.');
      i++;
      continue;
    }
    const parts: Array<string | Buffer> = [];
    let quote: '"' | "'" | null = null;
    for (;;) {
      const ch = chars[i];
      if (quote === '"') {
        if (ch === undefined) throw refuse('Unbalanced quotes: a double quote is not closed.');
        if (ch === '\\' && chars[i + 1] === 'x' && isHex(chars[i + 2]) && isHex(chars[i + 3])) {
          parts.push(Buffer.from([parseInt(chars[i + 2]! + chars[i + 3]!, 16)]));
          i += 4;
        } else if (ch === '\\' && i + 1 < chars.length) {
          const escaped = chars[i + 1]!;
          parts.push({ n: '\n', r: '\r', t: '\t', b: '\b', a: '\x07' }[escaped] ?? escaped);
          i += 2;
        } else if (ch === '"') {
          if (i + 1 < chars.length && !isSpace(chars[i + 1])) throw refuse('A closing double quote must be followed by a space.');
          i++;
          break;
        } else {
          parts.push(ch);
          i++;
        }
      } else if (quote === "'") {
        if (ch === undefined) throw refuse('Unbalanced quotes: a single quote is not closed.');
        if (ch === '\\' && chars[i + 1] === "'") {
          parts.push("'");
          i += 2;
        } else if (ch === "'") {
          if (i + 1 < chars.length && !isSpace(chars[i + 1])) throw refuse('A closing single quote must be followed by a space.');
          i++;
          break;
        } else {
          parts.push(ch);
          i++;
        }
      } else {
        if (ch === undefined || isSpace(ch)) break;
        if (ch === '"' || ch === "'") quote = ch;
        else parts.push(ch);
        i++;
      }
    }
    args.push(Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : p))));
  }
  return args;
}

const TAKES_OVER = 'it takes over the connection (the console sends one command and reads one reply)';
const STATE = 'it changes the state of the connection the console shares';
const TRANSACTION = 'a transaction needs several commands and a query is one command: use EVAL for atomic work';
const SERVER = 'it endangers the server or its data';
const LOCKOUT = 'it can lock the platform out of the database (its password comes from REDIS_PASSWORD)';

/**
 * Commands the console refuses, with why (a deny-list: everything else, FLUSHALL and FLUSHDB included, is the
 * database owner's business). Blocking commands (BLPOP, XREAD BLOCK, WAIT...) are allowed: the query timeout
 * closes the connection they block, which unblocks them on the server.
 */
const DENIED: Record<string, string> = {
  SUBSCRIBE: TAKES_OVER,
  PSUBSCRIBE: TAKES_OVER,
  SSUBSCRIBE: TAKES_OVER,
  UNSUBSCRIBE: TAKES_OVER,
  PUNSUBSCRIBE: TAKES_OVER,
  SUNSUBSCRIBE: TAKES_OVER,
  MONITOR: TAKES_OVER,
  SYNC: TAKES_OVER,
  PSYNC: TAKES_OVER,
  REPLCONF: TAKES_OVER,
  QUIT: STATE,
  RESET: STATE,
  AUTH: STATE,
  HELLO: STATE,
  READONLY: STATE,
  READWRITE: STATE,
  SELECT: 'queries run on logical database 0; name keys of other databases in the table browser, or use MOVE/COPY ... DB n',
  MULTI: TRANSACTION,
  EXEC: TRANSACTION,
  DISCARD: TRANSACTION,
  WATCH: TRANSACTION,
  UNWATCH: TRANSACTION,
  SHUTDOWN: SERVER,
  DEBUG: SERVER,
  REPLICAOF: SERVER,
  SLAVEOF: SERVER,
  FAILOVER: SERVER,
  MODULE: SERVER,
};

/** Subcommands denied of commands that are otherwise allowed. */
const DENIED_SUBCOMMANDS: Record<string, Record<string, string>> = {
  CONFIG: { SET: LOCKOUT, REWRITE: SERVER },
  ACL: { SETUSER: LOCKOUT, DELUSER: LOCKOUT, LOAD: LOCKOUT, SAVE: SERVER },
};

/** CLIENT is allowed only to look: KILL, PAUSE, REPLY, TRACKING, NO-EVICT... act on connections, the platform's too. */
const CLIENT_ALLOWED = new Set(['LIST', 'INFO', 'ID', 'GETNAME', 'GETREDIR', 'TRACKINGINFO', 'HELP']);

/** Throws `ValidationError('sql', ...)` for a denied command; returns its upper-case name otherwise. */
export function checkCommand(args: Buffer[]): string {
  if (args.length === 0) throw new ValidationError('sql', 'The query is empty: give one Redis command, e.g. GET key.');
  const name = args[0]!.toString('utf8').toUpperCase();
  const sub = args[1]?.toString('utf8').toUpperCase();
  const why =
    DENIED[name] ??
    (sub !== undefined ? DENIED_SUBCOMMANDS[name]?.[sub] : undefined) ??
    (name === 'CLIENT' && !(sub !== undefined && CLIENT_ALLOWED.has(sub))
      ? 'only CLIENT LIST, INFO, ID, GETNAME, GETREDIR and TRACKINGINFO are allowed'
      : undefined);
  if (why) {
    const shown = name === 'CLIENT' || (sub !== undefined && DENIED_SUBCOMMANDS[name]?.[sub]) ? `${name} ${sub ?? ''}`.trim() : name;
    throw new ValidationError('sql', `${shown} is not allowed in the query console: ${why}.`, { command: shown });
  }
  return name;
}

/** Commands whose run can be stopped on the server with SCRIPT KILL / FUNCTION KILL after a timeout. */
export const SCRIPT_KILL: Record<string, string> = {
  EVAL: 'SCRIPT',
  EVALSHA: 'SCRIPT',
  EVAL_RO: 'SCRIPT',
  EVALSHA_RO: 'SCRIPT',
  FCALL: 'FUNCTION',
  FCALL_RO: 'FUNCTION',
};
