import { TRPCClientError } from '@trpc/client';

/** The API's error codes (the spec's `{error}`), and two of the client's own: no answer at all, and a call the caller aborted. */
export type SlipwayErrorCode =
  | 'validation_error'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'conflict'
  | 'rate_limited'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'upstream_error'
  | 'query_error'
  | 'not_running'
  | 'internal_error'
  | 'network_error'
  | 'aborted'
  | (string & {});

interface ErrorData {
  error?: unknown;
  details?: unknown;
  httpStatus?: unknown;
}

/**
 * What every call of the client throws: the API's `{error, message, details}` as `code`, `message`
 * and `details`, with the HTTP status (0 when no answer came). It extends tRPC's own error, so code
 * written against `TRPCClientError` keeps working.
 */
export class SlipwayError extends TRPCClientError<never> {
  readonly code: SlipwayErrorCode;
  readonly status: number;
  readonly details: Record<string, unknown>;

  constructor(message: string, init: { code: SlipwayErrorCode; status: number; details?: Record<string, unknown>; cause?: unknown }) {
    const trpc = init.cause instanceof TRPCClientError ? (init.cause as TRPCClientError<never>) : undefined;
    // tRPC's `data`, `shape` and `meta` stay as they were.
    super(message, {
      cause: init.cause instanceof Error ? init.cause : undefined,
      result: trpc?.shape ? ({ error: trpc.shape } as never) : undefined,
      meta: trpc?.meta,
    });
    // tRPC's constructor pins the prototype to its own class; a subclass puts its own back.
    Object.setPrototypeOf(this, SlipwayError.prototype);
    this.name = 'SlipwayError';
    this.code = init.code;
    this.status = init.status;
    this.details = init.details ?? {};
  }
}

/** Any error a call ended with, as a SlipwayError (the same one when it already is). */
export function toSlipwayError(error: unknown, signal?: AbortSignal | null): SlipwayError {
  if (error instanceof SlipwayError) return error;
  const data = (error instanceof TRPCClientError ? error.data : undefined) as ErrorData | undefined;
  const message = error instanceof Error ? error.message : String(error);
  if (data && typeof data.error === 'string') {
    return new SlipwayError(message, {
      code: data.error,
      status: typeof data.httpStatus === 'number' ? data.httpStatus : 0,
      details: typeof data.details === 'object' && data.details !== null ? (data.details as Record<string, unknown>) : {},
      cause: error,
    });
  }
  if (signal?.aborted || isAbort(error)) return new SlipwayError('The call was aborted', { code: 'aborted', status: 0, cause: error });
  // No API answer: the server is unreachable, or something in between answered with what is not the API's.
  const status = responseStatus(error);
  return new SlipwayError(status ? `Unexpected answer (HTTP ${status}): ${message}` : `Could not reach the server: ${message}`, {
    code: 'network_error',
    status,
    cause: error,
  });
}

function isAbort(error: unknown): boolean {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e.name === 'AbortError') return true;
  }
  return false;
}

function responseStatus(error: unknown): number {
  const meta = error instanceof TRPCClientError ? (error.meta as { response?: { status?: unknown } } | undefined) : undefined;
  return typeof meta?.response?.status === 'number' ? meta.response.status : 0;
}
