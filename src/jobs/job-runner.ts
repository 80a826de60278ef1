import type { JobClaims } from './control-plane.js';
import { JobAborted, JobInterrupted, type JobKind } from './job-kind.js';
import type { JobLog, JobOutcome } from './job-queue.port.js';

export type RunnerLog = (message: string, extra?: Record<string, unknown>) => void;

export interface JobRunnerOptions {
  /** Jobs run at once; read at every pass, so a settings change applies. 0 pauses the runner. */
  concurrency: () => number;
  /** How often the table is looked at for queued jobs and abort requests; `wake()` does not wait for it. */
  pollMs?: number;
  log?: RunnerLog;
  /**
   * Which process holds each running job, when several share the database (control-plane.ts): a job
   * is claimed in this process's name, and one that another process runs is settled only once that
   * process is gone. Without it, every running job this runner does not hold is a leftover.
   */
  claims?: JobClaims;
  /** How often running jobs are checked for a holder that is gone (with claims). */
  orphanCheckMs?: number;
}

interface RunningJob<J> {
  job: J;
  key: string;
  controller: AbortController;
  done: Promise<void>;
}

const POLL_MS = 500;
/**
 * The table looked at while this process is alone on the database (claims say so): every job it
 * queues or aborts wakes it at once, so the poll only backs those up. Polling every 500 ms cost an idle
 * platform two queries a second per runner.
 */
const ALONE_POLL_MS = 5_000;
const ORPHAN_CHECK_MS = 5_000;

/**
 * Runs the queued jobs of one kind from their table: at most one per key at a time and at most
 * `concurrency` at once, each with its own AbortController. Nothing is claimed until `recover()`
 * has settled what a previous process left running, since the kind's recovery could mistake a new
 * job's work for a leftover. A second kind gets a JobRunner of its own.
 */
export class JobRunner<J extends { id: string }, L extends JobLog = JobLog> {
  private readonly running = new Map<string, RunningJob<J>>();
  private timer: NodeJS.Timeout | null = null;
  private ticking: Promise<void> | null = null;
  private checkingAborts: Promise<void> | null = null;
  private checkingOrphans: Promise<void> | null = null;
  private lastOrphanCheck = 0;
  private lastPoll = 0;
  /** A wake came while a pass ran (see wake). */
  private wakeAgain = false;
  private stopped = true;
  private recoveredOnce = false;
  private readonly log: RunnerLog;

  constructor(
    private readonly kind: JobKind<J, L>,
    private readonly options: JobRunnerOptions,
  ) {
    this.log = options.log ?? (() => {});
  }

  /** Starts polling; claims wait for `recover()`. */
  start(): void {
    this.stopped = false;
    this.recoveredOnce = false;
    this.timer = setInterval(() => {
      // Asked at every tick whether this process is still alone: a process that joins is heard within a tick.
      if (!this.options.claims?.alone?.() || Date.now() - this.lastPoll >= ALONE_POLL_MS) {
        this.lastPoll = Date.now();
        this.wake();
        this.checkingAborts ??= this.checkAbortRequests().finally(() => {
          this.checkingAborts = null;
        });
      }
      // On their own cadence, alone or not: a process that has just gone leaves this one alone with its jobs.
      if (
        this.options.claims &&
        this.recoveredOnce &&
        Date.now() - this.lastOrphanCheck >= (this.options.orphanCheckMs ?? ORPHAN_CHECK_MS)
      ) {
        this.lastOrphanCheck = Date.now();
        this.checkingOrphans ??= this.settleOrphans()
          .then(async (settled) => {
            // What the gone process left at runtime (a half-started container) is the kind's recovery's to clear.
            if (settled > 0) await this.kind.recover?.();
          })
          .catch((error: Error) => this.log('jobs of a gone process could not be settled', { error: error.message }))
          .finally(() => {
            this.checkingOrphans = null;
          });
      }
    }, this.options.pollMs ?? POLL_MS);
  }

  /** Stops claiming and interrupts what runs; the kind ends those jobs, saying why. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    for (const job of this.running.values()) job.controller.abort(new JobInterrupted('the server is shutting down'));
    await Promise.allSettled([...this.running.values()].map((job) => job.done));
    await this.ticking;
    await this.checkingAborts;
    await this.checkingOrphans;
  }

  get recovered(): boolean {
    return this.recoveredOnce;
  }

  get stopping(): boolean {
    return this.stopped;
  }

  /**
   * Settles the jobs the table says are running but no one here holds (the kind says how), runs the
   * kind's own recovery, then lets claims begin. Throws when either fails; call it again later.
   */
  async recover(): Promise<void> {
    await this.settleOrphans();
    await this.kind.recover?.();
    this.recoveredOnce = true;
    this.lastOrphanCheck = Date.now();
    this.wake();
  }

