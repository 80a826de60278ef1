import type { IncomingMessage, ServerResponse } from 'node:http';
import type { HookRequest } from '../../src/git-hooks/hook-event.js';
import { RateLimitedError } from '../../src/domain/errors.js';
import type { Context } from '../../routers/trpc.js';
import { sendError, sendErrorAndClose } from './error-response.js';

/** `POST /api/hooks/<projectId>`: the public door every git host, CI and registry posts deliveries to. */
const PATH = /^\/api\/hooks\/([A-Za-z0-9_-]{1,64})\/?$/;

/**
 * The public webhook endpoint. It needs no credentials (the delivery's signature is its credential),
 * so it is rate-limited per address (counted in the database, like the authentication limits, so every
 * process behind a balancer shares the count); it reads the raw body (signatures are over the exact
 * bytes) up to the delivery limit, and answers as the deliveries use case decides. Nothing of the body
 * or the headers is logged.
 */
export class WebhookEndpoint {
  static matches(pathname: string): boolean {
    return pathname.startsWith('/api/hooks/') || pathname === '/api/hooks';
  }

  /** `ctx` is the request's one context: the use cases, the caller's address and the shared limiter. */
  async handle(req: IncomingMessage, res: ServerResponse, pathname: string, ctx: Context): Promise<void> {
    const match = PATH.exec(pathname);
    if (!match) {
      sendError(res, 404, { error: 'not_found', message: `No route for ${req.method} ${pathname.slice(0, 200)}`, details: {} });
      return;
    }
    if (req.method !== 'POST') {
      res.setHeader('Allow', 'POST');
      sendError(res, 405, { error: 'method_not_allowed', message: 'Deliveries are POSTed', details: { allowed: ['POST'] } });
      return;
    }
    const deliveries = ctx.services.deliveries;
    const { maxBodyBytes } = deliveries.limits();
    try {
      await ctx.limiter.assertWebhookDelivery(ctx.ip);
    } catch (error) {
      if (!(error instanceof RateLimitedError)) throw error;
      sendErrorAndClose(res, 429, {
        error: 'rate_limited',
        message: error.message,
        details: error.details,
      });
      return;
    }
    const projectId = match[1]!;
    const head: Omit<HookRequest, 'body'> = { headers: headersOf(req), receivedAt: new Date() };
    const declared = Number(req.headers['content-length'] ?? '0');
    const body = declared > maxBodyBytes ? null : await readLimited(req, maxBodyBytes);
    if (body === null) {
      const answer = await deliveries.refuseTooLarge(projectId, head, maxBodyBytes, ctx.ip);
      if ('error' in answer)
        sendErrorAndClose(res, answer.status, { error: answer.error.code, message: answer.error.message, details: {} });
      return;
    }
    const answer = await deliveries.receive(projectId, { ...head, body }, ctx.ip);
    if ('error' in answer) {
      sendError(res, answer.status, { error: answer.error.code, message: answer.error.message, details: {} });
      return;
    }
    res.statusCode = answer.status;
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify(answer.body));
  }
}

/** Node's headers, lower-cased, repeated ones joined as Node joins them. */
function headersOf(req: IncomingMessage): Record<string, string | undefined> {
  const headers: Record<string, string | undefined> = {};
  for (const [name, value] of Object.entries(req.headers)) headers[name] = Array.isArray(value) ? value.join(', ') : value;
  return headers;
}

/** The raw body, or null once it passes `limit` (the rest is not read). */
function readLimited(req: IncomingMessage, limit: number): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    req.on('data', (chunk: Buffer) => {
      if (done) return;
      size += chunk.length;
      if (size > limit) {
        done = true;
        req.pause();
        resolve(null);
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (!done) resolve(Buffer.concat(chunks));
    });
    req.on('error', (error) => {
      if (!done) reject(error);
    });
  });
}
