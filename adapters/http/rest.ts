import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AnyTRPCProcedure } from '@trpc/server';
import type { OpenApiMethod } from 'trpc-to-openapi';
import { inputPlanOf, PathTemplate, restInputOf, segmentsOf } from './rest-inputs.js';
import type { AppRouter } from '../../routers/app.router.js';
import {
  admitKeptAnswer,
  answerOwner,
  proceduresOf,
  unreadableBody,
  validCaller,
  type Context,
  type SlipwayMeta,
} from '../../routers/trpc.js';
import { traceReads } from '../../src/index.js';
import { AnswerCache, sendJsonBody } from './answer-cache.js';
import { PayloadTooLargeError, readJsonBody } from './request-body.js';
import { DomainError } from '../../src/domain/errors.js';

interface RestRoute {
  template: PathTemplate;
  /** The procedure's path in the router (`services.update`). */
  path: string;
  procedure: AnyTRPCProcedure;
  meta: SlipwayMeta;
  created: boolean;
}

/** A procedure called as tRPC's own caller calls it (its proxy, one per request, cost more than the call's lookup). */
type CallableProcedure = (opts: {
  path: string;
  getRawInput: () => Promise<unknown>;
  ctx: Context;
  type: 'query' | 'mutation' | 'subscription';
  signal: AbortSignal | undefined;
  batchIndex: number;
}) => Promise<unknown>;

export interface RestHandler {
  /** Serves a request from the procedures; resolves false when no procedure owns the path, so the caller can answer 404 itself. */
  (req: IncomingMessage, res: ServerResponse, ctx: Context): Promise<boolean>;
  /** Sends a kept answer (answer-cache.ts) when there is a current one for this GET and caller; false otherwise. */
  kept(req: IncomingMessage, res: ServerResponse, ctx: Context): Promise<boolean>;
  /** Whether `kept` may send something for this request (a GET without a body, an answer kept for its target): a lookup, no credential read. */
  mayKeep(req: IncomingMessage): boolean;
}

/**
 * The documented REST paths (each procedure's `meta.openapi`), served from the same procedures as the
 * typed client, as trpc-to-openapi documents them: path parameters, then the JSON body (or the query of
 * a GET or DELETE) as the input, text read as the schema's numbers and booleans (rest-inputs.ts). 201 for
 * creations. Errors are thrown to the app, which answers every door's the same way (koa-app.ts).
 */
export function createRestHandler(opts: { router: AppRouter; bodyLimitBytes: number }): RestHandler {
  const answers = new AnswerCache();
  const routes = new Map<string, RestRoute[]>();
  for (const { path, meta } of proceduresOf(opts.router)) {
    const procedure = (opts.router._def.procedures as unknown as Record<string, AnyTRPCProcedure>)[path]!;
    if (!meta.openapi || procedure._def.type === 'subscription') continue;
    const method = meta.openapi.method;
    routes.set(method, [
      ...(routes.get(method) ?? []),
      { template: new PathTemplate(meta.openapi.path), path, procedure, meta, created: meta.created === true },
    ]);
  }

  // A GET with a body takes the full path, which reads (and limits) it.
  const mayKeep = (req: IncomingMessage) => req.method === 'GET' && answers.has(req.url ?? '/') && !hasBody(req);
  const kept = async (req: IncomingMessage, res: ServerResponse, ctx: Context): Promise<boolean> => {
    const target = req.url ?? '/';
    if (!mayKeep(req)) return false;
    const actor = await validCaller(ctx);
    if (!actor) return false;
    const answer = answers.get(target, answerOwner(actor));
    if (!answer || !admitKeptAnswer(ctx, actor, answer.scope)) return false;
    sendJsonBody(res, 200, answer.body);
    return true;
  };
  /**
   * The kept reads under way, by target. After a write, every request of a busy read misses at once: one runs the
   * procedure, the others wait for it and are then sent what it kept (each authenticated and counted as usual).
   */
  const reading = new Map<string, Promise<void>>();

  const handler = async (req: IncomingMessage, res: ServerResponse, ctx: Context): Promise<boolean> => {
    // Read first, whatever the path: a body too large is a 413 even where no procedure is.
    const body = await bodyOf(req, opts.bodyLimitBytes);
    const url = new URL(`http://127.0.0.1${req.url ?? '/'}`);
    const method = req.method as OpenApiMethod;
    const found = matchRoute(routes.get(method) ?? [], url.pathname);
    if (!found) return false;
    const { route, pathParams } = found;
    const input = restInputOf(inputPlanOf(route.procedure), { method, url, body, pathParams });
    const call = () =>
      (route.procedure as unknown as CallableProcedure)({
        path: route.path,
        getRawInput: async () => input,
        ctx,
        type: route.procedure._def.type,
        signal: undefined,
        batchIndex: 0,
      });
    const status = route.created ? 201 : 200;
    if (route.meta.answerCache && method === 'GET') {
      const target = req.url ?? '/';
      const under = reading.get(target);
      if (under) {
        await under;
        if (await kept(req, res, ctx)) return true;
      }
      const { trace, result } = traceReads(call);
      if (!under) {
        const settled = result.then(
          () => {},
          () => {},
        );
        reading.set(target, settled);
        void settled.then(() => {
          if (reading.get(target) === settled) reading.delete(target);
        });
      }
      const json = JSON.stringify(await result);
      sendJsonBody(res, status, answers.keep(target, trace, route.meta.scope, json));
      return true;
    }
    sendJsonBody(res, status, JSON.stringify(await call()));
    return true;
  };
  return Object.assign(handler, { mayKeep, kept });
}

function matchRoute(routes: RestRoute[], pathname: string): { route: RestRoute; pathParams: Record<string, string> } | null {
  const parts = segmentsOf(pathname);
  for (const route of routes) {
    if (route.template.length !== parts.length) continue;
    const pathParams = route.template.matchSegments(parts);
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

function hasBody(req: IncomingMessage): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}
