import { STATUS_CODES, type IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { RawData, WebSocket, WebSocketServer } from 'ws';
import { authenticatedCaller, type Context } from '../../routers/trpc.js';
import { ValidationError } from '../../src/domain/errors.js';
import type { Actor } from '../../src/domain/access.js';
import { parseTerminalPath, type PreparedTerminal, type TerminalService } from '../../src/terminals/terminal.service.js';
import type { TerminalProcess } from '../../src/terminals/terminal-engine.port.js';
import { errorBodyOf } from './error-response.js';
import { assertOriginAllowed } from './origin.js';
import { hostProblem, pathProblem } from './path-guard.js';

export interface TerminalSocketOptions {
  createContext: (req: IncomingMessage) => Context;
  /** `PUBLIC_URL`: the only origin a browser may open a terminal from; null allows the request's own host. */
  publicUrl: string | null;
  log: (message: string, extra?: Record<string, unknown>) => void;
}

const QUERY_FIELDS = new Set(['ticket', 'command', 'cols', 'rows']);
/** Output waiting for a slow client: above it the container's output is paused until the client reads. */
const HIGH_WATER_BYTES = 256 * 1024;
const LOW_WATER_BYTES = 64 * 1024;
/** Keystrokes and control messages are small; a paste is split by the client. */
const MAX_MESSAGE_BYTES = 64 * 1024;
const PING_MS = 30_000;

const resizeMessage = (value: unknown): { cols: number; rows: number } | null => {
  const message = value as { type?: unknown; cols?: unknown; rows?: unknown };
  const valid = (n: unknown) => Number.isInteger(n) && (n as number) >= 1 && (n as number) <= 1000;
  return message?.type === 'resize' && valid(message.cols) && valid(message.rows)
    ? { cols: message.cols as number, rows: message.rows as number }
    : null;
};

/**
 * Container terminals over WebSocket. Every check happens before the upgrade and refuses with the
 * API's `{error, message, details}` body and status; after it, binary frames carry the terminal's
 * bytes both ways and text frames carry JSON control messages (docs/terminals-and-mcp.md).
 */
export class TerminalSockets {
  /** Made on the first terminal: the ws package (27 modules) is not loaded by a platform that never opens one (issue 32). */
  private wss: Promise<WebSocketServer> | null = null;
  private readonly live = new Set<() => Promise<void>>();

  constructor(private readonly opts: TerminalSocketOptions) {}

  /** Every upgrade request of the server: those that are not a terminal's get a 404. */
  async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    socket.on('error', () => socket.destroy());
    let prepared: PreparedTerminal;
    let terminals: TerminalService;
    let release: () => void;
    let size: { cols: number; rows: number };
    let wss: WebSocketServer;
    try {
      const hostIssue = hostProblem(req);
      if (hostIssue) throw new ValidationError('host', hostIssue);
      const problem = pathProblem(req.url ?? '/');
      if (problem) throw new ValidationError('path', `Invalid request path: ${problem}`);
      const url = new URL(req.url ?? '/', 'http://terminal.invalid');
      const target = parseTerminalPath(url.pathname);
      if (!target) {
        refuse(socket, 404, { error: 'not_found', message: `No route for ${req.method} ${url.pathname.slice(0, 2048)}`, details: {} });
        return;
      }
      const ctx = this.opts.createContext(req);
      terminals = ctx.services.terminals;
      const actor = await this.authenticate(ctx, url);
      assertOriginAllowed(req, this.opts.publicUrl);
      terminals.authorize(actor);
      for (const key of url.searchParams.keys()) if (!QUERY_FIELDS.has(key)) throw new ValidationError(key, `${key}: unknown field`);
      size = { cols: dimension(url, 'cols', 80), rows: dimension(url, 'rows', 24) };
      const command = url.searchParams.get('command') ?? undefined;
      prepared = await terminals.prepare(actor, target, command, AbortSignal.timeout(15_000));
      wss = await this.webSocketServer();
      release = terminals.acquire(actor.keyId);
    } catch (error) {
      const { status, body } = errorBodyOf(error);
      if (status === 500) this.opts.log('internal error', { path: 'terminal upgrade', error: String(error) });
      refuse(socket, status, body);
      return;
    }
    // A handshake ws refuses (or a client gone meanwhile) never reaches serve(): its place is given back here.
    socket.once('close', release);
    wss.handleUpgrade(req, socket, head, (ws) => {
      void this.serve(ws, terminals, prepared, size, release);
    });
  }

  private webSocketServer(): Promise<WebSocketServer> {
    this.wss ??= import('ws').then(
      ({ WebSocketServer }) => new WebSocketServer({ noServer: true, maxPayload: MAX_MESSAGE_BYTES, perMessageDeflate: false }),
    );
    // A failed load is tried again by the next terminal, not remembered.
    this.wss.catch(() => (this.wss = null));
    return this.wss;
  }

  /** Ends every terminal (shutdown): resolves once their processes are killed. */
  async closeAll(): Promise<void> {
    await Promise.all([...this.live].map((close) => close()));
  }

  /** A single-use ticket in the query string, or the bearer key as for every other request. */
  private async authenticate(ctx: Context, url: URL): Promise<Actor> {
    const ticket = url.searchParams.get('ticket');
    if (ticket !== null) {
      let actor: Actor;
      try {
        actor = ctx.services.terminals.redeemTicket(ticket, url.pathname);
      } catch (error) {
        await ctx.limiter.recordAuthFailure(ctx.ip);
        throw error;
      }
      ctx.limiter.assertRequestAllowed(actor.keyId);
      return actor;
    }
    return authenticatedCaller(ctx);
  }

  private async serve(
    ws: WebSocket,
    terminals: TerminalService,
    prepared: PreparedTerminal,
    size: { cols: number; rows: number },
    release: () => void,
  ): Promise<void> {
    const abort = new AbortController();
    let proc: TerminalProcess | null = null;
    let finished = false;
    let idleTimer: NodeJS.Timeout | undefined;
    const sendControl = (message: Record<string, unknown>) => {
      if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(message));
    };
    const finish = async (reason: { code: number; text: string }, exit?: { reason?: string }) => {
      if (finished) return;
      finished = true;
      clearTimeout(idleTimer);
      clearInterval(ping);
      this.live.delete(closeNow);
      abort.abort();
      try {
        if (proc) {
          if (exit) {
            await proc.kill().catch(() => {});
            sendControl({ type: 'exit', code: await proc.exitCode().catch(() => null), ...exit });
          } else await proc.kill().catch(() => {});
        }
      } finally {
        release();
        if (ws.readyState === ws.OPEN) ws.close(reason.code, reason.text);
        else ws.terminate();
      }
    };
    const closeNow = () => finish({ code: 1001, text: 'server shutting down' }, { reason: 'shutdown' });
    this.live.add(closeNow);
    const touch = () => {
      clearTimeout(idleTimer);
      idleTimer = setTimeout(
        () => void finish({ code: 1000, text: 'idle timeout' }, { reason: 'idle_timeout' }),
        terminals.limits.idleTimeoutMs,
      );
    };
    // A peer that vanished without a close frame is noticed by the missing pong.
    let alive = true;
    const ping = setInterval(() => {
      if (!alive) return void finish({ code: 1001, text: 'no pong' });
      alive = false;
      ws.ping();
    }, PING_MS);
    ws.on('pong', () => (alive = true));
    ws.on('close', () => void finish({ code: 1000, text: 'closed' }));
    ws.on('error', () => void finish({ code: 1011, text: 'socket error' }));
    touch();

    // Frames that arrive while the process starts wait for it (the client may type at once).
    const early: Array<{ data: RawData; isBinary: boolean }> = [];
    const onMessage = (data: RawData, isBinary: boolean) => {
      touch();
      if (!proc) {
        // Bounded: a client that floods before the shell exists loses the excess, never our memory.
        if (early.length < 64) early.push({ data, isBinary });
        return;
      }
      const stream = proc.stream;
      const bytes = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as ArrayBuffer);
      if (isBinary) return void this.input(ws, stream, bytes);
      let message: unknown;
      try {
        message = JSON.parse(bytes.toString('utf8'));
      } catch {
        return sendControl({
          type: 'error',
          error: 'validation_error',
          message: 'text frames are JSON control messages',
          details: { field: 'message' },
        });
      }
      const resize = resizeMessage(message);
      if (resize) return void proc.resize(resize.cols, resize.rows).catch(() => {});
      const input = message as { type?: unknown; data?: unknown };
      if (input?.type === 'input' && typeof input.data === 'string') return void this.input(ws, stream, Buffer.from(input.data, 'utf8'));
      sendControl({
        type: 'error',
        error: 'validation_error',
        message: 'expected {type: "resize", cols, rows} (1-1000) or {type: "input", data}',
        details: { field: 'type' },
      });
    };
    ws.on('message', onMessage);

    let started: TerminalProcess;
    try {
      started = await terminals.start(prepared, size, abort.signal);
    } catch (error) {
      const { status, body } = errorBodyOf(error);
      if (status === 500) this.opts.log('terminal exec failed', { container: prepared.containerName, error: String(error).slice(0, 500) });
      sendControl({ type: 'error', ...body });
      return void finish({ code: 1011, text: 'exec failed' });
    }
    if (finished) {
      await started.kill().catch(() => {});
      return;
    }
    proc = started;
    const { stream } = started;

    // Backpressure: bytes handed to ws but not yet written to the client's socket pause the output.
    let pending = 0;
    stream.on('data', (chunk: Buffer) => {
      touch();
      pending += chunk.length;
      ws.send(chunk, { binary: true }, () => {
        pending -= chunk.length;
        if (pending <= LOW_WATER_BYTES && stream.isPaused()) stream.resume();
      });
      if (pending > HIGH_WATER_BYTES) stream.pause();
    });
    stream.on('end', () => void finish({ code: 1000, text: 'exited' }, {}));
    stream.on('error', () => void finish({ code: 1000, text: 'exited' }, {}));
    for (const message of early.splice(0)) onMessage(message.data, message.isBinary);
  }

  /** Keystrokes to the process; a process that does not read pauses the socket (TCP then slows the client). */
  private input(ws: WebSocket, stream: Duplex, bytes: Buffer): void {
    if (!stream.writable) return;
    if (!stream.write(bytes)) {
      ws.pause();
      stream.once('drain', () => ws.resume());
    }
  }
}

function dimension(url: URL, name: string, fallback: number): number {
  const raw = url.searchParams.get(name);
  if (raw === null) return fallback;
  if (!/^\d{1,4}$/.test(raw) || Number(raw) < 1 || Number(raw) > 1000)
    throw new ValidationError(name, `${name}: an integer from 1 to 1000`);
  return Number(raw);
}

/** An HTTP answer on the raw socket of an upgrade request that is refused. */
function refuse(socket: Duplex, status: number, body: { error: string; message: string; details: Record<string, unknown> }): void {
  if (!socket.writable) return void socket.destroy();
  const text = JSON.stringify(body);
  const retryAfter = body.details.retryAfterSeconds;
  socket.end(
    [
      `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}`,
      'Content-Type: application/json',
      `Content-Length: ${Buffer.byteLength(text)}`,
      ...(status === 429 && typeof retryAfter === 'number' ? [`Retry-After: ${retryAfter}`] : []),
      'Connection: close',
      '',
      text,
    ].join('\r\n'),
  );
}
