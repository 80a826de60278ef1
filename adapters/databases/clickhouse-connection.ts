import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type net from 'node:net';
import { Readable } from 'node:stream';
import { type ClickHouseClient, type ClickHouseSettings, ClickHouseLogLevel, createClient } from '@clickhouse/client';
import type { Row } from '../../src/databases/database-admin.port.js';
import { QueryError } from '../../src/domain/errors.js';
import { isRefusal } from './clickhouse-errors.js';
import { readTsv, TSV_WITH_HEADER } from './clickhouse-tsv.js';
import { onAbort, RowCap, type SqlAdminOptions, timer } from './sql-admin-support.js';

/** What a ClickHouse server has, asked once per connection: its version decides nothing by itself, its catalog does. */
export interface ServerMeta {
  version: string;
  timezone: string;
  /** system.tables.total_rows exists (it does not in 18.16). */
  totalRows: boolean;
  /** system.columns has is_in_primary_key (and is_in_sorting_key, is_in_partition_key): 18.x on. */
  keyFlags: boolean;
  /** system.tables has sorting_key and primary_key (the key expressions' text). */
  keyExpressions: boolean;
  /** The `mutations_sync` setting exists (it does not in 18.16): an ALTER can wait for its mutation. */
  mutationsSync: boolean;
  /** Query parameters (`{name:Type}`) are bound by the server (they are not in 18.16). */
  queryParameters: boolean;
}

export interface ConnectionKey {
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
}

export interface SelectResult {
  columns: Array<{ name: string; type: string }>;
  rows: Row[];
  truncated: boolean;
  summary: Record<string, string>;
}

export interface SelectOptions {
  /** Rows beyond this are not read: the response is dropped and the statement killed. */
  cap?: number;
  timeoutMs?: number;
  /** Query parameters (`{name:Type}` in the statement), as text. */
  params?: Record<string, string>;
  settings?: ClickHouseSettings;
}

/** A user's statement the server did not stop at its own timeout (whole seconds in 18.16) is cut this much later. */
const WATCHDOG_SLACK_MS = 1_500;

/** An HTTP agent whose new sockets give up connecting after `ms`: request_timeout is an idle timeout, too long for that. */
class ConnectTimeoutAgent extends http.Agent {
  constructor(
    private readonly connectTimeoutMs: number,
    options: http.AgentOptions,
  ) {
    super(options);
  }

  override createConnection(options: http.ClientRequestArgs, callback?: (err: Error | null, stream: import('node:stream').Duplex) => void) {
    const socket = super.createConnection(options, callback) as net.Socket | null | undefined;
    if (socket?.connecting) {
      const stop = timer(this.connectTimeoutMs, () =>
        socket.destroy(Object.assign(new Error(`connect timed out after ${this.connectTimeoutMs} ms`), { code: 'ETIMEDOUT' })),
      );
      socket.once('connect', stop);
      socket.once('close', stop);
    }
    return socket;
  }
}

/**
 * One service's ClickHouse over HTTP (port 8123): a `@clickhouse/client` on a keep-alive agent of a few
 * sockets. Every statement is one request with its own id, deadline and abort; results are read as
 * TabSeparatedWithNamesAndTypes, streamed and capped.
 */
export class ClickHouseConnection {
  private meta: Promise<ServerMeta> | null = null;
  /** The server's zone, for DateTime columns without one: UTC until the server said. */
  private timezone = 'Etc/UTC';

  private constructor(
    private readonly client: ClickHouseClient,
    private readonly agent: http.Agent,
    readonly database: string,
    private readonly options: Required<SqlAdminOptions>,
  ) {}

  static open(key: ConnectionKey, options: Required<SqlAdminOptions>): ClickHouseConnection {
    const agent = new ConnectTimeoutAgent(options.connectTimeoutMs, {
      keepAlive: true,
      maxSockets: options.maxConnections,
      maxFreeSockets: options.maxConnections,
      // Below ClickHouse's own keep_alive_timeout (3 s in 18.16), so a reused socket is never one it closed.
      timeout: 2_500,
    });
    const client = createClient({
      url: `http://${key.host}:${key.port}`,
      username: key.user,
      password: key.password,
      database: key.database,
      http_agent: agent,
      max_open_connections: options.maxConnections,
      // Every call has its own deadline through its abort signal: the socket's idle timeout stays out of the way.
      request_timeout: 24 * 3_600_000,
      compression: { request: false, response: false },
      // The client would log failed requests with their queries and values: errors reach the caller instead.
      log: { level: ClickHouseLogLevel.OFF },
    });
    return new ClickHouseConnection(client, agent, key.database, options);
  }

  async close(): Promise<void> {
    await this.client.close();
    this.agent.destroy();
  }

  /** What the server has, asked on first use (again after a failure). */
  server(signal: AbortSignal): Promise<ServerMeta> {
    if (!this.meta) {
      const meta = this.askServer(signal);
      this.meta = meta;
      meta.then(
        (m) => (this.timezone = m.timezone),
        () => (this.meta = null),
      );
    }
    return this.meta;
  }

