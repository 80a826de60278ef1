import { initTRPC, TRPCError, type AnyTRPCProcedure, type AnyTRPCRouter } from '@trpc/server';
import type { TRPC_ERROR_CODE_KEY } from '@trpc/server/rpc';
import superjson from 'superjson';
import type { OpenApiMeta } from 'trpc-to-openapi';
import { z, ZodError } from 'zod';
import {
  assertProcedureScope,
  DomainError,
  ERROR_CODES,
  type Actor,
  type AuditDoor,
  type ErrorCode,
  type ProcedureScope,
  type Services,
  startAnswerReads,
} from '../src/index.js';

/** The authentication endpoints' per-address budgets (spec, Limits item 1). */
export type AuthRateKind = 'signup' | 'signin' | 'password-reset';

/** Per-request limits the edge enforces; the routers only ask. */
export interface RequestLimiter {
  /** Counts a failed authentication; rejects with a rate_limited DomainError once this client (IP) failed too often. */
  recordAuthFailure(ip: string): Promise<void>;
  /** Throws a rate_limited DomainError when this key sent too many requests. */
  assertRequestAllowed(keyId: string): void;
  /** Rejects with a rate_limited DomainError once this address called an authentication endpoint of this kind too often. */
  assertAuthAttempt(kind: AuthRateKind, ip: string): Promise<void>;
  /** Rejects with a rate_limited DomainError once this address posted too many webhook deliveries in the last minute. */
  assertWebhookDelivery(ip: string): Promise<void>;
}

/** The session cookie, set and cleared by the HTTP edge; absent for server-side callers. */
export interface SessionCookie {
  set(token: string, expiresAt: Date): void;
  clear(): void;
}

export interface Context {
  services: Services;
  /** Which door the call came through, for the audit log (REST when unset). */
  door?: AuditDoor;
  /** Set per call by the audit middleware; `authenticated` writes who the caller is into it. */
  auditCall?: { actor: Actor | null };
  /** The bearer token as sent; authenticated lazily by the procedures that need it. */
  token: string | undefined;
  ip: string;
  limiter: RequestLimiter;
  cookie?: SessionCookie;
}

/** A procedure served over Server-Sent Events at `path` (adapters/http/sse-bridge.ts), and documented there. */
export interface SseMeta {
  /** A GET path; each `{name}` segment is the input field of that name. */
  path: string;
  summary: string;
  description: string;
  /** Query parameters read as integers into the input of the same name (digits only; anything else is left out). */
  query?: readonly string[];
}

/**
 * A procedure whose answer is a file, sent by adapters/http/download-bridge.ts at `path` and documented
 * there: `{fileName, sizeBytes, open(signal)}` (streamed) or `{filename, body}` (a small text file).
 */
export interface DownloadMeta {
  /** A GET path; each `{name}` segment is the input field of that name. */
  path: string;
  summary: string;
  description: string;
  /** Default `application/octet-stream`. */
  contentType?: string;
  /** The OpenAPI tags of the path. */
  tags?: string[];
}

export interface SlipwayMeta extends OpenApiMeta {
  /** Answer 201 instead of 200 over REST: the call created a resource. */
  created?: boolean;
  sse?: SseMeta;
  download?: DownloadMeta;
  /**
   * What a caller must hold (docs/accounts.md): a personal-token scope, `public` or `session`.
   * Every procedure declares one; the one check is `enforceScope` below.
   */
  scope?: ProcedureScope;
  /** An authentication endpoint counted against its per-address budget before anything else. */
  rateLimit?: AuthRateKind;
  /**
   * The outside service the call waits on (an AI vendor, a DNS provider, the object store): its failure,
   * timeout or malformed answer is a 502 `upstream_error`, documented on the operation.
   */
  upstream?: string;
  /**
   * The request body as documented, when the input object says more than it takes: a union of objects
   * (see documentedBody in schemas.ts), which trpc-to-openapi cannot take as an input.
   */
  body?: { $ref: string };
  /**
   * A GET whose answer the REST door may send again, byte for byte, to the same credential while every
   * cached read it was made of is current (adapters/http/answer-cache.ts). Only for procedures that read
   * nothing but the store and its versioned caches: no engine, no clock, no memo of their own.
   */
  answerCache?: true;
}

/** Every procedure's path (`deployments.stream`) with its meta: what the edge serves and documents is read from here. */
export function proceduresOf(router: AnyTRPCRouter): Array<{ path: string; meta: SlipwayMeta }> {
  return Object.entries(router._def.procedures).map(([path, procedure]) => ({
    path,
    meta: ((procedure as AnyTRPCProcedure)._def.meta ?? {}) as SlipwayMeta,
  }));
}

