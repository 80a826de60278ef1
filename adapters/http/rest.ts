import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AnyTRPCProcedure } from '@trpc/server';
import {
  acceptsRequestBody,
  coerceSchema,
  getInputOutputParsers,
  getPathRegExp,
  instanceofZodTypeLikeVoid,
  instanceofZodTypeObject,
  instanceofZodTypeOptional,
  normalizePath,
  type OpenApiMethod,
  unwrapZodType,
  zodSupportsCoerce,
} from 'trpc-to-openapi';
import { ZodArray, type ZodObject } from 'zod';
import { createCaller, type AppRouter } from '../../routers/app.router.js';
import { proceduresOf, unreadableBody, type Context } from '../../routers/trpc.js';
import { PayloadTooLargeError, readJsonBody } from './request-body.js';
import { DomainError } from '../../src/domain/errors.js';

interface RestRoute {
  pattern: RegExp;
  /** The procedure's path in the router (`services.update`). */
  path: string;
  procedure: AnyTRPCProcedure;
  created: boolean;
}

/**
 * The documented REST paths (each procedure's `meta.openapi`), served from the same procedures as the
 * typed client, as trpc-to-openapi lays them out: path parameters, then the JSON body (or the query of
 * a GET or DELETE) as the input, query strings coerced to the schema's numbers and booleans. 201 for
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
      { pattern: getPathRegExp(normalizePath(meta.openapi.path)), path, procedure, created: meta.created === true },
    ]);
  }

  /** Resolves false when no procedure owns the path, so the caller can answer 404 itself. */
  return async (req, res, ctx) => {
    // Read first, whatever the path: a body too large is a 413 even where no procedure is.
    const body = await bodyOf(req, opts.bodyLimitBytes);
    const url = new URL(`http://127.0.0.1${req.url ?? '/'}`);
    const pathname = normalizePath(url.pathname);
    const method = req.method as OpenApiMethod;
    let pathInput: Record<string, string> = {};
    const route = routes.get(method)?.find(({ pattern }) => {
      const match = pattern.exec(pathname);
      if (match) pathInput = match.groups ?? {};
      return match !== null;
    });
    if (!route) return false;
    const input = inputOf(route.procedure, method, url, body, pathInput);
    const call = route.path.split('.').reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], createCaller(ctx));
    const data = await (call as (input: unknown) => Promise<unknown>)(input);
    res.statusCode = route.created ? 201 : 200;
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify(data));
    return true;
  };
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

/** The procedure's input, as trpc-to-openapi builds it (the fuzz and error suites hold every path to it). */
function inputOf(
  procedure: AnyTRPCProcedure,
  method: OpenApiMethod,
  url: URL,
  body: Record<PropertyKey, unknown> | undefined,
  pathInput: Record<string, string>,
): unknown {
  const schema = unwrapZodType(getInputOutputParsers(procedure).inputParser, true);
  if (instanceofZodTypeLikeVoid(schema)) return undefined;
  const useBody = acceptsRequestBody(method);
  // A DELETE names what it deletes in the query; DELETE .../database/rows names its row by a JSON body, which joins it.
  const query =
    method === 'DELETE' && isPlainObject(body)
      ? { ...Object.fromEntries(url.searchParams), ...body }
      : Object.fromEntries(queryValues(url));
  const input: Record<string, unknown> = { ...(useBody ? body : firstValues(query)), ...pathInput };
  if (zodSupportsCoerce && instanceofZodTypeObject(schema)) {
    if (!useBody) {
      for (const [key, field] of Object.entries((schema as ZodObject).shape)) {
        const isArray = field instanceof ZodArray || (instanceofZodTypeOptional(field) && field.unwrap() instanceof ZodArray);
        if (isArray && input[key] !== undefined && !Array.isArray(input[key])) input[key] = [input[key]];
      }
    }
    coerceSchema(schema);
  }
  return input;
}

/** Each query parameter with every value it was given. */
function queryValues(url: URL): Map<string, unknown> {
  const values = new Map<string, string[]>();
  url.searchParams.forEach((value, key) => values.set(key, [...(values.get(key) ?? []), value]));
  return values;
}

/** A parameter given once is its value; empty values are left out. */
function firstValues(query: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(query)) {
    const value = query[key];
    if (value) out[key] = Array.isArray(value) && value.length === 1 ? value[0] : value;
  }
  return out;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && Object.getPrototypeOf(value) === Object.prototype;
}
