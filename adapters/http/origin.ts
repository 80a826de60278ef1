import type { IncomingMessage } from 'node:http';
import { ForbiddenError } from '../../src/domain/errors.js';

/**
 * A browser always sends Origin: only the platform's own pages (PUBLIC_URL, or the host the request
 * was sent to when none is configured) may use the terminal and tool endpoints with it. Clients that
 * are not browsers send none and authenticate with their key.
 */
export function assertOriginAllowed(req: IncomingMessage, publicUrl: string | null): void {
  const origin = req.headers.origin;
  if (origin === undefined) return;
  let allowed: boolean;
  if (publicUrl) allowed = origin === new URL(publicUrl).origin;
  else {
    try {
      allowed = new URL(origin).host === req.headers.host;
    } catch {
      allowed = false;
    }
  }
  if (!allowed) throw new ForbiddenError(`Origin ${origin.slice(0, 200)} may not use this endpoint`);
}