/**
 * The one table of error codes: the tRPC code the typed client gets and the HTTP status REST and
 * SSE answer. `also`: tRPC's own errors (a body it could not parse, a GET of a mutation) that read as this code.
 */
export const ERRORS = {
  validation_error: { trpc: 'BAD_REQUEST', http: 400, also: ['PARSE_ERROR'] },
  unauthorized: { trpc: 'UNAUTHORIZED', http: 401 },
  forbidden: { trpc: 'FORBIDDEN', http: 403 },
  not_found: { trpc: 'NOT_FOUND', http: 404, also: ['METHOD_NOT_SUPPORTED'] },
  conflict: { trpc: 'CONFLICT', http: 409 },
  rate_limited: { trpc: 'TOO_MANY_REQUESTS', http: 429 },
  payload_too_large: { trpc: 'PAYLOAD_TOO_LARGE', http: 413 },
  unsupported_media_type: { trpc: 'UNSUPPORTED_MEDIA_TYPE', http: 415 },
  upstream_error: { trpc: 'BAD_GATEWAY', http: 502 },
  query_error: { trpc: 'BAD_REQUEST', http: 400 },
  not_running: { trpc: 'CONFLICT', http: 409 },
  image_gone: { trpc: 'CONFLICT', http: 409 },
  method_not_allowed: { trpc: 'METHOD_NOT_SUPPORTED', http: 405 },
  checksum_mismatch: { trpc: 'CONFLICT', http: 409 },
  not_supported: { trpc: 'UNPROCESSABLE_CONTENT', http: 422 },
  outside_window: { trpc: 'UNPROCESSABLE_CONTENT', http: 422 },
  internal_error: { trpc: 'INTERNAL_SERVER_ERROR', http: 500 },
  invalid_credentials: { trpc: 'UNAUTHORIZED', http: 401 },
  registration_closed: { trpc: 'FORBIDDEN', http: 403 },
  insufficient_scope: { trpc: 'FORBIDDEN', http: 403 },
} as const satisfies Record<ErrorCode, { trpc: TRPC_ERROR_CODE_KEY; http: number; also?: readonly TRPC_ERROR_CODE_KEY[] }>;

/** An error tRPC raised itself, by the first code of the table with its tRPC code; never internal_error, whose message is not for users. */
const CODE_OF = new Map<TRPC_ERROR_CODE_KEY, ErrorCode>();
for (const [code, entry] of Object.entries(ERRORS) as Array<
  [ErrorCode, { trpc: TRPC_ERROR_CODE_KEY; also?: readonly TRPC_ERROR_CODE_KEY[] }]
>) {
  if (code === 'internal_error') continue;
  for (const trpc of [entry.trpc, ...(entry.also ?? [])]) if (!CODE_OF.has(trpc)) CODE_OF.set(trpc, code);
}

/** The spec's error body, as both the typed client (in `data`) and REST and SSE see it. */
export const errorView = z
  .object({
    error: z.enum(ERROR_CODES),
    message: z.string(),
    details: z.record(z.string(), z.unknown()).meta({ description: 'For validation errors, `field` names the first offending field' }),
  })
  .meta({ id: 'Error' });
export type ErrorBody = z.infer<typeof errorView>;

/** The one place errors become `{error, message, details}`: a domain error says it all; anything unknown is a 500. */
export function toErrorBody(error: unknown): ErrorBody {
  const cause = error instanceof TRPCError ? error.cause : error;
  if (cause instanceof DomainError) return { error: cause.code, message: cause.message, details: cause.details };
  if (cause instanceof ZodError) {
    const issue = cause.issues[0];
    // An unknown field is named itself (`env.0.colour`), not the object that holds it.
    const path = issue?.code === 'unrecognized_keys' && issue.keys.length > 0 ? [...issue.path, issue.keys[0]!] : (issue?.path ?? []);
    const field = path.length > 0 ? path.map(String).join('.') : 'body';
    const message = issue?.code === 'unrecognized_keys' ? 'unknown field' : (issue?.message ?? 'invalid input');
    return { error: 'validation_error', message: `${field}: ${message}`, details: { field } };
  }
  if (error instanceof TRPCError) {
    const code = CODE_OF.get(error.code);
    if (code) return { error: code, message: error.message, details: code === 'validation_error' ? { field: 'body' } : {} };
  }
  // Anything else is our fault: say so without a stack trace, SQL or driver message.
  return { error: 'internal_error', message: 'Internal server error', details: {} };
}

