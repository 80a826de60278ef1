import type { IncomingMessage, ServerResponse } from 'node:http';
import type { SessionCookie } from '../../routers/trpc.js';
import { cameOverHttps, requestOrigin } from './forwarded.js';

/** The cookie a browser's session travels in (documented as `cookieAuth` in the OpenAPI document). */
export const SESSION_COOKIE = 'slipway_session';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** One cookie's value from a Cookie header; undefined when absent or malformed. */
function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) {
      const value = part.slice(eq + 1).trim();
      return /^[\w-]{1,200}$/.test(value) ? value : undefined;
    }
  }
  return undefined;
}

/**
 * The session cookie's token, honoured for a state change only when the request comes from this
 * origin (the CSRF rule). SameSite=Lax keeps other sites' POSTs from carrying it, but apps deployed
 * under the same registrable domain (ROOT_DOMAIN) are the same *site*: their pages could still post
 * with it. A browser says where a request comes from (Sec-Fetch-Site, Origin); from anywhere else the
 * cookie is ignored, so the request is anonymous (401). Scripts send the bearer header and are unaffected.
 */
export function sessionToken(req: IncomingMessage, trustProxy: boolean): string | undefined {
  const token = cookieValue(req.headers.cookie, SESSION_COOKIE);
  if (!token || SAFE_METHODS.has(req.method ?? 'GET')) return token;
  const site = req.headers['sec-fetch-site'];
  if (site && site !== 'same-origin' && site !== 'none') return undefined;
  const origin = req.headers.origin;
  if (origin && origin !== requestOrigin(req, trustProxy)) return undefined;
  return token;
}

/**
 * The session cookie: HttpOnly (scripts on the page cannot read it), SameSite=Lax (no cross-site
 * POST carries it), Secure when the request came over HTTPS (directly, or per X-Forwarded-Proto
 * from a trusted proxy). Its lifetime is the session's; the server slides the session itself.
 */
export function sessionCookie(req: IncomingMessage, res: ServerResponse, trustProxy: boolean): SessionCookie {
  const attributes = `Path=/; HttpOnly; SameSite=Lax${cameOverHttps(req, trustProxy) ? '; Secure' : ''}`;
  const append = (cookie: string) => {
    if (res.headersSent) return;
    const existing = res.getHeader('Set-Cookie');
    res.setHeader('Set-Cookie', [...(Array.isArray(existing) ? existing : existing ? [String(existing)] : []), cookie]);
  };
  return {
    set: (token: string, expiresAt: Date) =>
      append(
        `${SESSION_COOKIE}=${token}; ${attributes}; Expires=${expiresAt.toUTCString()}; Max-Age=${Math.max(0, Math.floor((expiresAt.getTime() - Date.now()) / 1000))}`,
      ),
    clear: () => append(`${SESSION_COOKIE}=; ${attributes}; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0`),
  };
}
