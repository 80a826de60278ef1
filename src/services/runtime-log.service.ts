import type { Actor } from './access.js';
import type { ServiceDeps } from './deps.js';
import { serviceFor } from './lookup.js';
import type { RuntimeLogView } from './views.js';
import type { RuntimeLogLine } from '../ports/runtime-logs.port.js';

interface StreamOptions {
  lastEventId?: number | undefined;
  tail?: number | undefined;
  signal: AbortSignal;
}

export type RuntimeStreamEvent =
  | { type: 'snapshot'; lines: RuntimeLogView[] }
  | { type: 'log'; line: RuntimeLogView }
  | { type: 'status'; ok: boolean; closed: boolean; reason?: string };

/**
 * The runtime log stream of a service's current container. Line ids are the line's time in
 * microseconds (bumped to stay strictly ascending), so a client resuming with its last id
 * gets what came after, even across a new container.
 */
export class RuntimeLogService {
  constructor(private readonly deps: ServiceDeps) {}

  async stream(actor: Actor, serviceId: string, opts: StreamOptions): Promise<AsyncGenerator<RuntimeStreamEvent>> {
    const service = await serviceFor(this.deps.store, actor, serviceId);
    return this.follow(service.id, opts);
  }

  private async *follow(serviceId: string, opts: StreamOptions): AsyncGenerator<RuntimeStreamEvent> {
    let lastId = opts.lastEventId ?? 0;
    const toView = (line: RuntimeLogLine): RuntimeLogView => {
      lastId = Math.max(lastId + 1, line.createdAt.getTime() * 1000);
      return { id: lastId, line: line.line, stream: line.stream, createdAt: line.createdAt.toISOString() };
    };
    const after = (line: RuntimeLogLine) => line.createdAt.getTime() * 1000 > (opts.lastEventId ?? 0);
    let sentSnapshot = false;
    for await (const event of this.deps.runtimeLogs.follow(serviceId, {
      tail: opts.tail ?? this.deps.config.runtimeLogTail,
      since: opts.lastEventId ? new Date(Math.floor(opts.lastEventId / 1000)) : undefined,
      signal: opts.signal,
    })) {
      if (event.type === 'snapshot') {
        sentSnapshot = true;
        yield { type: 'snapshot', lines: event.lines.filter(after).map(toView) };
        yield { type: 'status', ok: true, closed: false };
      } else if (event.type === 'line') {
        if (after(event.line)) yield { type: 'log', line: toView(event.line) };
      } else {
        if (!sentSnapshot) yield { type: 'snapshot', lines: [] };
        yield { type: 'status', ok: event.ok, closed: true, reason: event.reason };
        return;
      }
    }
    if (!sentSnapshot) yield { type: 'snapshot', lines: [] };
    if (!opts.signal.aborted) yield { type: 'status', ok: true, closed: true, reason: 'log stream ended' };
  }
}
