import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LogStream } from '../../src/domain/types.js';
import { ControlPlane, type ProcessIdentity } from '../../src/jobs/control-plane.js';
import type { JobContext, JobKind } from '../../src/jobs/job-kind.js';
import { followJobLog, type JobEvent } from '../../src/jobs/job-log-stream.js';
import type { JobLog, JobOutcome, JobQueue } from '../../src/jobs/job-queue.port.js';
import { JobRunner } from '../../src/jobs/job-runner.js';
import { openDatabase, type Database } from '../../src/persistence/database.js';
import { createScratchDatabase } from '../helpers/postgres.js';
import { until } from '../helpers/runtime-fakes.js';

/*
 * Platform processes sharing one database (issue 31): each control plane's heartbeat, job claims in
 * its name (a job is run by one process; one a gone process held is settled by another), the lease of
 * the runtime's one leader, and a log stream that reads the lines another process writes. On
 * PostgreSQL, as a cluster runs, with each "process" a ControlPlane of its own on the same database.
 */
const FAST = { heartbeatMs: 100, deadAfterMs: 600 };
let db: Database;
let scratch: { url: string; drop(): Promise<void> };
const planes: ControlPlane[] = [];

/** A process of `hostname`; on that host, the pids in `dead` are not running. */
function identity(hostname: string, pid: number, dead: number[] = []): ProcessIdentity {
  return { hostname, pid, running: (other) => !dead.includes(other) };
}

function plane(id: ProcessIdentity): ControlPlane {
  const made = new ControlPlane(db.store, () => FAST, id);
  planes.push(made);
  return made;
}

beforeEach(async () => {
  scratch = await createScratchDatabase();
  db = await openDatabase({ databaseUrl: scratch.url, dataDir: ':memory:' });
});
afterEach(async () => {
  const t = Date.now();
  for (const p of planes.splice(0)) await p.stop().catch(() => {});
  console.log('planes stopped', Date.now() - t);
  await db.close();
  console.log('db closed', Date.now() - t);
  await scratch.drop();
  console.log('dropped', Date.now() - t);
});

describe('control planes', () => {
  it('tell a live process from one whose heartbeat stopped, and a dead pid on the same host at once', async () => {
    const a = plane(identity('host-a', 100, [300]));
    const b = plane(identity('host-b', 200));
    await a.start();
    await b.start();
    expect(await a.isAlive(b.id)).toBe(true);
    await until(() => a.hasPeers, 2_000);
    // b stops beating (its process froze or lost its network): gone after CONTROL_PLANE_DEAD_AFTER_MS.
    (b as unknown as { timer: NodeJS.Timeout }).timer && clearInterval((b as unknown as { timer: NodeJS.Timeout }).timer);
    const stopped = Date.now();
    await until(async () => !(await a.isAlive(b.id)), 5_000);
    expect(Date.now() - stopped).toBeGreaterThanOrEqual(FAST.deadAfterMs - 150);
    // A process of this host whose pid is gone: at once, whatever its heartbeat says.
    const c = plane(identity('host-a', 300));
    await c.start();
    expect(await a.isAlive(c.id)).toBe(false);
  });

  it('let one process claim a job; another settles it only once the holder is gone', async () => {
    const a = plane(identity('host-a', 100));
    const b = plane(identity('host-b', 200));
    await a.start();
    await b.start();
    expect(await a.claims('deployment').claim('job1')).toBe(true);
    expect(await b.claims('deployment').claim('job1')).toBe(false);
    expect(await b.claims('deployment').orphaned('job1')).toBe(false);
    await a.stop();
    expect(await b.claims('deployment').orphaned('job1')).toBe(true);
    // Settled: the claim is free for whoever claims it next.
    expect(await b.claims('deployment').claim('job1')).toBe(true);
  });

  it('give the lease to one process; another takes it over when the leader is gone, within a heartbeat or two', async () => {
    const a = plane(identity('host-a', 100));
    const b = plane(identity('host-b', 200));
    await a.start();
    await b.start();
    const led: string[] = [];
    await a.lead(
      'runtime',
      async () => void led.push('a'),
      async () => void led.push('a deposed'),
    );
    await b.lead(
      'runtime',
      async () => void led.push('b'),
      async () => void led.push('b deposed'),
    );
    await new Promise((r) => setTimeout(r, 3 * FAST.heartbeatMs));
    expect(led).toEqual(['a']);
    expect(a.isLeading('runtime')).toBe(true);
    expect(b.isLeading('runtime')).toBe(false);
    const gone = Date.now();
    await a.stop();
    await until(() => b.isLeading('runtime'), 5_000);
    expect(led).toEqual(['a', 'a deposed', 'b']);
    expect(Date.now() - gone).toBeLessThan(5 * FAST.heartbeatMs + 500);
  });
});

interface Row {
  id: string;
  status: 'queued' | 'running' | JobOutcome;
  runs: string[];
}

