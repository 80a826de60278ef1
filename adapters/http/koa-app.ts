import type { IncomingMessage, ServerResponse } from 'node:http';
import Koa from 'koa';
import { TRPCError } from '@trpc/server';
import { createHTTPHandler } from '@trpc/server/adapters/standalone';
import type { AppRouter } from '../../routers/app.router.js';
import { trpcErrorOf, type Context } from '../../routers/trpc.js';
import { closeAfterResponse, errorBodyOf, sendError, sendErrorAndClose } from './error-response.js';
import { PayloadTooLargeError, readTrpcBody } from './request-body.js';
import { DomainError } from '../../src/domain/errors.js';
import { loggableError } from '../../src/persistence/error-detail.js';
import { hostProblem, pathProblem } from './path-guard.js';
import { createRestHandler } from './rest.js';
import { serveDownload } from './download-bridge.js';
import type { SseBridge } from './sse-bridge.js';
import { McpEndpoint } from './mcp-endpoint.js';
import { DashboardFiles } from './dashboard-static.js';
import { WebhookEndpoint } from './webhook-endpoint.js';

export interface KoaAppOptions {
  router: AppRouter;
  createContext: (req: IncomingMessage, res: ServerResponse) => Context;
  sse: SseBridge;
  /** The tool-protocol endpoint (/api/mcp, /api/mcp/sse, /api/mcp/messages). */
  mcp?: McpEndpoint;
  /** The public push-to-deploy endpoint (POST /api/hooks/<projectId>). */
  webhooks?: WebhookEndpoint;
  bodyLimitBytes: number;
  log: (message: string, extra?: Record<string, unknown>) => void;
  /** The web dashboard at `/` (dashboard-static.ts); by default the build in dist/dashboard when there is one, null for none. */
  dashboard?: DashboardFiles | null;
}

/**
 * Three doors onto one router: REST (each procedure's meta.openapi) and SSE under /api, tRPC for the typed
 * client under /trpc, plus the generated document and its reference page.
 */
