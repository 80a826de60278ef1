import type { LogStream } from '../domain/types.js';

/** How a job ended; the row keeps it. */
export type JobOutcome = 'succeeded' | 'failed' | 'aborted';

/**
 * The table a job kind keeps its jobs in. The table is the queue: a restart loses nothing, and two
 * runners (or a runner and an abort) never both win a job, since every move is a compare-and-set.
 */
export interface JobQueue<J extends { id: string }> {
  /** Queued jobs, oldest first. */
  listQueued(): Promise<J[]>;
  /** queued -> running, only if it still is queued: the claimed job, or null when something else moved it first. */
  claim(job: J): Promise<J | null>;
  /** What the table says is running: after a crash, some of it no process holds any more. */
  listRunning(): Promise<J[]>;
  /** Those of `ids` whose rows ask for an abort (an abort written by another process is seen too). */
  abortRequested(ids: string[]): Promise<string[]>;
  /** running -> `outcome`; called once the job's log is stored, so a follower sees every line before the end. */
  finish(job: J, outcome: JobOutcome): Promise<void>;
}

/** A job's log as its work writes it: lines are stored in batches, so `flush` says when they all are. */
export interface JobLog {
  write(line: string, stream?: LogStream): void;
  flush(): Promise<void>;
}
