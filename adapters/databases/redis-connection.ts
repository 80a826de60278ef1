import { Redis } from 'ioredis';
import { DomainError, NotRunningError, QueryError } from '../../src/domain/errors.js';
import { abortable } from './abortable.js';
import { SCRIPT_KILL } from './redis-command-line.js';

/**
 * A Redis service's connections (ioredis, RESP3, user `default`, password REDIS_PASSWORD): one shared
 * connection per logical database it was asked about (chosen with the connection's `db` option, so no
 * SELECT is ever sent on a shared connection), and a few connections for the query console, each running
 * one command at a time: a blocking or slow command is cut by closing its own connection. Connections do
 * not reconnect by themselves: a dead one is replaced at the next call, so a stopped server fails fast.
 */

const DEFAULT_DATABASES = 16;

export interface Address {
  host: string;
  port: number;
  password: string | null;
}

/**
 * One service's connections. Shared connections (one per logical database asked about) carry the browser's
 * short commands; query connections run one console command each, so closing one (timeout, abort) cuts only
 * that command.
 */
export class RedisService {
  private readonly shared = new Map<number, { promise: Promise<Redis>; client: Redis | null }>();
  private readonly idleQuery: Redis[] = [];
  private queryCount = 0;
  private readonly waiting = new Set<() => void>();
  private databaseCount: Promise<number> | null = null;
  private closed = false;

  constructor(
    private readonly address: Address,
    private readonly settings: { connectTimeoutMs: number; maxQueryConnections: number },
  ) {}

  /** The shared connection of logical database `n`, replaced when it has died. */
  connection(n: number): Promise<Redis> {
    if (this.closed) return Promise.reject(new Error('Connection is closed.'));
    const entry = this.shared.get(n);
    if (entry && (entry.client === null || entry.client.status === 'ready')) return entry.promise;
    entry?.client?.disconnect();
    const fresh: { promise: Promise<Redis>; client: Redis | null } = { promise: this.open(n, 'slipway-admin'), client: null };
    this.shared.set(n, fresh);
    fresh.promise.then(
      (client) => {
        fresh.client = client;
        if (this.closed) client.disconnect();
      },
      () => {
        if (this.shared.get(n) === fresh) this.shared.delete(n);
      },
    );
    return fresh.promise;
  }

  /** How many logical databases the server has (`CONFIG GET databases`; 16 when CONFIG is not allowed). */
  databases(): Promise<number> {
    this.databaseCount ??= (async () => {
      const client = await this.connection(0);
      try {
        const reply = await client.call('config', 'get', 'databases');
        const value = Array.isArray(reply) ? reply[1] : (reply as Record<string, unknown> | null)?.databases;
        const count = Number(value);
        return Number.isInteger(count) && count > 0 ? count : DEFAULT_DATABASES;
      } catch (error) {
        if (isReplyError(error)) return DEFAULT_DATABASES;
        throw error;
      }
    })();
    this.databaseCount.catch(() => (this.databaseCount = null));
    return this.databaseCount;
  }

  /**
   * Runs one console command on database 0 on a connection of its own, cut after `timeoutMs` (from the call,
   * waiting for a connection included) or at abort by closing that connection: the server then drops a
   * blocked command; a running script is stopped with SCRIPT KILL / FUNCTION KILL (a script that has
   * written cannot be killed, as in redis-cli).
   */
  async query(command: string, args: Buffer[], timeoutMs: number, signal: AbortSignal): Promise<unknown> {
    const deadline = AbortSignal.any([signal, AbortSignal.timeout(Math.min(timeoutMs, 2_147_483_647))]);
    const failure = () =>
      signal.aborted ? signal.reason : new QueryError(`${command} timed out after ${timeoutMs} ms: its connection was closed.`);
    let client: Redis;
    try {
      client = await this.acquireQueryConnection(deadline);
    } catch (error) {
      throw deadline.aborted ? failure() : error;
    }
    const running = client.callBuffer(args[0]!.toString('utf8'), ...args.slice(1));
    try {
      const reply = await abortable(deadline, running);
      this.returnQueryConnection(client, true);
      return reply;
    } catch (error) {
      if (deadline.aborted) {
        running.catch(() => undefined);
        this.returnQueryConnection(client, false);
        const kill = SCRIPT_KILL[command];
        if (kill)
          void this.connection(0)
            .then((c) => c.call(kill, 'KILL'))
            .catch(() => undefined);
        throw failure();
      }
      // A reply error leaves the connection as it was; anything else has broken it.
      this.returnQueryConnection(client, isReplyError(error));
      throw error;
    }
  }