  /** Running jobs that no runner holds any more (this process's before a restart, or a gone process's): the kind says what they become. */
  private async settleOrphans(): Promise<number> {
    let settled = 0;
    for (const job of await this.kind.queue.listRunning()) {
      if (this.running.has(job.id)) continue;
      if (this.options.claims && !(await this.options.claims.orphaned(job.id))) continue;
      const log = this.kind.openLog(job);
      const outcome = await this.kind.interrupted(job, log);
      await log.flush();
      if (outcome) await this.kind.queue.finish(job, outcome);
      await this.options.claims?.release(job.id);
      settled++;
    }
    return settled;
  }

  /**
   * Looks at the queue now rather than at the next poll. A wake during a pass is kept for one more pass after
   * it: the pass may have read the queue before the job that woke it was written, and the next poll is
   * ALONE_POLL_MS away.
   */
  wake(): void {
    if (this.stopped || !this.recoveredOnce) return;
    if (this.ticking) {
      this.wakeAgain = true;
      return;
    }
    this.wakeAgain = false;
    this.ticking = this.tick()
      .catch((error: Error) => this.log('runner tick failed', { error: error.message }))
      .finally(() => {
        this.ticking = null;
        if (this.wakeAgain) this.wake();
      });
  }

  /** Aborts a job this runner holds; false when it holds none of that id. */
  abort(id: string, reason: Error = new JobAborted('aborted')): boolean {
    const job = this.running.get(id);
    job?.controller.abort(reason);
    return !!job;
  }

  /** Aborts the jobs of these keys and resolves once they have ended (their work no longer writes). */
  async abortKeys(keys: Iterable<string>, reason: Error): Promise<void> {
    const wanted = new Set(keys);
    const jobs = [...this.running.values()].filter((job) => wanted.has(job.key));
    for (const job of jobs) job.controller.abort(reason);
    await Promise.allSettled(jobs.map((job) => job.done));
  }

  /** Keys with a job under way. */
  busyKeys(): Set<string> {
    return new Set([...this.running.values()].map((job) => job.key));
  }

  holds(id: string): boolean {
    return this.running.has(id);
  }

  private async tick(): Promise<void> {
    const limit = this.options.concurrency();
    if (this.running.size >= limit) return;
    const queued = await this.kind.queue.listQueued();
    const busy = this.busyKeys();
    let asked = false;
    for (const candidate of queued) {
      if (this.stopped || this.running.size >= limit) return;
      const key = this.kind.keyOf(candidate);
      if (busy.has(key)) continue;
      // Asked only when there is something to claim, once per pass.
      if (!asked) {
        asked = true;
        if (!this.recoveredOnce) return;
        if (this.kind.readyToClaim && !(await this.kind.readyToClaim())) return;
      }
      busy.add(key);
      // Claimed in this process's name first: of several processes, one gets the job.
      if (this.options.claims && !(await this.options.claims.claim(candidate.id))) continue;
      const job = await this.kind.queue.claim(candidate);
      if (!job) {
        await this.options.claims?.release(candidate.id);
        continue;
      }
      const controller = new AbortController();
      const entry: RunningJob<J> = { job, key, controller, done: Promise.resolve() };
      this.running.set(job.id, entry);
      entry.done = this.execute(job, controller.signal).finally(() => {
        this.running.delete(job.id);
        this.wake();
      });
    }
  }

  private async execute(job: J, signal: AbortSignal): Promise<void> {
    const log = this.kind.openLog(job);
    let outcome: JobOutcome;
    try {
      outcome = await this.kind.run(job, { signal, log });
    } catch (error) {
      // The kind reports its own failures; this is what it did not expect.
      log.write(`Internal error: ${(error as Error).message}`, 'stderr');
      outcome = signal.reason instanceof JobAborted ? 'aborted' : 'failed';
    }
    try {
      await log.flush();
      await this.kind.queue.finish(job, outcome);
      await this.options.claims?.release(job.id);
    } catch (error) {
      this.log('a finished job could not be recorded', { jobId: job.id, error: (error as Error).message });
    }
  }

  /** An abort written into a row (by this process or another) reaches the job within a poll. */
  private async checkAbortRequests(): Promise<void> {
    if (this.running.size === 0) return;
    try {
      for (const id of await this.kind.queue.abortRequested([...this.running.keys()])) this.abort(id);
    } catch (error) {
      this.log('abort requests could not be read', { error: (error as Error).message });
    }
  }
}
