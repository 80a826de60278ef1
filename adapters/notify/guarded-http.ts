import { lookup as dnsLookup } from 'node:dns/promises';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { DeliveryError, isPrivateAddress, type TargetCheck, type TargetGuard } from '../../src/index.js';

export interface OutboundRequest {
  url: string;
  method?: 'POST' | 'GET';
  headers?: Record<string, string>;
  body?: string;
  signal: AbortSignal;
  /**
   * An operator's own setting (TELEGRAM_API_URL): not held to the private-range rule, since no user
   * chose it. Redirects from it are.
   */
  trusted?: boolean;
}

export interface OutboundResponse {
  status: number;
  /** The first 16 KB of the answer, as text. */
  body: string;
}

const MAX_REDIRECTS = 5;
const BODY_LIMIT = 16 * 1024;
const RESOLVE_TIMEOUT_MS = 3_000;

/**
 * Outbound HTTP for notifications, guarded against reaching the inside: every request and every
 * redirect resolves its host, refuses loopback, private and link-local addresses (unless the
 * operator allows them), and connects to the very address it checked, so a name cannot resolve one
 * way for the check and another for the connection. Redirects are followed by hand, at most five.
 */
export class GuardedHttp implements TargetGuard {
  constructor(private readonly options: { allowPrivate: () => boolean }) {}

  /** On save: a name that resolves inward is refused; one that does not resolve (yet) is not. */
  async check(url: string): Promise<TargetCheck> {
    if (this.options.allowPrivate()) return { ok: true };
    const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
    try {
      const addresses = await resolve(host, AbortSignal.timeout(RESOLVE_TIMEOUT_MS));
      const inward = addresses.find((a) => isPrivateAddress(a.address));
      return inward
        ? { ok: false, reason: `${host} resolves to ${inward.address}, a loopback, private or link-local address` }
        : { ok: true };
    } catch {
      return { ok: true };
    }
  }

  async request(req: OutboundRequest): Promise<OutboundResponse> {
    let url = new URL(req.url);
    let method = req.method ?? 'POST';
    let body = req.body;
    let trusted = req.trusted ?? false;
    for (let hop = 0; ; hop++) {
      const response = await this.once(url, method, req.headers ?? {}, body, req.signal, trusted);
      const location = response.location;
      if (!location || ![301, 302, 303, 307, 308].includes(response.status)) return { status: response.status, body: response.body };
      if (hop >= MAX_REDIRECTS)
        throw new DeliveryError(`Too many redirects (more than ${MAX_REDIRECTS}); the last to ${redacted(url)}`, response.status);
      url = new URL(location, url);
      if (url.protocol !== 'http:' && url.protocol !== 'https:')
        throw new DeliveryError(`Redirected to a ${url.protocol} URL`, response.status);
      // 301, 302 and 303 turn a POST into a GET without a body, as browsers and fetch do; 307 and 308 keep both.
      if (response.status <= 303) {
        method = 'GET';
        body = undefined;
      }
      trusted = false;
    }
  }

  private async once(
    url: URL,
    method: string,
    headers: Record<string, string>,
    body: string | undefined,
    signal: AbortSignal,
    trusted: boolean,
  ): Promise<{ status: number; body: string; location: string | null }> {
    signal.throwIfAborted();
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const addresses = await resolve(host, signal).catch((error: Error) => {
      throw new DeliveryError(`Could not resolve ${host}: ${error.message}`);
    });
    const allowed = trusted || this.options.allowPrivate() ? addresses : addresses.filter((a) => !isPrivateAddress(a.address));
    const chosen = allowed[0];
    if (!chosen)
      throw new DeliveryError(
        `Refused: ${host} resolves to a loopback, private or link-local address (${addresses[0]?.address ?? 'none'})`,
      );
    // The connection goes to the address just checked, whatever DNS says a moment later.
    const pinned: LookupFunction = (_hostname, options, callback) => {
      if ((options as { all?: boolean }).all)
        (callback as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [chosen]);
      else callback(null, chosen.address, chosen.family);
    };
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise((resolvePromise, reject) => {
      const req = send(
        url,
        {
          method,
          signal,
          lookup: pinned,
          headers: {
            'user-agent': 'Slipway-Notifications/1.0',
            ...headers,
            ...(body !== undefined ? { 'content-length': String(Buffer.byteLength(body)) } : {}),
          },
        },
        (res: IncomingMessage) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            if (size < BODY_LIMIT) chunks.push(chunk);
            size += chunk.length;
          });
          res.on('end', () =>
            resolvePromise({
              status: res.statusCode ?? 0,
              body: Buffer.concat(chunks).toString('utf8').slice(0, BODY_LIMIT),
              location: typeof res.headers.location === 'string' ? res.headers.location : null,
            }),
          );
          res.on('error', reject);
        },
      );
      req.on('error', (error: Error) =>
        reject(
          signal.aborted
            ? new DeliveryError('No answer within the delivery timeout')
            : new DeliveryError(`Could not reach ${url.host}: ${error.message}`),
        ),
      );
      if (body !== undefined) req.write(body);
      req.end();
    });
  }
}

async function resolve(host: string, signal: AbortSignal): Promise<Array<{ address: string; family: number }>> {
  if (isIP(host)) return [{ address: host, family: isIP(host) }];
  signal.throwIfAborted();
  let onAbort = () => {};
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(new Error('timed out'));
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([dnsLookup(host, { all: true, verbatim: true }), aborted]);
  } finally {
    signal.removeEventListener('abort', onAbort);
    aborted.catch(() => {});
  }
}

/** A URL for an error message: its origin only (paths and queries of webhooks hold their tokens). */
export function redacted(url: URL): string {
  return url.origin;
}

/** A receiver's answer for an error message: one line, short. */
export function answerOf(response: OutboundResponse): string {
  const text = response.body.replace(/\s+/g, ' ').trim().slice(0, 200);
  return text ? `${response.status} ${text}` : String(response.status);
}