  private async acquireQueryConnection(signal: AbortSignal): Promise<Redis> {
    for (;;) {
      signal.throwIfAborted();
      if (this.closed) throw new Error('Connection is closed.');
      const idle = this.idleQuery.pop();
      if (idle) {
        if (idle.status === 'ready') return idle;
        this.queryCount--;
        idle.disconnect();
        continue;
      }
      if (this.queryCount < this.settings.maxQueryConnections) {
        this.queryCount++;
        const opening = this.open(0, 'slipway-query');
        try {
          return await abortable(signal, opening);
        } catch (error) {
          if (signal.aborted)
            opening.then(
              (c) => this.returnQueryConnection(c, true),
              () => this.returnQueryConnection(null, false),
            );
          else this.returnQueryConnection(null, false);
          throw error;
        }
      }
      await new Promise<void>((resolve, reject) => {
        const wake = () => {
          signal.removeEventListener('abort', stop);
          resolve();
        };
        const stop = () => {
          this.waiting.delete(wake);
          reject(signal.reason);
        };
        this.waiting.add(wake);
        signal.addEventListener('abort', stop, { once: true });
      });
    }
  }

  /** Back to the idle list when `reusable`, else closed (null: one that never opened). Wakes one waiter. */
  private returnQueryConnection(client: Redis | null, reusable: boolean): void {
    if (client && reusable && !this.closed && client.status === 'ready') this.idleQuery.push(client);
    else {
      this.queryCount--;
      client?.disconnect();
    }
    const [next] = this.waiting;
    if (next) {
      this.waiting.delete(next);
      next();
    }
  }

  private async open(db: number, name: string): Promise<Redis> {
    const client = new Redis({
      host: this.address.host,
      port: this.address.port,
      // No REDIS_PASSWORD: no AUTH at all (a server with a password then answers NOAUTH).
      username: this.address.password ? 'default' : undefined,
      password: this.address.password ?? undefined,
      db,
      connectionName: name,
      disableClientInfo: true,
      lazyConnect: true,
      connectTimeout: this.settings.connectTimeoutMs,
      // No reconnecting and no queueing: a command on a dead connection fails at once, and the next call
      // opens a new connection (or finds the server gone: NotRunningError).
      retryStrategy: () => null,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      autoResendUnfulfilledCommands: false,
      autoResubscribe: false,
      // LOADING and the like answer at once as errors rather than holding the connection back.
      enableReadyCheck: false,
      // RESP3 with plain maps (HGETALL, CONFIG GET are field -> value); integers as their digits (64-bit safe).
      replyMapping: 'resp3',
      stringNumbers: true,
    });
    let lastError: unknown = null;
    client.on('error', (error: unknown) => {
      lastError = error;
    });
    try {
      await client.connect();
    } catch (error) {
      client.disconnect();
      // ioredis rejects with "Connection is closed."; the cause (WRONGPASS, ECONNREFUSED) came as an event.
      throw lastError ?? error;
    }
    return client;
  }

  async close(): Promise<void> {
    this.closed = true;
    const shared = [...this.shared.values()];
    this.shared.clear();
    for (const client of this.idleQuery.splice(0)) client.disconnect();
    for (const wake of this.waiting) wake();
    this.waiting.clear();
    await Promise.all(
      shared.map((entry) =>
        entry.promise.then(
          (client) => client.disconnect(),
          () => undefined,
        ),
      ),
    );
  }
}

// ---- commands ----------------------------------------------------------------------------------

type Arg = string | number | Buffer;

export async function pipelined(client: Redis, commands: Array<[string, ...Arg[]]>): Promise<unknown[]> {
  const pipeline = client.pipeline();
  for (const [name, ...args] of commands) pipeline.callBuffer(name, ...args);
  return unwrap((await pipeline.exec()) ?? []);
}

export async function transaction(client: Redis, commands: Array<[string, ...Arg[]]>): Promise<unknown[]> {
  const multi = client.multi();
  for (const [name, ...args] of commands) multi.callBuffer(name, ...args);
  return unwrap((await multi.exec()) ?? []);
}

function unwrap(results: Array<[Error | null, unknown]>): unknown[] {
  return results.map(([error, value]) => {
    if (error) throw error;
    return value;
  });
}

// ---- errors ------------------------------------------------------------------------------------

export function isReplyError(error: unknown): error is Error {
  return error instanceof Error && error.name === 'ReplyError';
}

/** A failure as the port's errors: Redis's refusals are QueryError, a connection that fails NotRunningError. */
export function domainError(error: unknown, address: Address): unknown {
  if (error instanceof DomainError) return error;
  const hide = (text: string) => (address.password ? text.split(address.password).join('***') : text);
  if (isReplyError(error)) {
    if (/^(WRONGPASS|NOAUTH)\b/.test(error.message)) {
      const what = address.password
        ? 'Redis refused the password in REDIS_PASSWORD (user default)'
        : 'Redis asks for a password and the service has no REDIS_PASSWORD';
      return new QueryError(hide(`${what}: ${error.message}`));
    }
    return new QueryError(hide(error.message));
  }
  if (error instanceof Error && isConnectionError(error)) {
    return new NotRunningError(hide(`Redis at ${address.host}:${address.port} does not answer: ${error.message}`));
  }
  return error;
}

function isConnectionError(error: Error): boolean {
  const code = (error as { code?: unknown }).code;
  return (
    (typeof code === 'string' && /^E[A-Z]+$/.test(code)) ||
    error.name === 'MaxRetriesPerRequestError' ||
    /Connection is closed|enableOfflineQueue|Stream isn't writeable|connect ETIMEDOUT|RESP|Protocol error/i.test(error.message)
  );
}
