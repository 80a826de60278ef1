import type { ServerResponse } from 'node:http';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { appRouter, createCaller } from '../../routers/app.router.js';
import { proceduresOf, type Context } from '../../routers/trpc.js';

const pathPattern = (path: string) => new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{(\w+)\}/g, '(?<$1>[^/]+)')}/?$`);

/** The queries that declare `meta.download`: `path` is the procedure's (`backups.download`, `databaseTls.ca`). */
const DOWNLOADS = proceduresOf(appRouter).flatMap(({ path, meta: { download } }) =>
  download ? [{ path, download, pattern: pathPattern(download.path) }] : [],
);

/** A file streamed from where it is stored (a backup): its name and size, and its bytes on demand. */
interface StreamedFile {
  fileName: string;
  sizeBytes: number;
  open(signal: AbortSignal): Promise<Readable>;
}

/** A small text file answered whole (a CA certificate); the typed client gets the same object over tRPC. */
interface TextFile {
  filename: string;
  body: string;
}

/**
 * The documented file downloads: the procedure (called through a server-side caller, so the key,
 * its access and scope are checked as everywhere) names the file; a stored file's bytes are streamed
 * to the socket with backpressure, never held in memory. Errors before the first byte are thrown to
 * the app, which answers them as JSON. False when no download has this path.
 */
export async function serveDownload(method: string | undefined, pathname: string, res: ServerResponse, ctx: Context): Promise<boolean> {
  if (method !== 'GET' && method !== 'HEAD') return false;
  for (const download of DOWNLOADS) {
    const match = download.pattern.exec(pathname);
    if (!match) continue;
    const input = Object.fromEntries(Object.entries(match.groups ?? {}).map(([name, value]) => [name, decode(value)]));
    const controller = new AbortController();
    const onClose = () => controller.abort();
    res.on('close', onClose);
    try {
      const caller = createCaller(ctx, { signal: controller.signal });
      const procedure = download.path.split('.').reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], caller);
      const answer = (await (procedure as (input: unknown) => Promise<StreamedFile | TextFile>)(input)) as StreamedFile | TextFile;
      const text = 'body' in answer ? Buffer.from(answer.body, 'utf8') : null;
      const name = 'body' in answer ? answer.filename : answer.fileName;
      const body = method === 'HEAD' || text ? null : await (answer as StreamedFile).open(controller.signal);
      res.writeHead(200, {
        'Content-Type': download.download.contentType ?? 'application/octet-stream',
        'Content-Length': String(text ? text.length : (answer as StreamedFile).sizeBytes),
        'Content-Disposition': `attachment; filename="${name.replace(/[^\w.-]/g, '_')}"`,
        'Cache-Control': 'no-store',
      });
      if (body) await pipeline(body, res);
      else res.end(method === 'HEAD' ? undefined : (text ?? undefined));
    } finally {
      res.off('close', onClose);
    }
    return true;
  }
  return false;
}

function decode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
