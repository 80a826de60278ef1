import type { LogStream } from '../domain/types.js';
import type { JobLog } from './job-queue.port.js';

/** At most one store per this many ms while lines keep coming; a line after a quiet spell is stored at once. */
const MIN_GAP_MS = 5;
const MAX_BATCH = 200;
const MAX_LINE = 8192;

/** Stores lines of one stream, in order; resolves once they are stored. */
export type LogAppender = (stream: LogStream, lines: string[]) => Promise<unknown>;

/**
 * Collects a running job's log lines and stores them in small batches, masking every secret it was told about
 * on the way. A line is stored on the next turn of the event loop (lines of one chunk of output go together),
 * but never sooner than MIN_GAP_MS after the previous store: a quiet build's line reaches its followers at
 * once (a fixed 20 ms batch was most of a line's way to an SSE client: p50 24 ms, p99 45 ms, against 1 and
 * 13 ms for Docker's own build stream), and a chatty one still costs at most one transaction per MIN_GAP_MS.
 */
export class JobLogWriter implements JobLog {
  private pending: Array<{ line: string; stream: LogStream }> = [];
  private timer: NodeJS.Timeout | null = null;
  private lastFlush = Number.NEGATIVE_INFINITY;
  private flushing: Promise<void> = Promise.resolve();
  private readonly secrets: string[] = [];

  constructor(private readonly append: LogAppender) {}

  /** Values that must never reach a log, e.g. secret env values and tokens. */
  mask(...values: Array<string | null | undefined>): void {
    for (const value of values) if (value && value.length >= 4 && !this.secrets.includes(value)) this.secrets.push(value);
    this.secrets.sort((a, b) => b.length - a.length);
  }

  write = (line: string, stream: LogStream = 'stdout'): void => {
    let text = line.length > MAX_LINE ? `${line.slice(0, MAX_LINE)}…` : line;
    for (const secret of this.secrets) if (text.includes(secret)) text = text.split(secret).join('********');
    this.pending.push({ line: text, stream });
    if (this.pending.length >= MAX_BATCH) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), Math.max(0, this.lastFlush + MIN_GAP_MS - performance.now()));
  };

  /** Stores what is pending; resolves when everything written so far is in the database. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.lastFlush = performance.now();
    const batch = this.pending;
    this.pending = [];
    this.flushing = this.flushing.then(async () => {
      // Consecutive lines of one stream go in one call, in order.
      let start = 0;
      for (let i = 1; i <= batch.length; i++) {
        if (i === batch.length || batch[i]!.stream !== batch[start]!.stream) {
          await this.append(
            batch[start]!.stream,
            batch.slice(start, i).map((l) => l.line),
          );
          start = i;
        }
      }
    });
    return this.flushing;
  }
}
