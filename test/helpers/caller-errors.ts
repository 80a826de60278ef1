import { TRPCError } from '@trpc/server';
import { expect } from 'vitest';
import { toErrorBody } from '../../routers/trpc.js';

/** What a createCaller call was refused with: the tRPC code, and the REST body (its error code, message and field). */
export async function errorOf(
  promise: Promise<unknown>,
): Promise<{ code: string; error: string; message: string; field?: unknown; body: ReturnType<typeof toErrorBody> }> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(TRPCError);
    const body = toErrorBody(error);
    return { code: (error as TRPCError).code, error: body.error, message: body.message, field: body.details.field, body };
  }
  throw new Error('expected a rejection');
}
