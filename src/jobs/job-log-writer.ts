import type { LogStream } from '../domain/types.js';
import type { JobLog } from './job-queue.port.js';

const FLUSH_MS = 20;
const MAX_BATCH = 200;
const MAX_LINE = 8192;

/** Stores lines of one stream, in order; resolves once they are stored. */
export type LogAppender = (stream: LogStream, lines: string[]) => Promise<unknown>;

/**
 * Collects a running job's log lines and stores them in small batches (one transaction per 20 ms,
 * not one per line), masking every secret it was told about on the way.
 */
export class JobLogWriter implements JobLog {
  private pending: Array<{ line: string; stream: LogStream }> = [];
  private timer: NodeJS.Timeout | null = null;
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
    else this.timer ??= setTimeout(() => void this.flush(), FLUSH_MS);
  };

  /** Stores what is pending; resolves when everything written so far is in the database. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
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
