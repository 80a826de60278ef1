import { initTRPC, TRPCError } from '@trpc/server';
import type { TRPC_ERROR_CODE_KEY } from '@trpc/server/rpc';
import superjson from 'superjson';
import type { OpenApiMeta } from 'trpc-to-openapi';
import { ZodError } from 'zod';
import { DomainError, type Actor, type ErrorCode, type Services } from '../src/index.js';

/** Per-request limits the edge enforces; the routers only ask. */
export interface RequestLimiter {
  /** Counts a failed authentication; throws a rate_limited DomainError once this client (IP) failed too often. */
  recordAuthFailure(ip: string): void;
  /** Throws a rate_limited DomainError when this key sent too many requests. */
  assertRequestAllowed(keyId: string): void;
}

export interface Context {
  services: Services;
  /** The bearer token as sent; authenticated lazily by the procedures that need it. */
  token: string | undefined;
  ip: string;
  limiter: RequestLimiter;
  /** A body the edge could not read: reported after authentication and access, so 401/403 come first. */
  bodyError?: DomainError | undefined;
}

export interface SlipwayMeta extends OpenApiMeta {
  /** Answer 201 instead of 200 over REST: the call created a resource. */
  created?: boolean;
}

const STATUS_OF: Record<ErrorCode, TRPC_ERROR_CODE_KEY> = {
  validation_error: 'BAD_REQUEST',
  unauthorized: 'UNAUTHORIZED',
  forbidden: 'FORBIDDEN',
  not_found: 'NOT_FOUND',
  conflict: 'CONFLICT',
  rate_limited: 'TOO_MANY_REQUESTS',
  payload_too_large: 'PAYLOAD_TOO_LARGE',
  unsupported_media_type: 'UNSUPPORTED_MEDIA_TYPE',
  upstream_error: 'BAD_GATEWAY',
  query_error: 'BAD_REQUEST',
  not_running: 'CONFLICT',
  internal_error: 'INTERNAL_SERVER_ERROR',
};

const CODE_OF: Partial<Record<TRPC_ERROR_CODE_KEY, ErrorCode>> = {
  BAD_REQUEST: 'validation_error',
  PARSE_ERROR: 'validation_error',
  UNSUPPORTED_MEDIA_TYPE: 'unsupported_media_type',
  UNAUTHORIZED: 'unauthorized',
  FORBIDDEN: 'forbidden',
  NOT_FOUND: 'not_found',
  METHOD_NOT_SUPPORTED: 'not_found',
  CONFLICT: 'conflict',
  TOO_MANY_REQUESTS: 'rate_limited',
  PAYLOAD_TOO_LARGE: 'payload_too_large',
  BAD_GATEWAY: 'upstream_error',
};

/** The spec's error body, as both the typed client (in `data`) and REST (rewritten at the edge) see it. */
export interface ErrorBody {
  error: ErrorCode;
  message: string;
  details: Record<string, unknown>;
}

/** The one place errors become `{error, message, details}`. */
export function toErrorBody(error: TRPCError): ErrorBody {
  const cause = error.cause;
  if (cause instanceof DomainError) return { error: cause.code, message: cause.message, details: cause.details };
  if (cause instanceof ZodError) {
    const issue = cause.issues[0];
    // An unknown field is named itself (`env.0.colour`), not the object that holds it.
    const path = issue?.code === 'unrecognized_keys' && issue.keys.length > 0 ? [...issue.path, issue.keys[0]!] : (issue?.path ?? []);
    const field = path.length > 0 ? path.map(String).join('.') : 'body';
    const message = issue?.code === 'unrecognized_keys' ? 'unknown field' : (issue?.message ?? 'invalid input');
    return { error: 'validation_error', message: `${field}: ${message}`, details: { field } };
  }
  const code = CODE_OF[error.code];
  if (code) return { error: code, message: error.message, details: code === 'validation_error' ? { field: 'body' } : {} };
  // Anything else is our fault: say so without a stack trace, SQL or driver message.
  return { error: 'internal_error', message: 'Internal server error', details: {} };
}

const t = initTRPC
  .context<Context>()
  .meta<SlipwayMeta>()
  .create({
    transformer: superjson,
    errorFormatter({ shape, error }) {
      const body = toErrorBody(error);
      return { message: body.message, code: shape.code, data: { ...body, httpStatus: shape.data.httpStatus, path: shape.data.path } };
    },
  });

export const router = t.router;
export const createCallerFactory = t.createCallerFactory;

/** Domain errors become tRPC errors with the matching HTTP status; everything else is a 500. */
const mapDomainErrors = t.middleware(async ({ next }) => {
  const result = await next();
  if (!result.ok && result.error.cause instanceof DomainError) {
    const cause = result.error.cause;
    throw new TRPCError({ code: STATUS_OF[cause.code], message: cause.message, cause });
  }
  return result;
});

export const publicProcedure = t.procedure.use(mapDomainErrors);

/** Every documented endpoint: a valid API key, and not over its request budget. */
export const readProcedure = publicProcedure.use(async ({ ctx, next }) => {
  let actor: Actor;
  try {
    actor = await ctx.services.apiKeys.authenticate(ctx.token);
  } catch (error) {
    // Guessing keys gets 429 after a while; a valid key from the same address still works.
    if (ctx.token) ctx.limiter.recordAuthFailure(ctx.ip);
    throw error;
  }
  ctx.limiter.assertRequestAllowed(actor.keyId);
  return next({ ctx: { actor } });
});

/** Checked before the input is parsed: a read key learns it is read-only, not what its body lacked. */
export const writeProcedure = readProcedure.use(({ ctx, next }) => {
  if (ctx.actor.access !== 'write') {
    throw new TRPCError({ code: 'FORBIDDEN', message: 'This API key is read-only; this operation needs a write key' });
  }
  if (ctx.bodyError) throw ctx.bodyError;
  return next();
});