/**
 * A request body the edge could not read (bad JSON, too deep, not JSON at all), handed over as the
 * procedure's input: write procedures report it once the key and its access were checked, so 401
 * and 403 come first. A symbol key, so no JSON body can look like one.
 */
const UNREADABLE = Symbol('unreadable body');
export function unreadableBody(error: DomainError): Record<PropertyKey, unknown> {
  return { [UNREADABLE]: error };
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

/** Outcomes recorded for reads too: failed authentications and refused permissions. */
const REFUSALS = new Set<string>(['unauthorized', 'forbidden', 'insufficient_scope', 'invalid_credentials', 'registration_closed']);

/**
 * What a procedure asks of its caller, checked inside the edge below: the context it adds (the actor), or a
 * throw, which the edge records as the call's refusal.
 */
type Guard<Added extends object> = (ctx: Context, meta: SlipwayMeta | undefined, getRawInput: () => Promise<unknown>) => Promise<Added>;

/**
 * Every procedure's one edge middleware, with its guard inside (one level: each tRPC middleware level copies
 * the call's options, which a profile of a read under load put at a tenth of the CPU). In order:
 * - an authentication endpoint spends its per-address budget first, whatever the body holds;
 * - the guard: the credential, its budget and scope, a write key (readProcedure, writeProcedure...);
 * - domain errors become tRPC errors with the code of the table above; everything else is a 500;
 * - the audit log's one door-independent hook (docs/events.md): every mutation, whatever its outcome,
 *   and every call refused for its credentials or permissions, is recorded with who, the procedure,
 *   the ids its input names (found before it runs, so a delete still has its project), the door, the
 *   client address and the outcome. REST, tRPC, MCP and the CLI all come through here.
 */
function edge<Added extends object>(guard: Guard<Added>) {
  return t.middleware(async ({ ctx, meta, type, path, getRawInput, next }) => {
    const call = { actor: null as Actor | null };
    const input = () => getRawInput().catch(() => undefined);
    const located = type === 'mutation' ? await ctx.services.audit.locate(await input()) : null;
    let refused: TRPCError | null = null;
    // The result typed with what the guard adds, so the procedures see `ctx.actor`.
    let result: Awaited<ReturnType<typeof next<Added & { auditCall: typeof call }>>> | null = null;
    let added: Added | undefined;
    try {
      if (meta?.rateLimit) await ctx.limiter.assertAuthAttempt(meta.rateLimit, ctx.ip);
      added = await guard({ ...ctx, auditCall: call }, meta, getRawInput);
    } catch (error) {
      refused = trpcErrorFrom(error);
    }
    if (!refused) {
      result = await next({ ctx: { ...added!, auditCall: call } as Added & { auditCall: typeof call } });
      if (!result.ok && result.error.cause instanceof DomainError) refused = trpcErrorOf(result.error.cause);
    }
    const outcome = refused ? toErrorBody(refused).error : result!.ok ? 'success' : toErrorBody(result!.error).error;
    if (located || REFUSALS.has(outcome)) {
      const data = result?.ok ? result.data : undefined;
      const where = located ?? (await ctx.services.audit.locate(await input()));
      const created = result?.ok ? ctx.services.audit.createdIds(data) : [];
      // A sign-in or signup has no caller yet: the account it opened is who.
      const user = result?.ok ? (data as { user?: { id?: unknown } } | undefined)?.user?.id : undefined;
      const who: Actor | null =
        call.actor ?? (typeof user === 'string' ? { keyId: user, access: 'write', projectIds: null, userId: user, via: 'session' } : null);
      await ctx.services.audit.record({
        who,
        operation: path,
        door: ctx.door ?? 'rest',
        targetIds: [...where.targetIds, ...created],
        projectId: where.projectId ?? (result?.ok ? ctx.services.audit.createdProjectId(data) : null),
        clientAddress: ctx.ip,
        outcome,
      });
    }
    if (refused) throw refused;
    return result!;
  });
}

/** A guard's throw as the call's error: a domain error by the table above, tRPC's own as it is, anything else a 500. */
function trpcErrorFrom(error: unknown): TRPCError {
  if (error instanceof DomainError) return trpcErrorOf(error);
  if (error instanceof TRPCError) return error;
  return new TRPCError({ code: 'INTERNAL_SERVER_ERROR', cause: error });
}

export const router = t.router;
export const createCallerFactory = t.createCallerFactory;

/** A domain error as the tRPC error of its code (the table above). */
export function trpcErrorOf(cause: DomainError): TRPCError {
  return new TRPCError({ code: ERRORS[cause.code].trpc, message: cause.message, cause });
}

/** A procedure any caller reaches: the edge's rate limits, error mapping and audit, no credential asked. */
export const publicProcedure = t.procedure.use(edge(async () => ({})));

/**
 * The one scope check: a personal token needs the scope its procedure declares (`admin` holds all);
 * `session` procedures take a signed-in user only. API keys and sessions hold every scope, so for
 * them only the access level and role checks of the use cases apply. A procedure that declares
 * nothing is closed to tokens (test/unit/scopes.test.ts fails on it first).
 */
export const enforceScope: (actor: Actor, scope: ProcedureScope | undefined) => void = assertProcedureScope;

/** Resolves the caller's credential (API key, session or personal token), or 401 (counted against the address). */
async function authenticated(ctx: Context): Promise<Actor> {
  try {
    const actor = await ctx.services.accounts.authenticate(ctx.token);
    if (ctx.auditCall) ctx.auditCall.actor = actor;
    return actor;
  } catch (error) {
    // Guessing keys gets 429 after a while; a valid key from the same address still works.
    if (ctx.token) await ctx.limiter.recordAuthFailure(ctx.ip);
    throw error;
  }
}

/** The caller of a request outside tRPC (terminal sockets, MCP): authenticated and rate-limited as a procedure's. */
export async function authenticatedCaller(ctx: Context): Promise<Actor> {
  const actor = await authenticated(ctx);
  ctx.limiter.assertRequestAllowed(actor.keyId);
  return actor;
}

/** Every documented endpoint: a valid credential with the procedure's scope, not over its request budget. */
async function readGuard(ctx: Context, meta: SlipwayMeta | undefined): Promise<{ actor: Actor }> {
  const actor = await authenticated(ctx);
  ctx.limiter.assertRequestAllowed(actor.keyId);
  enforceScope(actor, meta?.scope);
  if (meta?.answerCache) startAnswerReads(answerOwner(actor));
  return { actor };
}

export const readProcedure = t.procedure.use(edge(readGuard));

/** Whom a kept answer may go to: the same credential with the same rights (a changed role or project list is another owner). */
export function answerOwner(actor: Actor): string {
  return JSON.stringify(actor);
}

/**
 * The actor of the request's credential when it is valid, else null, nothing counted: what optionalAuthProcedure
 * runs with, and whom a kept answer would be for (adapters/http/answer-cache.ts; on null the procedure runs
 * instead, to refuse, count and record the refusal itself).
 */
export async function validCaller(ctx: Context): Promise<Actor | null> {
  return ctx.token ? ctx.services.accounts.authenticate(ctx.token).catch(() => null) : null;
}

/** Whether `actor` may have a kept answer of a procedure with this scope; throws rate_limited over its budget (counting this request). */
export function admitKeptAnswer(ctx: Context, actor: Actor, scope: ProcedureScope | undefined): boolean {
  try {
    enforceScope(actor, scope);
  } catch {
    return false;
  }
  ctx.limiter.assertRequestAllowed(actor.keyId);
  return true;
}

/**
 * A public procedure that uses the caller's credential when a valid one is sent (2fa/verify confirms
 * a setup that way). An invalid one (a stale cookie while finishing a sign-in) counts as none.
 */
export const optionalAuthProcedure = t.procedure.use(
  edge(async (ctx): Promise<{ actor: Actor | null }> => {
    const actor = await validCaller(ctx);
    if (ctx.auditCall) ctx.auditCall.actor = actor;
    if (actor) ctx.limiter.assertRequestAllowed(actor.keyId);
    return { actor };
  }),
);

/** As readProcedure, and a write key, checked before the input is read: a read key learns it is read-only, not what its body lacked. */
export const writeProcedure = t.procedure.use(
  edge(async (ctx, meta, getRawInput) => {
    const granted = await readGuard(ctx, meta);
    if (granted.actor.access !== 'write') {
      throw new TRPCError({ code: 'FORBIDDEN', message: 'This API key is read-only; this operation needs a write key' });
    }
    const input = await getRawInput();
    if (typeof input === 'object' && input !== null && UNREADABLE in input) throw (input as { [UNREADABLE]: DomainError })[UNREADABLE];
    return granted;
  }),
);

const WRITE_KEY_CHECK = writeProcedure._def.middlewares.at(-1);

/** Whether a procedure needs a write key: what a read key is not even offered (MCP tools). */
export function needsWriteKey(procedure: AnyTRPCProcedure): boolean {
  return (procedure._def as { middlewares?: unknown[] }).middlewares?.includes(WRITE_KEY_CHECK) ?? false;
}