export function createKoaApp(opts: KoaAppOptions): Koa {
  const app = new Koa();
  // Never a database statement's values: see loggableError.
  const onInternalError = (error: unknown, path: string | undefined) => opts.log('internal error', { path, ...loggableError(error) });
  const rest = createRestHandler({ router: opts.router, bodyLimitBytes: opts.bodyLimitBytes });
  const trpc = createHTTPHandler({
    router: opts.router,
    basePath: '/trpc/',
    createContext: ({ req, res }) => opts.createContext(req, res),
    // REST's size and depth limits, before tRPC parses anything: a refusal is every call's error, in tRPC's envelope.
    middleware: (req, res, next) => {
      readTrpcBody(req, opts.bodyLimitBytes).then(
        (body) => {
          if (body !== undefined) (req as IncomingMessage & { body?: string }).body = body;
          next();
        },
        (error: unknown) => {
          (req as IncomingMessage & { body?: string }).body = '';
          // Too large: the rest of the body is not read, so the connection cannot be reused (as REST's 413).
          if (error instanceof PayloadTooLargeError) closeAfterResponse(res);
          next(error instanceof DomainError ? trpcErrorOf(error) : error);
        },
      );
    },
    onError: ({ error, path }) => {
      if (error.code === 'INTERNAL_SERVER_ERROR') onInternalError(error.cause ?? error, path);
    },
  });
  const dashboard = opts.dashboard === undefined ? DashboardFiles.fromBuild() : opts.dashboard;
  let docCache: Promise<{ json: string; html: string }> | undefined;
  // The document's generator (trpc-to-openapi's, with zod-openapi, openapi3-ts and yaml) loads on the
  // first request for it: an idle platform does not hold it (issue 32).
  const documents = () =>
    (docCache ??= import('./openapi.js')
      .then(({ buildOpenApiDocument, renderDocsPage }) => {
        const doc = buildOpenApiDocument(opts.router, '/');
        return { json: JSON.stringify(doc), html: renderDocsPage(doc) };
      })
      .catch((error: unknown) => {
        docCache = undefined; // a failure is not kept: the next request tries again
        throw error;
      }));

  // Every error of REST and SSE is answered here with the spec's body and the status of its code.
  // Anything but a known error is our fault: a 500 without detail, and the cause in our log.
  const answerError = (res: ServerResponse, error: unknown, path: string) => {
    const { status, body } = errorBodyOf(error);
    if (status === 500) onInternalError(error instanceof TRPCError ? (error.cause ?? error) : error, path);
    if (res.headersSent) res.destroy();
    // A 413 is sent before the body was read to its end: the connection cannot be reused.
    else if (status === 413) sendErrorAndClose(res, status, body);
    else sendError(res, status, body);
  };
  app.use(async (ctx, next) => {
    try {
      await next();
    } catch (error) {
      answerError(ctx.res, error, ctx.path);
    }
  });
  app.silent = true;

  // Before anything builds a URL or an origin from it: an HTTP/1.1 request needs a usable Host header.
  app.use(async (ctx, next) => {
    const problem = hostProblem(ctx.req);
    if (problem) {
      ctx.respond = false;
      sendErrorAndClose(ctx.res, 400, { error: 'validation_error', message: problem, details: { field: 'host' } });
      return;
    }
    await next();
  });

  // Before any routing: path parameters are opaque segments, never `.`/`..` or encoded separators.
  app.use(async (ctx, next) => {
    const problem = pathProblem(ctx.req.url ?? '/');
    if (problem) {
      ctx.respond = false;
      const path = ctx.path.length > 2048 ? `${ctx.path.slice(0, 2048)}...` : ctx.path;
      sendError(ctx.res, 400, { error: 'validation_error', message: `Invalid request path: ${problem}`, details: { field: 'path', path } });
      return;
    }
    await next();
  });

  app.use(async (ctx) => {
    const { req, res } = ctx;
    const pathname = ctx.path;
    if (ctx.method === 'GET' && pathname === '/api/openapi.json') {
      ctx.type = 'application/json';
      ctx.body = (await documents()).json;
      return;
    }
    if (ctx.method === 'GET' && (pathname === '/api/docs' || pathname === '/api/docs/')) {
      ctx.type = 'text/html';
      ctx.body = (await documents()).html;
      return;
    }
    // The doors write the raw response themselves; koa sets 404 before handlers run.
    ctx.respond = false;
    res.statusCode = 200;
    if (pathname === '/trpc' || pathname.startsWith('/trpc/')) {
      trpc(req, res);
      return;
    }
    if (opts.mcp && McpEndpoint.matches(pathname)) {
      await opts.mcp.handle(req, res, pathname);
      return;
    }
    if (pathname.startsWith('/api/') || pathname === '/api') {
      // The procedures' context, once per request, whichever of the doors below serves it.
      const context = opts.createContext(req, res);
      if (!keptTried.has(req) && (await rest.kept(req, res, context))) return;
      if (opts.webhooks && WebhookEndpoint.matches(pathname)) {
        await opts.webhooks.handle(req, res, pathname, context);
        return;
      }
      const sseRoute = opts.sse.match(ctx.method, pathname);
      if (sseRoute) {
        await opts.sse.serve(sseRoute, req, res, context, new URL(ctx.href));
        return;
      }
      if (await serveDownload(ctx.method, pathname, res, context)) return;
      if (await rest(req, res, context)) return;
    }
    // Last: the dashboard never shadows the API (it ignores /api and /trpc), and its misses stay the API's 404.
    if (dashboard?.serve(req, res, pathname)) return;
    sendError(res, 404, { error: 'not_found', message: `No route for ${ctx.method} ${pathname}`, details: {} });
  });

  // A kept answer (answer-cache.ts) goes out before koa builds its request objects: a small list's whole cost is
  // then little more than the HTTP exchange (issue 32). The same Host and path checks come first (a problem is
  // koa's to answer), the same context, and the same error answers; a miss goes on through koa, not tried twice.
  const keptTried = new WeakSet<IncomingMessage>();
  const koaCallback = app.callback.bind(app);
  app.callback = () => {
    const handle = koaCallback();
    return (req, res) => {
      const request = req as IncomingMessage;
      const response = res as ServerResponse;
      const target = request.url ?? '/';
      if (!target.startsWith('/api/') || !rest.mayKeep(request) || hostProblem(request) || pathProblem(target)) return handle(req, res);
      keptTried.add(request);
      return rest.kept(request, response, opts.createContext(request, response)).then(
        (sent) => (sent ? undefined : handle(req, res)),
        (error: unknown) => answerError(response, error, target.split('?')[0]!),
      );
    };
  };
  return app;
}
