import type { IncomingMessage } from 'node:http';
import { ValidationError, DomainError, UnsupportedMediaTypeError } from '../../src/domain/errors.js';

export class PayloadTooLargeError extends DomainError {
  readonly code = 'payload_too_large' as const;
}

/** The methods whose body is read (and so may be a 413 or a 415). */
export const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** Deeper bodies are refused before anything (JSON.parse, zod, the re-serialising adapter) recurses over them. */
export const MAX_BODY_DEPTH = 64;

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Reads and parses a JSON body before any handler sees it, so a malformed body is one clear
 * 400 and never reaches a service. An empty body counts as `{}`: `curl -X POST` works as is.
 * A non-empty body must be JSON: no Content-Type, `application/json` or a `+json` type; any
 * other type is a 415 (docs/decisions.md).
 */
export async function readJsonBody(req: IncomingMessage, limitBytes: number): Promise<Record<string, unknown> | undefined> {
  if (!BODY_METHODS.has(req.method ?? '')) return undefined;
  const text = await readBodyText(req, limitBytes);
  if (text.trim() === '') return {};
  const contentType = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (contentType && contentType !== 'application/json' && !/^application\/[a-z0-9.+-]+\+json$/.test(contentType)) {
    throw new UnsupportedMediaTypeError(`Request bodies are JSON: send Content-Type application/json (not ${contentType.slice(0, 100)})`, {
      contentType: contentType.slice(0, 100),
    });
  }
  assertDepth(text, MAX_BODY_DEPTH);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new ValidationError('body', `The request body is not valid JSON: ${(error as Error).message}`);
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new ValidationError('body', 'The request body must be a JSON object');
  }
  return parsed as Record<string, unknown>;
}

/**
 * The tRPC door's input held to REST's limits before tRPC parses it: the body's size and UTF-8, and the
 * depth of the body and of a query's `input`. The input sits in `{json, meta}` (inside `{"0": ...}` when
 * batched): those levels are not counted, so an input nests as deep as a REST body may. Resolves with the
 * body's text (for `req.body`), undefined for a method without a body.
 */
export async function readTrpcBody(req: IncomingMessage, limitBytes: number): Promise<string | undefined> {
  const url = new URL(req.url ?? '/', 'http://trpc.invalid');
  const envelope = url.searchParams.get('batch') === '1' ? 2 : 1;
  const input = url.searchParams.get('input');
  if (input !== null) assertDepth(input, MAX_BODY_DEPTH, envelope);
  if (!BODY_METHODS.has(req.method ?? '')) return undefined;
  const text = await readBodyText(req, limitBytes);
  assertDepth(text, MAX_BODY_DEPTH, envelope);
  return text;
}

/** The body as UTF-8 text, up to the limit. */
async function readBodyText(req: IncomingMessage, limitBytes: number): Promise<string> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > limitBytes) throw tooLarge(limitBytes);
  const bytes = await readRaw(req, limitBytes);
  try {
    return utf8.decode(bytes);
  } catch {
    throw new ValidationError('body', 'The request body is not valid UTF-8');
  }
}

function tooLarge(limitBytes: number): PayloadTooLargeError {
  return new PayloadTooLargeError(`The request body is larger than ${limitBytes} bytes`, { limitBytes });
}

/**
 * Collects the body up to the limit. Past it, the rest is read and dropped (not left in the
 * socket) while the caller answers 413 and closes the connection (error-response.ts).
 */
function readRaw(req: IncomingMessage, limitBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limitBytes) {
        cleanup();
        req.on('error', () => {});
        req.resume();
        reject(tooLarge(limitBytes));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks));
    };
    const onError = (error: Error) => {
      cleanup();
      reject(new ValidationError('body', `The request body could not be read: ${error.message}`));
    };
    const onClose = () => {
      if (req.complete) return;
      cleanup();
      reject(new ValidationError('body', 'The request body ended early'));
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
}

/**
 * Nesting depth of JSON text, counted without recursion (strings skipped): over `max` is a 400. The
 * `envelope`'s levels, wrapped around the input, are not counted.
 */
export function assertDepth(text: string, max: number, envelope = 0): void {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max + envelope)
        throw new ValidationError('body', `The request body is nested deeper than ${max} levels`, { maxDepth: max });
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
}
