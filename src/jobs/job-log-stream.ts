import { AsyncQueue } from '../platform/async-queue.js';

export type JobEvent<L, S> = { type: 'log'; line: L } | { type: 'status'; status: S };

export type JobStreamEvent<V> = { type: 'snapshot'; lines: V[]; lastId: number } | { type: 'log'; line: V } | { type: 'ping'; t: number };

/** Where one job's log is read from: the table for what is stored, the in-process bus for what comes. */
export interface JobLogSource<L extends { id: number }, S> {
  /** Stored lines after `afterId`, in order. */
  lines(afterId: number): Promise<L[]>;
  /** Whether the job has ended, as the table says now. */
  ended(): Promise<boolean>;
  subscribe(listener: (event: JobEvent<L, S>) => void): () => void;
  isEnd(status: S): boolean;
}

/**
 * A job's log stream: a snapshot of the lines after `lastEventId`, then each new line, with a
 * keep-alive ping. It ends once the job has ended and every line was sent. The bus is subscribed
 * before the snapshot is read and lines are de-duplicated by id, so none is lost between the two.
 */
export async function* followJobLog<L extends { id: number }, S, V>(
  source: JobLogSource<L, S>,
  present: (line: L) => V,
  opts: { lastEventId?: number | undefined; signal: AbortSignal; pingMs: number },
): AsyncGenerator<JobStreamEvent<V>> {
  const queue = new AsyncQueue<JobEvent<L, S>>();
  const unsubscribe = source.subscribe((event) => queue.push(event));
  try {
    const snapshot = await source.lines(opts.lastEventId ?? 0);
    let lastId = snapshot.at(-1)?.id ?? opts.lastEventId ?? 0;
    yield { type: 'snapshot', lines: snapshot.map(present), lastId };
    let finished = await source.ended();
    while (!finished && !opts.signal.aborted) {
      const event = await queue.next(opts.pingMs, opts.signal);
      if (opts.signal.aborted) break;
      if (!event) {
        yield { type: 'ping', t: Date.now() };
        continue;
      }
      if (event.type === 'log') {
        if (event.line.id <= lastId) continue;
        lastId = event.line.id;
        yield { type: 'log', line: present(event.line) };
      } else if (source.isEnd(event.status)) {
        finished = true;
      }
    }
    // Lines written between the last event and the end (or by another process) are not lost.
    for (const line of await source.lines(lastId)) {
      if (opts.signal.aborted) break;
      yield { type: 'log', line: present(line) };
    }
  } finally {
    unsubscribe();
  }
}
