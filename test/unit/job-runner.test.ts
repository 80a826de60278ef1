import { afterEach, describe, expect, it } from 'vitest';
import type { LogStream } from '../../src/domain/types.js';
import { JobAborted, JobInterrupted, type JobContext, type JobKind } from '../../src/jobs/job-kind.js';
import type { JobLog, JobOutcome, JobQueue } from '../../src/jobs/job-queue.port.js';
import { JobRunner } from '../../src/jobs/job-runner.js';
import { until } from '../helpers/runtime-fakes.js';

/**
 * The JobRunner with a kind that is not a deployment (a stand-in for backups): what a second kind
 * gets from it without touching it.
 */
interface Row {
  id: string;
  target: string;
  status: 'queued' | 'running' | JobOutcome;
  abortRequested: boolean;
  lines: Array<{ line: string; stream: LogStream }>;
}

class MemoryQueue implements JobQueue<Row> {
  readonly rows: Row[] = [];
  /** `finish <id> <outcome> after <n> lines`, to see that the log was stored first. */
  readonly finishes: string[] = [];

  add(id: string, target: string, status: Row['status'] = 'queued'): Row {
    const row: Row = { id, target, status, abortRequested: false, lines: [] };
    this.rows.push(row);
    return row;
  }
  get(id: string): Row {
    return this.rows.find((r) => r.id === id)!;
  }
  async listQueued() {
    return this.rows.filter((r) => r.status === 'queued').map((r) => ({ ...r }));
  }
  async listRunning() {
    return this.rows.filter((r) => r.status === 'running').map((r) => ({ ...r }));
  }
  async claim(job: Row) {
    const row = this.get(job.id);
    if (row.status !== 'queued') return null;
    row.status = 'running';
    return { ...row };
  }
  async abortRequested(ids: string[]) {
    return this.rows.filter((r) => ids.includes(r.id) && r.abortRequested && r.status === 'running').map((r) => r.id);
  }
  async finish(job: Row, outcome: JobOutcome) {
    const row = this.get(job.id);
    this.finishes.push(`finish ${job.id} ${outcome} after ${row.lines.length} lines`);
    if (row.status === 'running') row.status = outcome;
  }
}

class BufferedLog implements JobLog {
  private pending: Row['lines'] = [];
  constructor(private readonly row: Row) {}
  write(line: string, stream: LogStream = 'stdout') {
    this.pending.push({ line, stream });
  }
  async flush() {
    this.row.lines.push(...this.pending);
    this.pending = [];
  }
}

/** A backup-like kind: each job waits until released (or aborted), per target one at a time. */
class BackupKind implements JobKind<Row> {
  readonly queue = new MemoryQueue();
  readonly active = new Set<string>();
  maxActive = 0;
  recovered = false;
  ready = true;
  private readonly releases = new Map<string, () => void>();

  keyOf(job: Row) {
    return job.target;
  }
  openLog(job: Row) {
    return new BufferedLog(this.queue.get(job.id));
  }
  async readyToClaim() {
    return this.ready;
  }
  async interrupted(job: Row, log: JobLog): Promise<JobOutcome | null> {
    // This kind starts an interrupted backup again rather than failing it.
    if (job.target === 'again') {
      this.queue.get(job.id).status = 'queued';
      return null;
    }
    log.write('interrupted by a restart', 'stderr');
    return 'failed';
  }
  async recover() {
    this.recovered = true;
  }
  release(id: string) {
    this.releases.get(id)?.();
  }
  async run(job: Row, { signal, log }: JobContext): Promise<JobOutcome> {
    this.active.add(job.id);
    this.maxActive = Math.max(this.maxActive, this.active.size);
    log.write(`backing up ${job.target}`);
    try {
      await new Promise<void>((resolve, reject) => {
        this.releases.set(job.id, resolve);
        signal.addEventListener('abort', () => reject(signal.reason), { once: true });
      });
      log.write('done');
      return 'succeeded';
    } catch {
      log.write(`stopped: ${(signal.reason as Error).message}`);
      if (signal.reason instanceof JobInterrupted) return 'failed';
      return signal.reason instanceof JobAborted ? 'aborted' : 'failed';
    } finally {
      this.active.delete(job.id);
    }
  }
}

let runner: JobRunner<Row> | undefined;
afterEach(async () => {
  await runner?.stop();
  runner = undefined;
});

