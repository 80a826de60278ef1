import type { Actor } from '../domain/access.js';
import type { ServiceDeps } from '../platform/deps.js';
import { serviceFor } from '../platform/lookup.js';
import type { RuntimeLogView } from './deployment-views.js';
import type { RuntimeLogLine, RuntimeLogSource } from './runtime-logs.port.js';

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
  constructor(
    private readonly deps: ServiceDeps,
    private readonly logs: RuntimeLogSource,
  ) {}

  async stream(actor: Actor, serviceId: string, opts: StreamOptions): Promise<AsyncGenerator<RuntimeStreamEvent>> {
    const service = await serviceFor(this.deps.store, actor, serviceId);
    return this.follow(service.id, opts);
  }

  private async *follow(serviceId: string, opts: StreamOptions): AsyncGenerator<RuntimeStreamEvent> {
    // id = milliseconds * 1000 + the line's rank within its millisecond: the same line gets the
    // same id when a resumed stream reads it again, so `id > lastEventId` is exactly "after".
    let lastMs = -1;
    let rank = 0;
    let lastId = 0;
    const idOf = (line: RuntimeLogLine): number => {
      const ms = line.createdAt.getTime();
      rank = ms === lastMs ? rank + 1 : 0;
      lastMs = ms;
      lastId = Math.max(lastId + 1, ms * 1000 + Math.min(rank, 999));
      return lastId;
    };
    const resumeAfter = opts.lastEventId ?? 0;
    const toView = (line: RuntimeLogLine, id: number): RuntimeLogView => ({
      id,
      line: line.line,
      stream: line.stream,
      createdAt: line.createdAt.toISOString(),
    });
    const fresh = (lines: RuntimeLogLine[]) =>
      lines
        .map((line) => ({ line, id: idOf(line) }))
        .filter(({ id }) => id > resumeAfter)
        .map(({ line, id }) => toView(line, id));
    let sentSnapshot = false;
    for await (const event of this.logs.follow(serviceId, {
      tail: opts.tail ?? this.deps.config.runtimeLogTail,
      since: opts.lastEventId ? new Date(Math.floor(opts.lastEventId / 1000)) : undefined,
      signal: opts.signal,
    })) {
      if (event.type === 'snapshot') {
        sentSnapshot = true;
        yield { type: 'snapshot', lines: fresh(event.lines) };
        yield { type: 'status', ok: true, closed: false };
      } else if (event.type === 'line') {
        for (const line of fresh([event.line])) yield { type: 'log', line };
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
