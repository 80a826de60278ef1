import { createServer, ServerResponse, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { appRouter } from '../../routers/app.router.js';
import type { Database } from '../../src/persistence/database.js';
import type { AppConfig } from '../composition/config.js';
import { composePlatform } from '../composition/root.js';
import type { UseCases } from '../composition/use-cases.js';
import { answerParserRejections } from './error-response.js';
import { createKoaApp } from './koa-app.js';
import { McpEndpoint } from './mcp-endpoint.js';
import { createRateLimiter } from './rate-limiter.js';
import { requestContexts } from './request-context.js';
import { SseBridge } from './sse-bridge.js';
import { TerminalSockets } from './terminal-socket.js';
import { WebhookEndpoint } from './webhook-endpoint.js';

export interface RunningServer {
  server: Server;
  url: string;
  services: UseCases;
  database: Database;
  /** The token of the key made at the first start (no BOOTSTRAP_API_KEY, empty database): to be shown once. */
  initialApiKey: string | null;
  close(): Promise<void>;
}

export function log(message: string, extra: Record<string, unknown> = {}): void {
  process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), msg: message, ...extra })}\n`);
}

/** The platform (adapters/composition) behind its HTTP doors: REST, SSE, downloads, /trpc, MCP and terminal sockets. */
export async function startServer(config: AppConfig): Promise<RunningServer> {
  // Reset links point at APP_URL, else at this API's own address once it listens.
  let ownUrl = '';
  let listeningPort = config.port;
  const platform = await composePlatform(config, { log, ownUrl: () => ownUrl, ownPort: () => listeningPort });
  const services = platform.useCases;
  const { initialApiKey } = await platform.prepare();

  const limiter = createRateLimiter({
    requestsPerMinute: config.rateLimitPerMinute,
    authFailuresPerMinute: config.authFailuresPerMinute,
    authLimits: config.accounts.authLimits,
    store: () => platform.database.store.authLimits,
    webhookDeliveriesPerMinute: () => config.platform.hooks.perAddressPerMinute,
  });
  const createContext = requestContexts({ services, limiter, trustProxy: config.trustProxy });
  const sse = new SseBridge();
  const mcp = new McpEndpoint({ createContext, publicUrl: config.publicUrl, bodyLimitBytes: config.bodyLimitBytes, version: '1.0.0' });
  const webhooks = new WebhookEndpoint();
  const app = createKoaApp({ router: appRouter, createContext, sse, mcp, webhooks, bodyLimitBytes: config.bodyLimitBytes, log });
  // Node would answer a request without a Host header with a bare 400: the app answers it with the error body (koa-app.ts).
  const server = createServer({ requireHostHeader: false }, app.callback());
  // An upgrade has no response to set a cookie on: the context gets one that is never sent.
  const terminals = new TerminalSockets({
    createContext: (req) => createContext(req, new ServerResponse(req)),
    publicUrl: config.publicUrl,
    log,
  });
  server.on('upgrade', (req, socket, head) => void terminals.upgrade(req, socket, head));
  server.keepAliveTimeout = 65_000;
  answerParserRejections(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => resolve());
  });
  platform.start();
  const address = server.address() as AddressInfo;
  listeningPort = address.port;
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  ownUrl = `http://${host}:${address.port}`;

  let closing: Promise<void> | undefined;
  return {
    server,
    url: ownUrl,
    services,
    database: platform.database,
    initialApiKey,
    close() {
      // In-flight requests finish; streams are told to end; then the database closes.
      closing ??= (async () => {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        sse.closeAll();
        mcp.closeAll();
        // Terminals' processes are killed before the platform exits (Docker would keep them running).
        await terminals.closeAll();
        await platform.stop();
        // Keep-alive connections turn idle as their last response goes out: close them as they do.
        const idleSweep = setInterval(() => server.closeIdleConnections(), 100);
        server.closeIdleConnections();
        const forced = setTimeout(() => server.closeAllConnections(), 10_000);
        await closed;
        clearInterval(idleSweep);
        clearTimeout(forced);
        await platform.close();
      })();
      return closing;
    },
  };
}
