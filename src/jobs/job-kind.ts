import type { JobLog, JobOutcome, JobQueue } from './job-queue.port.js';

/** The reason a job's signal carries when someone asked it to stop (the API, or its key going away). */
export class JobAborted extends Error {}

/** The reason a job's signal carries when the server shuts down under it. */
export class JobInterrupted extends Error {}

export interface JobContext<L extends JobLog = JobLog> {
  /** Aborted with a JobAborted or JobInterrupted reason; every step of the work honours it. */
  signal: AbortSignal;
  log: L;
}

/**
 * What one kind of durable job (deployments, backups, imports...) tells the JobRunner. The runner
 * does the claiming, exclusivity, concurrency, aborts and recovery bookkeeping; the kind does the work
 * and decides what an interrupted job becomes.
 */
export interface JobKind<J extends { id: string }, L extends JobLog = JobLog> {
  readonly queue: JobQueue<J>;
  /** Jobs with the same key never run at once (deployments: one per service). */
  keyOf(job: J): string;
  openLog(job: J): L;
  /**
   * Asked once per pass, only when there is something to claim: false leaves every job queued for
   * now (deployments: while the container engine is unreachable, a claim would only fail them).
   */
  readyToClaim?(): Promise<boolean>;
  /**
   * A job the table says is running that no runner of this process holds: the process that ran it
   * stopped. Resolves with the outcome to finish it with, or null when the kind took care of the row
   * itself (put it back in the queue, say).
   */
  interrupted(job: J, log: L): Promise<JobOutcome | null>;
  /**
   * The kind's own recovery (leftovers of the work a crash cut short), once interrupted jobs are
   * settled and before anything is claimed. A throw leaves the runner unrecovered: it claims nothing,
   * and `recover()` is to be tried again.
   */
  recover?(): Promise<void>;
  /** Does the work and resolves with how it ended; a throw ends it `failed` (`aborted` when an abort caused it). */
  run(job: J, context: JobContext<L>): Promise<JobOutcome>;
}