/** A job table both "processes" share (the database's, in production). */
class SharedQueue implements JobQueue<Row> {
  readonly rows: Row[] = [];
  add(id: string, status: Row['status'] = 'queued'): Row {
    const row = { id, status, runs: [] };
    this.rows.push(row);
    return row;
  }
  get(id: string) {
    return this.rows.find((r) => r.id === id)!;
  }
  async listQueued() {
    return this.rows.filter((r) => r.status === 'queued').map((r) => ({ ...r }));
  }
  async listRunning() {
    return this.rows.filter((r) => r.status === 'running').map((r) => ({ ...r }));
  }
  async claim(job: Row) {
    // A slow compare-and-set: the claims table, not this, is what keeps two processes apart.
    await new Promise((r) => setTimeout(r, 5));
    const row = this.get(job.id);
    if (row.status !== 'queued') return null;
    row.status = 'running';
    return { ...row };
  }
  async abortRequested() {
    return [];
  }
  async finish(job: Row, outcome: JobOutcome) {
    const row = this.get(job.id);
    if (row.status === 'running') row.status = outcome;
  }
}

class Kind implements JobKind<Row> {
  readonly settled: string[] = [];
  recoveries = 0;
  constructor(
    readonly queue: SharedQueue,
    private readonly name: string,
    private readonly workMs = 30,
  ) {}
  keyOf(job: Row) {
    return job.id;
  }
  openLog(): JobLog {
    return { write() {}, flush: async () => {} };
  }
  async interrupted(job: Row): Promise<JobOutcome> {
    this.settled.push(job.id);
    return 'failed';
  }
  async recover() {
    this.recoveries++;
  }
  async run(job: Row, { signal }: JobContext): Promise<JobOutcome> {
    this.queue.get(job.id).runs.push(this.name);
    await new Promise((r) => setTimeout(r, this.workMs));
    return signal.aborted ? 'aborted' : 'succeeded';
  }
}

describe('job runners of several processes', () => {
  it('run every job once between them', async () => {
    const queue = new SharedQueue();
    for (let i = 0; i < 24; i++) queue.add(`job${i}`);
    const a = plane(identity('host-a', 100));
    const b = plane(identity('host-b', 200));
    await a.start();
    await b.start();
    const runners = [
      new JobRunner(new Kind(queue, 'a', 300), { concurrency: () => 3, pollMs: 20, claims: a.claims('test') }),
      new JobRunner(new Kind(queue, 'b', 300), { concurrency: () => 3, pollMs: 20, claims: b.claims('test') }),
    ];
    for (const runner of runners) {
      runner.start();
      await runner.recover();
    }
    await until(() => queue.rows.every((r) => r.status === 'succeeded'), 20_000);
    for (const runner of runners) await runner.stop();
    expect(queue.rows.map((r) => r.runs.length)).toEqual(queue.rows.map(() => 1));
    expect(new Set(queue.rows.flatMap((r) => r.runs))).toEqual(new Set(['a', 'b']));
  });

  it('leave another live process\u2019s running job alone at start, and settle it once that process is gone', async () => {
    const queue = new SharedQueue();
    const a = plane(identity('host-a', 100));
    const b = plane(identity('host-b', 200));
    await a.start();
    await b.start();
    // a holds job1, running (its runner is elsewhere: only the claim says so).
    queue.add('job1', 'running');
    expect(await a.claims('test').claim('job1')).toBe(true);
    const kind = new Kind(queue, 'b');
    const runner = new JobRunner(kind, { concurrency: () => 1, pollMs: 20, orphanCheckMs: 50, claims: b.claims('test') });
    runner.start();
    await runner.recover();
    expect(kind.settled).toEqual([]);
    expect(queue.get('job1').status).toBe('running');
    // a is killed: no stop, no release; its heartbeat ends.
    clearInterval((a as unknown as { timer: NodeJS.Timeout }).timer);
    await until(() => kind.settled.includes('job1'), 5_000);
    expect(queue.get('job1')).toMatchObject({ status: 'failed', runs: [] });
    // Its leftovers at runtime are the kind's recovery's (a half-started container).
    await until(() => kind.recoveries >= 2, 2_000);
    await runner.stop();
  });
});

describe('a log stream through another process', () => {
  it('reads the lines another process writes from the table while the bus is quiet, and ends with the job', async () => {
    const table: Array<{ id: number; line: string; stream: LogStream }> = [];
    let ended = false;
    const stream = followJobLog<{ id: number; line: string; stream: LogStream }, string, string>(
      {
        lines: async (after) => table.filter((l) => l.id > after),
        ended: async () => ended,
        // Nothing comes through this process's bus: another process runs the job.
        subscribe: (_listener: (event: JobEvent<{ id: number; line: string; stream: LogStream }, string>) => void) => () => {},
        isEnd: (status) => status === 'done',
        runsHere: () => false,
      },
      (l) => l.line,
      { signal: AbortSignal.timeout(10_000), pingMs: 5_000, pollMs: 50 },
    );
    const first = await stream.next();
    expect(first.value).toEqual({ type: 'snapshot', lines: [], lastId: 0 });
    table.push({ id: 1, line: 'Cloning', stream: 'stdout' });
    expect((await stream.next()).value).toEqual({ type: 'log', line: 'Cloning' });
    table.push({ id: 2, line: 'Building', stream: 'stdout' }, { id: 3, line: 'Deployment succeeded', stream: 'stdout' });
    ended = true;
    const rest: unknown[] = [];
    for await (const event of stream) rest.push(event);
    expect(rest).toEqual([
      { type: 'log', line: 'Building' },
      { type: 'log', line: 'Deployment succeeded' },
    ]);
  });
});
