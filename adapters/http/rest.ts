import type { IncomingMessage, ServerResponse } from 'node:http';
import { createOpenApiNodeHttpHandler } from 'trpc-to-openapi';
import type { AppRouter } from '../../routers/app.router.js';
import { ERRORS, type Context, type ErrorBody } from '../../routers/trpc.js';
import { errorBodyOf, sendError, sendErrorAndClose } from './error-response.js';
import { PayloadTooLargeError, readJsonBody } from './request-body.js';
import { DomainError } from '../../src/domain/errors.js';

export type BodyErrorCarrier = IncomingMessage & { slipwayBodyError?: DomainError };

/**
 * The documented REST paths, served by trpc-to-openapi from the same procedures as the typed
 * client. This wrapper owns what the library leaves open: body parsing, 201 for creations,
 * and the spec's `{error, message, details}` body in place of the library's own.
 */
export function createRestHandler(opts: {
  router: AppRouter;
  createContext: (req: IncomingMessage) => Context;
  bodyLimitBytes: number;
  onInternalError: (error: unknown, path: string | undefined) => void;
}): (req: IncomingMessage, res: ServerResponse) => Promise<boolean> {
  const createdPaths = new Set(
    Object.entries(opts.router._def.procedures)
      .filter(([, procedure]) => (procedure as { _def: { meta?: { created?: boolean } } })._def.meta?.created)
      .map(([path]) => path),
  );
  const handler = createOpenApiNodeHttpHandler({
    router: opts.router,
    createContext: ({ req }) => opts.createContext(req),
    responseMeta: ({ paths, errors }) => (errors.length === 0 && paths?.some((p) => createdPaths.has(p)) ? { status: 201 } : {}),
    onError: ({ error, path }) => {
      if (error.code === 'INTERNAL_SERVER_ERROR') opts.onInternalError(error.cause ?? error, path);
    },
  });

  /** Resolves false when no procedure owns the path, so the caller can answer 404 itself. */
  return async (req, res) => {
    try {
      const body = await readJsonBody(req, opts.bodyLimitBytes);
      if (body !== undefined) {
        (req as IncomingMessage & { body?: unknown }).body = body;
        req.headers['content-type'] = 'application/json';
      }
    } catch (error) {
      if (error instanceof PayloadTooLargeError || !(error instanceof DomainError)) {
        // Refused before the key is read; the unread rest of the body means the connection cannot be reused.
        const { status, body } = errorBodyOf(error);
        if (error instanceof PayloadTooLargeError) sendErrorAndClose(res, status, body);
        else sendError(res, status, body);
        return true;
      }
      // An unreadable body (bad JSON, too deep, not JSON at all) is reported by the procedure, after the key and its access were checked.
      (req as IncomingMessage & { body?: unknown }).body = {};
      (req as BodyErrorCarrier).slipwayBodyError = error;
      req.headers['content-type'] = 'application/json';
    }
    rewriteErrorBodies(res);
    let matched = true;
    await handler(req, res, () => {
      matched = false;
    });
    return matched;
  };
}

/** trpc-to-openapi writes `{message, code, issues, data}`; users were promised `{error, message, details}`. */
function rewriteErrorBodies(res: ServerResponse): void {
  const end = res.end.bind(res) as (chunk?: unknown) => ServerResponse;
  res.end = ((chunk?: unknown) => {
    if (res.statusCode >= 400 && typeof chunk === 'string') {
      try {
        const parsed = JSON.parse(chunk) as { data?: Partial<ErrorBody> };
        const data = parsed.data;
        if (data?.error) {
          const body: ErrorBody = { error: data.error, message: data.message ?? '', details: data.details ?? {} };
          res.statusCode = ERRORS[body.error].http;
          const retryAfter = body.details.retryAfterSeconds;
          if (typeof retryAfter === 'number') res.setHeader('Retry-After', String(retryAfter));
          return end(JSON.stringify(body));
        }
      } catch {
        // Not ours to rewrite: send as is.
      }
    }
    return end(chunk);
  }) as typeof res.end;
}
