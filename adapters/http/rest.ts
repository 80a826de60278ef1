import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AnyTRPCProcedure } from '@trpc/server';
import type { OpenApiMethod } from 'trpc-to-openapi';
import { inputPlanOf, PathTemplate, restInputOf } from './rest-inputs.js';
import { createCaller, type AppRouter } from '../../routers/app.router.js';
import { proceduresOf, unreadableBody, type Context } from '../../routers/trpc.js';
import { PayloadTooLargeError, readJsonBody } from './request-body.js';
import { DomainError } from '../../src/domain/errors.js';

interface RestRoute {
  template: PathTemplate;
  /** The procedure's path in the router (`services.update`). */
  path: string;
  procedure: AnyTRPCProcedure;
  created: boolean;
}

/**
 * The documented REST paths (each procedure's `meta.openapi`), served from the same procedures as the
 * typed client, as trpc-to-openapi documents them: path parameters, then the JSON body (or the query of
 * a GET or DELETE) as the input, text read as the schema's numbers and booleans (rest-inputs.ts). 201 for
 * creations. Errors are thrown to the app, which answers every door's the same way (koa-app.ts).
 */
export function createRestHandler(opts: {
  router: AppRouter;
  bodyLimitBytes: number;
}): (req: IncomingMessage, res: ServerResponse, ctx: Context) => Promise<boolean> {
  const routes = new Map<string, RestRoute[]>();
  for (const { path, meta } of proceduresOf(opts.router)) {
    const procedure = (opts.router._def.procedures as unknown as Record<string, AnyTRPCProcedure>)[path]!;
    if (!meta.openapi || procedure._def.type === 'subscription') continue;
    const method = meta.openapi.method;
    routes.set(method, [
      ...(routes.get(method) ?? []),
      { template: new PathTemplate(meta.openapi.path), path, procedure, created: meta.created === true },
    ]);
  }

  /** Resolves false when no procedure owns the path, so the caller can answer 404 itself. */
  return async (req, res, ctx) => {
    // Read first, whatever the path: a body too large is a 413 even where no procedure is.
    const body = await bodyOf(req, opts.bodyLimitBytes);
    const url = new URL(`http://127.0.0.1${req.url ?? '/'}`);
    const method = req.method as OpenApiMethod;
    const found = matchRoute(routes.get(method) ?? [], url.pathname);
    if (!found) return false;
    const { route, pathParams } = found;
    const input = restInputOf(inputPlanOf(route.procedure), { method, url, body, pathParams });
    const call = route.path.split('.').reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], createCaller(ctx));
    const data = await (call as (input: unknown) => Promise<unknown>)(input);
    res.statusCode = route.created ? 201 : 200;
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify(data));
    return true;
  };
}

function matchRoute(routes: RestRoute[], pathname: string): { route: RestRoute; pathParams: Record<string, string> } | null {
  for (const route of routes) {
    const pathParams = route.template.match(pathname);
    if (pathParams) return { route, pathParams };
  }
  return null;
}

/**
 * The body as JSON, read before the procedure: too large is refused before the key is read (and the
 * connection closed, koa-app.ts); unreadable (bad JSON, too deep, not JSON at all) is the procedure's
 * input, reported after the key and its access (routers/trpc.ts).
 */
async function bodyOf(req: IncomingMessage, limitBytes: number): Promise<Record<PropertyKey, unknown> | undefined> {
  try {
    return await readJsonBody(req, limitBytes);
  } catch (error) {
    if (error instanceof PayloadTooLargeError || !(error instanceof DomainError)) throw error;
    return unreadableBody(error);
  }
}