  private async askServer(signal: AbortSignal): Promise<ServerMeta> {
    // /ping answers at once on a running server: a port that accepts and then stays silent (a proxy in
    // front of nothing) is told apart here, on first contact, from a statement that takes its time.
    const deadline = AbortSignal.timeout(this.options.connectTimeoutMs);
    const reach = await this.client.ping({ select: false, abort_signal: AbortSignal.any([signal, deadline]) });
    if (!reach.success) {
      signal.throwIfAborted();
      if (deadline.aborted)
        throw Object.assign(new Error(`no answer to /ping within ${this.options.connectTimeoutMs} ms`), { code: 'ETIMEDOUT' });
      throw reach.error;
    }
    const has = (table: string, column: string) =>
      `(SELECT count() FROM system.columns WHERE database = 'system' AND table = '${table}' AND name = '${column}')`;
    const { rows } = await this.select(
      `SELECT version() AS version, timezone() AS tz, ${has('tables', 'total_rows')} AS total_rows,
              ${has('columns', 'is_in_primary_key')} AS key_flags, ${has('tables', 'primary_key')} AS key_expressions,
              (SELECT count() FROM system.settings WHERE name = 'mutations_sync') AS mutations_sync`,
      signal,
    );
    const row = rows[0]!;
    return {
      version: String(row.version),
      timezone: String(row.tz),
      totalRows: Number(row.total_rows) > 0,
      keyFlags: Number(row.key_flags) > 0,
      keyExpressions: Number(row.key_expressions) > 0,
      mutationsSync: Number(row.mutations_sync) > 0,
      queryParameters: await this.bindsParameters(signal),
    };
  }

  /** Whether the server binds query parameters: 18.16 refuses `param_p` as an unknown setting. */
  private async bindsParameters(signal: AbortSignal): Promise<boolean> {
    try {
      const { rows } = await this.select('SELECT {p:UInt8} AS ok', signal, { params: { p: '1' } });
      return rows[0]?.ok === 1;
    } catch (error) {
      signal.throwIfAborted();
      if (isRefusal(error)) return false;
      throw error;
    }
  }

  /** One statement, its result read as TabSeparatedWithNamesAndTypes into at most `cap` rows, the rest not read. */
  async select(query: string, signal: AbortSignal, options: SelectOptions = {}): Promise<SelectResult> {
    const timeoutMs = options.timeoutMs ?? this.options.internalTimeoutMs;
    return this.request(signal, timeoutMs, async ({ queryId, abortSignal, cancel }) => {
      const settings = {
        // Statements without a FORMAT clause answer in our format; DDL and INSERT answer nothing.
        default_format: TSV_WITH_HEADER,
        max_execution_time: Math.max(1, Math.ceil(timeoutMs / 1000)),
        ...options.settings,
      } as ClickHouseSettings;
      const params = options.params && Object.keys(options.params).length > 0 ? { query_params: options.params } : {};
      const result = await this.client.exec({
        query,
        clickhouse_settings: settings,
        query_id: queryId,
        abort_signal: abortSignal,
        ...params,
      });
      const cap = new RowCap(options.cap ?? Number.MAX_SAFE_INTEGER);
      const { columns } = await readTsv(result.stream, cap, this.timezone, () => {
        result.stream.destroy();
        cancel();
      });
      const summary = (result as { summary?: Record<string, string> }).summary ?? {};
      return { columns, rows: cap.rows, truncated: cap.truncated, summary };
    });
  }

  /** An `INSERT ... FORMAT JSONEachRow` with its rows (lines of JSON) as the request body: data, not SQL. */
  async insert(query: string, lines: string, signal: AbortSignal): Promise<void> {
    const timeoutMs = this.options.internalTimeoutMs;
    await this.request(signal, timeoutMs, async ({ queryId, abortSignal }) => {
      const result = await this.client.exec({
        query,
        values: Readable.from([lines]),
        query_id: queryId,
        abort_signal: abortSignal,
        clickhouse_settings: { max_execution_time: Math.ceil(timeoutMs / 1000) },
      });
      for await (const _ of result.stream) void _;
    });
  }

  /**
   * One HTTP request for one statement, with a deadline and the caller's signal. An abort or a missed
   * deadline cancels the request and kills the statement on the server by the id we gave it (KILL
   * QUERY): 18.16 computes on after its client went away, until it next writes.
   */
  private async request<T>(
    signal: AbortSignal,
    timeoutMs: number,
    run: (call: { queryId: string; abortSignal: AbortSignal; cancel: () => void }) => Promise<T>,
  ): Promise<T> {
    const controller = new AbortController();
    const queryId = randomUUID();
    const cancel = (reason: unknown) => {
      controller.abort(reason);
      void this.kill(queryId);
    };
    let timedOut = false;
    const detach = onAbort(signal, () => cancel(signal.reason));
    const stopWatchdog = timer(timeoutMs + WATCHDOG_SLACK_MS, () => {
      timedOut = true;
      cancel(new Error('timeout'));
    });
    try {
      return await run({ queryId, abortSignal: controller.signal, cancel: () => cancel(new Error('done reading')) });
    } catch (error) {
      if (signal.aborted) throw signal.reason;
      if (timedOut) throw new QueryError(`the statement ran past its timeout of ${timeoutMs} ms and was cancelled`, { code: 159 });
      throw error;
    } finally {
      stopWatchdog();
      detach();
    }
  }

  /** KILL QUERY for a statement of ours: `queryId` is a UUID we generated, never user input. */
  private async kill(queryId: string): Promise<void> {
    if (!/^[0-9a-f-]{36}$/.test(queryId)) return;
    await this.client
      .command({
        query: `KILL QUERY WHERE query_id = '${queryId}' ASYNC`,
        abort_signal: AbortSignal.timeout(this.options.connectTimeoutMs),
      })
      .catch(() => undefined);
  }
}
