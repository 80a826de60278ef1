import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';

/*
 * What a request says about where it came from: its client's address, its scheme and its host. Behind a
 * trusted proxy (TRUST_PROXY) the X-Forwarded-* headers say it; otherwise only the socket is believed.
 */

/** The first value of a header that may be sent several times or as a list. */
function first(value: string | string[] | undefined): string | undefined {
  return (Array.isArray(value) ? value[0] : value)?.split(',')[0]?.trim();
}

/** The client's address: the first X-Forwarded-For entry behind a trusted proxy, else the socket's peer. */
export function clientAddress(req: IncomingMessage, trustProxy: boolean): string {
  if (trustProxy) {
    const forwarded = first(req.headers['x-forwarded-for']);
    if (forwarded) return forwarded;
  }
  return req.socket.remoteAddress ?? 'unknown';
}

/** Whether the request came over HTTPS: directly, or per X-Forwarded-Proto from a trusted proxy. */
export function cameOverHttps(req: IncomingMessage, trustProxy: boolean): boolean {
  return (req.socket as TLSSocket).encrypted === true || (trustProxy && first(req.headers['x-forwarded-proto']) === 'https');
}

/** The origin (`scheme://host`) the client sent this request to. */
export function requestOrigin(req: IncomingMessage, trustProxy: boolean): string {
  const proto = (req.socket as TLSSocket).encrypted ? 'https' : (trustProxy && first(req.headers['x-forwarded-proto'])) || 'http';
  const host = (trustProxy && first(req.headers['x-forwarded-host'])) || req.headers.host || '';
  return `${proto}://${host}`;
}
