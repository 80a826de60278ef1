import type { ServerResponse } from 'node:http';
import { TRPCError } from '@trpc/server';
import { toErrorBody, type ErrorBody } from '../../routers/trpc.js';

/** toErrorBody looks at a domain error first, so wrapping anything else as a 500 is enough. */
export function errorBodyOf(error: unknown): { status: number; body: ErrorBody } {
  const body = toErrorBody(error instanceof TRPCError ? error : new TRPCError({ code: 'INTERNAL_SERVER_ERROR', cause: error instanceof Error ? error : undefined }));
  return { status: STATUS[body.error], body };
}

export const STATUS: Record<ErrorBody['error'], number> = {
  validation_error: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  rate_limited: 429,
  payload_too_large: 413,
  upstream_error: 502,
  internal_error: 500,
};

export function sendError(res: ServerResponse, status: number, body: ErrorBody): void {
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json');
  const retryAfter = body.details.retryAfterSeconds;
  if (status === 429 && typeof retryAfter === 'number') res.setHeader('Retry-After', String(retryAfter));
  res.end(JSON.stringify(body));
}
