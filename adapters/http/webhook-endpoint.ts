import type { IncomingMessage, ServerResponse } from 'node:http';
import type { DeliveryReceiver } from '../../src/git-hooks/delivery-receiver.js';
import type { HookRequest } from '../../src/git-hooks/hook-event.js';
import { sendError, sendErrorAndClose } from './error-response.js';

/** `POST /api/hooks/<projectId>`: the public door every git host, CI and registry posts deliveries to. */
const PATH = /^\/api\/hooks\/([A-Za-z0-9_-]{1,64})\/?$/;

export interface WebhookEndpointOptions {
  receiver: () => DeliveryReceiver;
  /** Read at each request: the settings may change. */
  limits: () => { maxBodyBytes: number; perAddressPerMinute: number };
  clientIp: (req: IncomingMessage) => string;
  log: (message: string, extra?: Record<string, unknown>) => void;
}

/**
 * The public webhook endpoint. It needs no credentials (the delivery's signature is its credential),
 * so it is rate-limited per address; it reads the raw body (signatures are over the exact bytes) up to
 * the delivery limit, and answers as DeliveryReceiver decides. Nothing of the body or the headers is logged.
 */
export class WebhookEndpoint {
  private readonly hits = new Map<string, number[]>();

  constructor(private readonly opts: WebhookEndpointOptions) {}

  static matches(pathname: string): boolean {
    return pathname.startsWith('/api/hooks/') || pathname === '/api/hooks';
  }

  async handle(req: IncomingMessage, res: ServerResponse, pathname: string): Promise<void> {
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
    const { maxBodyBytes, perAddressPerMinute } = this.opts.limits();
    const retryAfter = this.hit(this.opts.clientIp(req), perAddressPerMinute);
    if (retryAfter > 0) {
      sendErrorAndClose(res, 429, {
        error: 'rate_limited',
        message: `Too many deliveries from this address: at most ${perAddressPerMinute} a minute`,
        details: { retryAfterSeconds: retryAfter },
      });
      return;
    }
    const projectId = match[1]!;
    const head: Omit<HookRequest, 'body'> = { headers: headersOf(req), receivedAt: new Date() };
    const receiver = this.opts.receiver();
    const declared = Number(req.headers['content-length'] ?? '0');
    const body = declared > maxBodyBytes ? null : await readLimited(req, maxBodyBytes);
    if (body === null) {
      const answer = await receiver.refuseTooLarge(projectId, head, maxBodyBytes);
      if ('error' in answer)
        sendErrorAndClose(res, answer.status, { error: answer.error.code, message: answer.error.message, details: {} });
      return;
    }
    const answer = await receiver.receive(projectId, { ...head, body });
    if ('error' in answer) {
      sendError(res, answer.status, { error: answer.error.code, message: answer.error.message, details: {} });
      return;
    }
    res.statusCode = answer.status;
    res.setHeader('Content-Type', 'application/json');
    res.end(JSON.stringify(answer.body));
  }

  /** The last minute exactly, per address; refused requests are not counted. Returns the seconds to wait, or 0. */
  private hit(address: string, perMinute: number, now = Date.now()): number {
    if (this.hits.size > 10_000) for (const [key, times] of this.hits) if ((times.at(-1) ?? 0) <= now - 60_000) this.hits.delete(key);
    const recent = (this.hits.get(address) ?? []).filter((t) => t > now - 60_000);
    if (recent.length >= perMinute) {
      this.hits.set(address, recent);
      return Math.max(1, Math.ceil((recent[0]! + 60_000 - now) / 1000));
    }
    recent.push(now);
    this.hits.set(address, recent);
    return 0;
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
