import type { IncomingMessage, ServerResponse } from 'node:http';
import { isTrackedEnvelope } from '@trpc/server';
import { createCaller } from '../../routers/app.router.js';
import type { Context } from '../../routers/trpc.js';

type Route = { kind: 'deployment'; deploymentId: string } | { kind: 'runtime'; serviceId: string };

const DEPLOYMENT_STREAM = /^\/api\/deployments\/([^/]+)\/stream\/?$/;
const RUNTIME_STREAM = /^\/api\/services\/([^/]+)\/runtime-logs\/stream\/?$/;

export function matchSseRoute(method: string | undefined, pathname: string): Route | null {
  if (method !== 'GET') return null;
  const deployment = DEPLOYMENT_STREAM.exec(pathname);
  if (deployment) return { kind: 'deployment', deploymentId: decodeSegment(deployment[1]!) };
  const runtime = RUNTIME_STREAM.exec(pathname);
  if (runtime) return { kind: 'runtime', serviceId: decodeSegment(runtime[1]!) };
  return null;
}

/** A malformed escape cannot name anything that exists: keep it as is and let the lookup answer 404. */
function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/**
 * The documented SSE paths: the same tRPC subscriptions the typed client uses, called through a
 * server-side caller and written as `event:`/`data:`/`id:` lines. Errors before the first event
 * (401, 403, 404) are thrown to the app, which answers them as JSON (koa-app.ts).
 */
export class SseBridge {
  private readonly open = new Set<AbortController>();
  async serve(route: Route, req: IncomingMessage, res: ServerResponse, ctx: Context, url: URL): Promise<void> {
    const controller = new AbortController();
    const onClose = () => controller.abort();
    req.on('close', onClose);
    res.on('close', onClose);
    this.open.add(controller);
    const lastEventId = headerValue(req.headers['last-event-id']) ?? url.searchParams.get('lastEventId') ?? undefined;
    const validId = lastEventId && /^\d+$/.test(lastEventId) ? lastEventId : undefined;
    try {
      const caller = createCaller(ctx, { signal: controller.signal });
      const tail = url.searchParams.get('tail');
      const iterable =
        route.kind === 'deployment'
          ? await caller.deployments.stream({ deploymentId: route.deploymentId, lastEventId: validId })
          : await caller.deployments.runtimeLogs({ serviceId: route.serviceId, lastEventId: validId, tail: tail && /^\d+$/.test(tail) ? Number(tail) : undefined });
      res.writeHead(200, {
        'Content-Type': 'text/event-stream; charset=utf-8',
        'Cache-Control': 'no-cache, no-transform',
        Connection: 'keep-alive',
        'X-Accel-Buffering': 'no',
      });
      req.socket.setTimeout(0);
      req.socket.setNoDelay(true);
      res.flushHeaders();
      for await (const item of iterable as AsyncIterable<unknown>) {
        if (controller.signal.aborted) break;
        const [id, event] = isTrackedEnvelope(item) ? [item[0], item[1]] : [undefined, item];
        res.write(frame(event as { type: string } & Record<string, unknown>, id));
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

/** The spec's events: snapshot and log carry lines; ping `{t}`; status `{ok, closed}`. */
function frame(event: { type: string } & Record<string, unknown>, id: string | undefined): string {
  let data: unknown;
  switch (event.type) {
    case 'snapshot':
      data = event.lines;
      break;
    case 'log':
      data = event.line;
      break;
    case 'ping':
      data = { t: event.t };
      break;
    case 'status':
      data = { ok: event.ok, closed: event.closed, ...(event.reason ? { reason: event.reason } : {}) };
      break;
    default:
      data = event;
  }
  return `${id !== undefined ? `id: ${id}\n` : ''}event: ${event.type}\ndata: ${JSON.stringify(data)}\n\n`;
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
