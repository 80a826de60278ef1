import type { IncomingMessage } from 'node:http';
import { ValidationError, DomainError } from '../../src/domain/errors.js';

class PayloadTooLargeError extends DomainError {
  readonly code = 'payload_too_large' as const;
}

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Reads and parses a JSON body before any handler sees it, so a malformed body is one clear
 * 400 and never reaches a service. An empty body counts as `{}`: `curl -X POST` works as is.
 */
export async function readJsonBody(req: IncomingMessage, limitBytes: number): Promise<Record<string, unknown> | undefined> {
  if (!BODY_METHODS.has(req.method ?? '')) return undefined;
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limitBytes) throw new PayloadTooLargeError(`The request body is larger than ${limitBytes} bytes`, { limitBytes });
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limitBytes) throw new PayloadTooLargeError(`The request body is larger than ${limitBytes} bytes`, { limitBytes });
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return {};
  const contentType = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    // A JSON body sent with curl's default form content type is still accepted; anything else is not.
    const hint = contentType && contentType !== 'application/json' ? ` (Content-Type was ${contentType}; send application/json)` : '';
    throw new ValidationError('body', `The request body is not valid JSON: ${(error as Error).message}${hint}`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new ValidationError('body', 'The request body must be a JSON object');
  }
  return parsed as Record<string, unknown>;
}
