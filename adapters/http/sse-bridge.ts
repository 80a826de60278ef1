import type { IncomingMessage, ServerResponse } from 'node:http';
import { isTrackedEnvelope } from '@trpc/server';
import { appRouter, createCaller } from '../../routers/app.router.js';
import { proceduresOf, type Context } from '../../routers/trpc.js';

/** `/api/deployments/{deploymentId}/stream` as a pattern, a named group per parameter; a trailing slash is allowed. */
const pathPattern = (path: string) => new RegExp(`^${path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{(\w+)\}/g, '(?<$1>[^/]+)')}/?$`);

/** The subscriptions that declare `meta.sse`: `path` is the procedure's (`deployments.stream`). */
const SSE_PROCEDURES = proceduresOf(appRouter).flatMap(({ path, meta: { sse } }) =>
  sse ? [{ path, sse, pattern: pathPattern(sse.path) }] : [],
);

/** A matched request: the procedure and the parameters its path named. */
export interface SseRoute {
  procedure: (typeof SSE_PROCEDURES)[number];
  params: Record<string, string>;
}

/**
 * The documented SSE paths: the same tRPC subscriptions the typed client uses, called through a
 * server-side caller, their events written as `event:`/`data:`/`id:` lines. Errors before the
 * first event (401, 403, 404) are thrown to the app, which answers them as JSON (koa-app.ts).
 */
export class SseBridge {
  private readonly open = new Set<AbortController>();

  match(method: string | undefined, pathname: string): SseRoute | null {
    if (method !== 'GET') return null;
    for (const procedure of SSE_PROCEDURES) {
      const match = procedure.pattern.exec(pathname);
      if (match)
        return {
          procedure,
          params: Object.fromEntries(Object.entries(match.groups ?? {}).map(([name, value]) => [name, decodeSegment(value)])),
        };
    }
    return null;
  }

  async serve(route: SseRoute, req: IncomingMessage, res: ServerResponse, ctx: Context, url: URL): Promise<void> {
    const controller = new AbortController();
    const onClose = () => controller.abort();
    req.on('close', onClose);
    res.on('close', onClose);
    this.open.add(controller);
    try {
      const events = await subscribe(createCaller(ctx, { signal: controller.signal }), route.procedure.path, inputOf(route, req, url));
      res.writeHead(200, {
        'Content-Type': 'text/event-stream; charset=utf-8',
        'Cache-Control': 'no-cache, no-transform',
        Connection: 'keep-alive',
        'X-Accel-Buffering': 'no',
      });
      req.socket.setTimeout(0);
      req.socket.setNoDelay(true);
      res.flushHeaders();
      for await (const item of events) {
        if (controller.signal.aborted) break;
        res.write(frame(item));
      }
      res.end();
    } finally {
      this.open.delete(controller);
      req.off('close', onClose);
      controller.abort();
    }
  }

  /** Ends every open stream: on shutdown, so the server can close. */
  closeAll(): void {
    for (const controller of this.open) controller.abort();
  }
}

/** The path's parameters, Last-Event-ID (header or `?lastEventId=`) and the declared integer query parameters. */
function inputOf(route: SseRoute, req: IncomingMessage, url: URL): Record<string, unknown> {
  const header = req.headers['last-event-id'];
  const lastEventId = (Array.isArray(header) ? header[0] : header) ?? url.searchParams.get('lastEventId') ?? undefined;
  const input: Record<string, unknown> = {
    ...route.params,
    lastEventId: lastEventId && /^\d+$/.test(lastEventId) ? lastEventId : undefined,
  };
  for (const name of route.procedure.sse.query ?? []) {
    const value = url.searchParams.get(name);
    input[name] = value && /^\d+$/.test(value) ? Number(value) : undefined;
  }
  return input;
}

/** Calls the subscription at `path` (`deployments.stream`) on the caller. */
function subscribe(caller: ReturnType<typeof createCaller>, path: string, input: Record<string, unknown>): Promise<AsyncIterable<unknown>> {
  const procedure = path.split('.').reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], caller);
  return (procedure as (input: unknown) => Promise<AsyncIterable<unknown>>)(input);
}

/**
 * The router's events as the spec's (platform-api.md, section 6): the event is the `type`; the data
 * is the lines of a snapshot, the line of a log, the event of the event stream, or else the other fields (`{t}`, `{ok, closed}`).
 */
function frame(item: unknown): string {
  const [id, event] = isTrackedEnvelope(item) ? item : [undefined, item];
  const { type, ...fields } = event as { type: string } & Record<string, unknown>;
  const data = 'lines' in fields ? fields.lines : 'line' in fields ? fields.line : 'event' in fields ? fields.event : fields;
  return `${id !== undefined ? `id: ${id}\n` : ''}event: ${type}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** A malformed escape cannot name anything that exists: keep it as is and let the lookup answer 404. */
function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
