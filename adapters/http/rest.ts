import type { IncomingMessage, ServerResponse } from 'node:http';
import { createOpenApiNodeHttpHandler } from 'trpc-to-openapi';
import type { AppRouter } from '../../routers/app.router.js';
import { proceduresOf, unreadableBody, type Context } from '../../routers/trpc.js';
import { PayloadTooLargeError, readJsonBody } from './request-body.js';
import { DomainError } from '../../src/domain/errors.js';

/**
 * The documented REST paths, served by trpc-to-openapi from the same procedures as the typed
 * client. This wrapper owns what the library leaves open: body parsing and 201 for creations.
 * Errors are thrown to the app, which answers them with the spec's `{error, message, details}` (koa-app.ts).
 */
export function createRestHandler(opts: {
  router: AppRouter;
  createContext: (req: IncomingMessage, res: ServerResponse) => Context;
  bodyLimitBytes: number;
}): (req: IncomingMessage, res: ServerResponse) => Promise<boolean> {
  const createdPaths = new Set(
    proceduresOf(opts.router)
      .filter(({ meta }) => meta.created)
      .map(({ path }) => path),
  );
  const handler = createOpenApiNodeHttpHandler({
    router: opts.router,
    createContext: ({ req, res }) => opts.createContext(req, res as ServerResponse),
    responseMeta: ({ paths, errors }) => {
      // The library writes an error as its own `{message, code, issues}` and has no option for that
      // body: the error leaves it here, before anything is written.
      if (errors[0]) throw errors[0];
      return paths?.some((p) => createdPaths.has(p)) ? { status: 201 } : {};
    },
  });

  /** Resolves false when no procedure owns the path, so the caller can answer 404 itself. */
  return async (req, res) => {
    let body: unknown;
    try {
      body = await readJsonBody(req, opts.bodyLimitBytes);
    } catch (error) {
      // Too large: refused before the key is read, and the connection is closed (koa-app.ts).
      if (error instanceof PayloadTooLargeError || !(error instanceof DomainError)) throw error;
      // Unreadable (bad JSON, too deep, not JSON at all): reported by the procedure, after the key and its access.
      body = unreadableBody(error);
    }
    if (body !== undefined) {
      (req as IncomingMessage & { body?: unknown }).body = body;
      req.headers['content-type'] = 'application/json';
      // The library reads a DELETE's input from the query only; a JSON body (DELETE .../database/rows
      // names its row by an object) joins the query parameters, as the library's own `req.query`.
      if (req.method === 'DELETE' && isPlainObject(body)) {
        const query = Object.fromEntries(new URL(req.url ?? '/', 'http://x').searchParams);
        (req as IncomingMessage & { query?: unknown }).query = { ...query, ...body };
      }
    }
    let matched = true;
    await handler(req, res, () => {
      matched = false;
    });
    return matched;
  };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && Object.getPrototypeOf(value) === Object.prototype;
}