function setup(concurrency = 2) {
  const kind = new BackupKind();
  runner = new JobRunner(kind, { concurrency: () => concurrency, pollMs: 20 });
  return { kind, queue: kind.queue, runner };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('a second kind of job on the JobRunner', () => {
  it('claims nothing until recovered; the kind decides what a job left running becomes', async () => {
    const { kind, queue, runner } = setup();
    queue.add('left', 'db1', 'running');
    queue.add('again', 'again', 'running');
    queue.add('new', 'db2');
    runner.start();
    await sleep(80);
    expect(queue.get('new').status).toBe('queued');

    await runner.recover();
    expect(kind.recovered).toBe(true);
    expect(queue.get('left')).toMatchObject({ status: 'failed', lines: [{ line: 'interrupted by a restart', stream: 'stderr' }] });
    expect(queue.finishes).toContain('finish left failed after 1 lines');
    await until(() => kind.active.has('new') && kind.active.has('again'));
  });

  it('runs one job per key and at most `concurrency` at once, oldest first', async () => {
    const { kind, queue, runner } = setup(2);
    for (const [id, target] of [
      ['a1', 'a'],
      ['a2', 'a'],
      ['b1', 'b'],
      ['c1', 'c'],
    ] as const)
      queue.add(id, target);
    runner.start();
    await runner.recover();
    await until(() => kind.active.size === 2);
    await sleep(80);
    expect([...kind.active].sort()).toEqual(['a1', 'b1']);
    kind.release('a1');
    await until(() => kind.active.has('c1') || kind.active.has('a2'));
    kind.release('b1');
    await until(() => kind.active.has('c1') && kind.active.has('a2'));
    kind.release('c1');
    kind.release('a2');
    await until(() => queue.rows.every((r) => r.status === 'succeeded'));
    expect(kind.maxActive).toBe(2);
    expect(queue.finishes).toContain('finish a1 succeeded after 2 lines');
  });

  it('leaves the queue alone while the kind is not ready to claim', async () => {
    const { kind, queue, runner } = setup();
    kind.ready = false;
    queue.add('x', 'db');
    runner.start();
    await runner.recover();
    await sleep(80);
    expect(queue.get('x').status).toBe('queued');
    kind.ready = true;
    await until(() => kind.active.has('x'));
  });

  it('an abort written into the row reaches the job; abort() and abortKeys() reach it at once', async () => {
    const { kind, queue, runner } = setup(3);
    queue.add('row', 'a');
    queue.add('call', 'b');
    queue.add('key', 'c');
    runner.start();
    await runner.recover();
    await until(() => kind.active.size === 3);

    queue.get('row').abortRequested = true;
    await until(() => queue.get('row').status === 'aborted');
    expect(runner.abort('call')).toBe(true);
    await until(() => queue.get('call').status === 'aborted');
    await runner.abortKeys(['c'], new JobAborted('the target is being deleted'));
    expect(queue.get('key')).toMatchObject({ status: 'aborted' });
    expect(queue.get('key').lines.at(-1)?.line).toBe('stopped: the target is being deleted');
    expect(runner.abort('gone')).toBe(false);
  });

  it('stop() interrupts what runs with JobInterrupted and claims nothing more', async () => {
    const { kind, queue, runner } = setup(1);
    queue.add('one', 'a');
    queue.add('two', 'b');
    runner.start();
    await runner.recover();
    await until(() => kind.active.has('one'));
    await runner.stop();
    expect(queue.get('one')).toMatchObject({ status: 'failed' });
    expect(queue.get('one').lines.at(-1)?.line).toBe('stopped: the server is shutting down');
    await sleep(80);
    expect(queue.get('two').status).toBe('queued');
  });

  it('a job whose work throws ends failed, with the error in its log', async () => {
    const { kind, queue, runner } = setup();
    kind.run = async () => {
      throw new Error('disk full');
    };
    queue.add('boom', 'a');
    runner.start();
    await runner.recover();
    await until(() => queue.get('boom').status === 'failed');
    expect(queue.get('boom').lines).toEqual([{ line: 'Internal error: disk full', stream: 'stderr' }]);
  });
});

describe('a JobRunner in a process alone on its database', () => {
  /** Counts the table reads for queued jobs: what an idle platform pays for polling. */
  function counted(alone: { value: boolean }) {
    const kind = new BackupKind();
    let reads = 0;
    const listQueued = kind.queue.listQueued.bind(kind.queue);
    kind.queue.listQueued = async () => {
      reads++;
      return listQueued();
    };
    const claims = {
      claim: async () => true,
      release: async () => {},
      orphaned: async () => true,
      alone: () => alone.value,
    };
    runner = new JobRunner(kind, { concurrency: () => 2, pollMs: 20, claims });
    return { kind, runner, reads: () => reads };
  }

  it('looks at the table seldom while alone, yet a wake claims at once; with a peer it polls at its pace again', async () => {
    const alone = { value: true };
    const { kind, runner, reads } = counted(alone);
    runner.start();
    await runner.recover();
    const before = reads();
    await sleep(400);
    // 20 ticks of 20 ms: alone, at most the one look the first tick takes.
    expect(reads() - before).toBeLessThanOrEqual(1);
    kind.queue.add('b1', 'db1');
    runner.wake();
    await until(() => kind.active.has('b1'), 1_000);
    kind.release('b1');
    // A process joins: the next ticks poll again, so its queued job is seen without a wake here.
    alone.value = false;
    kind.queue.add('b2', 'db2');
    await until(() => kind.active.has('b2'), 1_000);
    kind.release('b2');
  });

  it('a job queued and woken for while a pass reads the queue is claimed after that pass, not at the next poll', async () => {
    const { kind, runner } = counted({ value: true });
    runner.start();
    await runner.recover();
    await sleep(30);
    // The pass reads the queue before b1 is written, and is still running when b1's wake comes.
    let readDone!: () => void;
    const listQueued = kind.queue.listQueued;
    kind.queue.listQueued = async () => {
      const rows = await listQueued();
      await new Promise<void>((resolve) => (readDone = resolve));
      return rows;
    };
    runner.wake();
    await until(() => readDone !== undefined, 1_000);
    kind.queue.listQueued = listQueued;
    kind.queue.add('b1', 'db1');
    runner.wake();
    readDone();
    // Alone, the poll looks again only after 5 s.
    await until(() => kind.active.has('b1'), 1_000);
    kind.release('b1');
  });
});
