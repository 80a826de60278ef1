import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { authenticatedCaller, type Context } from '../../routers/trpc.js';
import type { Actor } from '../../src/domain/access.js';
import { MethodNotAllowedError, NotFoundError, RateLimitedError } from '../../src/domain/errors.js';
import { assertOriginAllowed } from './origin.js';
import { readJsonBody } from './request-body.js';

export interface McpEndpointOptions {
  createContext: (req: IncomingMessage, res: ServerResponse) => Context;
  publicUrl: string | null;
  bodyLimitBytes: number;
  version: string;
}

const STREAMABLE = '/api/mcp';
const SSE = '/api/mcp/sse';
const MESSAGES = '/api/mcp/messages';
/** Open HTTP+SSE sessions: each holds a response open. */
const MAX_SSE_SESSIONS = 200;
const MAX_SSE_SESSIONS_PER_KEY = 10;
const SSE_PING_MS = 15_000;

/**
 * The MCP SDK (with its web framework and JSON-schema validator) and the tools generated from the router
 * load with the first MCP request: some 10 MB an install that never speaks MCP does not carry.
 */
let loaded:
  | Promise<{
      createMcpServer: typeof import('./mcp-server.js').createMcpServer;
      SSEServerTransport: typeof import('@modelcontextprotocol/sdk/server/sse.js').SSEServerTransport;
      StreamableHTTPServerTransport: typeof import('@modelcontextprotocol/sdk/server/streamableHttp.js').StreamableHTTPServerTransport;
    }>
  | undefined;
function mcpModules() {
  loaded ??= Promise.all([
    import('./mcp-server.js'),
    import('@modelcontextprotocol/sdk/server/sse.js'),
    import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
  ]).then(([server, sse, streamable]) => ({
    createMcpServer: server.createMcpServer,
    SSEServerTransport: sse.SSEServerTransport,
    StreamableHTTPServerTransport: streamable.StreamableHTTPServerTransport,
  }));
  return loaded;
}

interface SseSession {
  transport: SSEServerTransport;
  /** The bearer token's hash: only the caller who opened the session may post to it. */
  tokenHash: string;
  keyId: string;
  close(): void;
}

/**
 * The tool-protocol endpoint: the streamable HTTP transport at /api/mcp (stateless: every POST is
 * a whole exchange, so nothing is held between requests) and the older HTTP+SSE transport at
 * /api/mcp/sse with its message endpoint. The caller's bearer key decides everything, as over REST.
 */
export class McpEndpoint {
  private readonly sessions = new Map<string, SseSession>();

  constructor(private readonly opts: McpEndpointOptions) {}

  static matches(pathname: string): boolean {
    return pathname === STREAMABLE || pathname === SSE || pathname === MESSAGES;
  }

  async handle(req: IncomingMessage, res: ServerResponse, pathname: string): Promise<void> {
    const ctx = this.opts.createContext(req, res);
    const actor = await authenticatedCaller(ctx);
    assertOriginAllowed(req, this.opts.publicUrl);
    const method = req.method ?? 'GET';
    const context = () => this.opts.createContext(req, res);
    const { createMcpServer, StreamableHTTPServerTransport } = await mcpModules();
    if (pathname === STREAMABLE) {
      // Stateless: there is no session stream to GET and no session to DELETE.
      if (method !== 'POST') throw methodNotAllowed(res, 'POST', method, pathname);
      const body = await readJsonBody(req, this.opts.bodyLimitBytes);
      const server = createMcpServer(actor, context, this.opts.version);
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: false });
      res.on('close', () => {
        void transport.close();
        void server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(req, res, body);
      return;
    }
    if (pathname === SSE) {
      if (method !== 'GET') throw methodNotAllowed(res, 'GET', method, pathname);
      await this.openSession(req, res, ctx, actor, context);
      return;
    }
    if (method !== 'POST') throw methodNotAllowed(res, 'POST', method, pathname);
    const sessionId = new URL(req.url ?? '/', 'http://mcp.invalid').searchParams.get('sessionId') ?? '';
    const session = this.sessions.get(sessionId);
    // Another key's session does not exist for this one.
    if (!session || session.tokenHash !== hash(ctx.token)) throw new NotFoundError('MCP session', sessionId.slice(0, 100));
    const body = await readJsonBody(req, this.opts.bodyLimitBytes);
    await session.transport.handlePostMessage(req, res, body);
  }

  /** Ends every HTTP+SSE session (shutdown). */
  closeAll(): void {
    for (const session of [...this.sessions.values()]) session.close();
  }

  private async openSession(req: IncomingMessage, res: ServerResponse, ctx: Context, actor: Actor, context: () => Context): Promise<void> {
    const mine = [...this.sessions.values()].filter((s) => s.keyId === actor.keyId).length;
    if (this.sessions.size >= MAX_SSE_SESSIONS || mine >= MAX_SSE_SESSIONS_PER_KEY) {
      throw new RateLimitedError(`At most ${MAX_SSE_SESSIONS_PER_KEY} MCP SSE sessions may be open at once per key`, 5);
    }
    const { createMcpServer, SSEServerTransport } = await mcpModules();
    const transport = new SSEServerTransport(MESSAGES, res);
    const server = createMcpServer(actor, context, this.opts.version);
    const ping = setInterval(() => {
      if (!res.writableEnded) res.write(': ping\n\n');
    }, SSE_PING_MS);
    const session: SseSession = {
      transport,
      tokenHash: hash(ctx.token),
      keyId: actor.keyId,
      close: () => {
        clearInterval(ping);
        this.sessions.delete(transport.sessionId);
        void server.close();
        if (!res.writableEnded) res.end();
      },
    };
    this.sessions.set(transport.sessionId, session);
    res.on('close', session.close);
    req.socket.setTimeout(0);
    void server.connect(transport);
  }
}

function methodNotAllowed(res: ServerResponse, allow: string, method: string, pathname: string): MethodNotAllowedError {
  res.setHeader('Allow', allow);
  return new MethodNotAllowedError(`${pathname} answers ${allow} only, not ${method.slice(0, 20)}`);
}

function hash(token: string | undefined): string {
  return createHash('sha256')
    .update(token ?? '')
    .digest('hex');
}
