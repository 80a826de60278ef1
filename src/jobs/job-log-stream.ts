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
  /**
   * Whether this process runs the job, so its lines come through the bus. When another process runs
   * it (several on one database), the stream reads the table instead while the bus is quiet.
   */
  runsHere?(): boolean;
}

/**
 * A job's log stream: a snapshot of the lines after `lastEventId`, then each new line, with a
 * keep-alive ping. It ends once the job has ended and every line was sent. The bus is subscribed
 * before the snapshot is read and lines are de-duplicated by id, so none is lost between the two.
 */
export async function* followJobLog<L extends { id: number }, S, V>(
  source: JobLogSource<L, S>,
  present: (line: L) => V,
  opts: { lastEventId?: number | undefined; signal: AbortSignal; pingMs: number; pollMs?: number },
): AsyncGenerator<JobStreamEvent<V>> {
  const pollMs = opts.pollMs ?? 1_000;
  const queue = new AsyncQueue<JobEvent<L, S>>();
  const unsubscribe = source.subscribe((event) => queue.push(event));
  try {
    const snapshot = await source.lines(opts.lastEventId ?? 0);
    let lastId = snapshot.at(-1)?.id ?? opts.lastEventId ?? 0;
    yield { type: 'snapshot', lines: snapshot.map(present), lastId };
    let finished = await source.ended();
    let lastSent = Date.now();
    while (!finished && !opts.signal.aborted) {
      const remote = source.runsHere ? !source.runsHere() : false;
      const wait = remote ? Math.min(pollMs, Math.max(1, opts.pingMs - (Date.now() - lastSent))) : opts.pingMs;
      const event = await queue.next(wait, opts.signal);
      if (opts.signal.aborted) break;
      if (!event) {
        if (remote) {
          // Another process writes this job's lines: they are read from the table.
          for (const line of await source.lines(lastId)) {
            lastId = line.id;
            lastSent = Date.now();
            yield { type: 'log', line: present(line) };
          }
          finished = await source.ended();
          if (finished || Date.now() - lastSent < opts.pingMs) continue;
        }
        lastSent = Date.now();
        yield { type: 'ping', t: Date.now() };
        continue;
      }
      lastSent = Date.now();
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
