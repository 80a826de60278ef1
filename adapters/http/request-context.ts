import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuditDoor, Services } from '../../src/index.js';
import type { Context, RequestLimiter } from '../../routers/trpc.js';
import { clientAddress } from './forwarded.js';
import { sessionCookie, sessionToken } from './session-cookie.js';

/** `Authorization: Bearer <token>`'s token; undefined for any other header. */
function bearerToken(header: string | undefined): string | undefined {
  const match = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  return match?.[1];
}

/** What every door (REST, SSE, downloads, /trpc, MCP, terminals) builds once per request for the procedures. */
export function requestContexts(opts: {
  services: Services;
  limiter: RequestLimiter;
  trustProxy: boolean;
}): (req: IncomingMessage, res: ServerResponse) => Context {
  const { services, limiter, trustProxy } = opts;
  return (req, res) => ({
    services,
    // A bearer token wins over the cookie: a script's explicit credential is the one it means.
    token: bearerToken(req.headers.authorization) ?? sessionToken(req, trustProxy),
    ip: clientAddress(req, trustProxy),
    limiter,
    cookie: sessionCookie(req, res, trustProxy),
    door: doorOf(req),
  });
}

/** Which door a request came through, for the audit log: the CLI says so in a header; tRPC and MCP by path. */
function doorOf(req: IncomingMessage): AuditDoor {
  if (req.headers['x-slipway-client'] === 'cli') return 'cli';
  const path = req.url ?? '';
  if (path.startsWith('/trpc')) return 'trpc';
  if (path.startsWith('/api/mcp')) return 'mcp';
  return 'rest';
}
