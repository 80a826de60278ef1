import type { ServerResponse } from 'node:http';
import { appRouter, createCaller } from '../../routers/app.router.js';
import { proceduresOf, type Context, type DownloadMeta } from '../../routers/trpc.js';

const pathPattern = (path: string) => new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{(\w+)\}/g, '(?<$1>[^/]+)')}/?$`);

/** The queries that declare `meta.download`: `path` is the procedure's (`databaseTls.ca`). */
const DOWNLOADS = proceduresOf(appRouter).flatMap(({ path, meta: { download } }) =>
  download ? [{ path, download, pattern: pathPattern(download.path) }] : [],
);

export interface DownloadRoute {
  procedure: (typeof DOWNLOADS)[number];
  params: Record<string, string>;
}

/**
 * The documented file paths (a CA certificate as PEM): the same queries the typed client calls, through
 * a server-side caller, their `body` written as the file. Errors are thrown to the app, which answers
 * them as JSON like every other (koa-app.ts).
 */
export function matchDownload(method: string | undefined, pathname: string): DownloadRoute | null {
  if (method !== 'GET') return null;
  for (const procedure of DOWNLOADS) {
    const match = procedure.pattern.exec(pathname);
    if (match)
      return {
        procedure,
        params: Object.fromEntries(Object.entries(match.groups ?? {}).map(([name, value]) => [name, decodeSegment(value)])),
      };
  }
  return null;
}

export async function serveDownload(route: DownloadRoute, res: ServerResponse, ctx: Context): Promise<void> {
  const caller = createCaller(ctx);
  const query = route.procedure.path.split('.').reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], caller);
  const file = await (query as (input: unknown) => Promise<{ filename: string; body: string }>)(route.params);
  const body = Buffer.from(file.body, 'utf8');
  res.writeHead(200, {
    'Content-Type': route.procedure.download.contentType,
    'Content-Length': body.length,
    'Content-Disposition': `attachment; filename="${file.filename.replace(/[^A-Za-z0-9._-]/g, '_')}"`,
    'Cache-Control': 'no-store',
  });
  res.end(body);
}

/** A procedure served as a file (`meta.download`), for the OpenAPI document. */
export function downloadPaths(): Array<[string, DownloadMeta]> {
  return DOWNLOADS.map(({ download }) => [download.path, download]);
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
