import { hostname } from 'node:os';
import { newId } from '../domain/ids.js';
import type { Store } from '../persistence/store.js';
import type { ControlPlaneConfig } from '../platform/platform-config.js';

/** This process, as other processes on the same database see it. */
export interface ProcessIdentity {
  hostname: string;
  pid: number;
  /** Whether a process of this host is running (signal 0): a dead one on our own host is known at once. */
  running(pid: number): boolean;
}

export const THIS_PROCESS: ProcessIdentity = {
  hostname: hostname(),
  pid: process.pid,
  running(pid) {
    try {
      process.kill(pid, 0);
      return true;
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === 'EPERM';
    }
  },
};

/** Which process holds a running job: the JobRunner's side of claims (job-runner.ts). */
export interface JobClaims {
  /** Takes a job for this process; false when a live process holds it. */
  claim(jobId: string): Promise<boolean>;
  /**
   * Whether this process is the only one on the database now: then no other process queues or aborts
   * its jobs, its own writes wake its runners, and polling the table is only a safety net.
   */
  alone?(): boolean;
  release(jobId: string): Promise<void>;
  /** Whether a running job's holder is gone, so that this process settles it (true for a job no one claimed). */
  orphaned(jobId: string): Promise<boolean>;
}

export type ControlPlaneLog = (message: string, extra?: Record<string, unknown>) => void;

/**
 * This platform process among those sharing one database (PostgreSQL in a cluster; SQLite on one
 * server): it registers itself and beats a heartbeat (CONTROL_PLANE_HEARTBEAT_MS, real time, not the
 * platform's clock); a process counts as gone once its heartbeat is older than
 * CONTROL_PLANE_DEAD_AFTER_MS, or at once when it ran on this host and its pid is no longer running.
 * Running jobs are claimed in its name, so another process settles a job only once its holder is
 * gone; and it leads (holds a lease on) the duties one process performs at a time: the deploy runner
 * with the runtime it keeps (host ports, routes, traffic slots), the metrics sampler, the servers'
 * monitor. Until `start()`, claims and leases behave as for a lone process (tests of use cases).
 */
export class ControlPlane {
  readonly id = newId();
  private timer: NodeJS.Timeout | null = null;
  private started = false;
  private stopping = false;
  private beating: Promise<void> | null = null;
  private peers = false;
  private readonly beatListeners: Array<() => Promise<void>> = [];
  private readonly leads = new Map<
    string,
    { held: boolean; onElected: () => Promise<void>; onDeposed: () => Promise<void>; turn: Promise<void> }
  >();

  constructor(
    private readonly store: Store,
    private readonly config: () => ControlPlaneConfig,
    private readonly identity: ProcessIdentity = THIS_PROCESS,
    private readonly log: ControlPlaneLog = () => {},
  ) {}

  get running(): boolean {
    return this.started;
  }

  async start(): Promise<void> {
    const now = new Date();
    await this.store.controlPlanes.register({
      id: this.id,
      hostname: this.identity.hostname,
      pid: this.identity.pid,
      startedAt: now,
      heartbeatAt: now,
    });
    this.started = true;
    this.stopping = false;
    this.peers = await this.othersAlive();
    this.timer = setInterval(() => {
      this.beating ??= this.beat().finally(() => {
        this.beating = null;
      });
    }, this.config().heartbeatMs);
    this.timer.unref();
  }

  /** Gives up what it leads (the duties stop first), then its registration: the others take over at once. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.beating;
    for (const [name, lead] of this.leads) {
      await lead.turn;
      if (lead.held) {
        lead.held = false;
        await lead.onDeposed().catch((error: Error) => this.log('a duty did not stop cleanly', { lease: name, error: error.message }));
        await this.store.controlPlanes.dropLease(name, this.id).catch(() => {});
      }
    }
    this.leads.clear();
    if (this.started) await this.store.controlPlanes.unregister(this.id).catch(() => {});
    this.started = false;
  }

  /**
   * Runs `onElected` once this process holds the lease `name` (at once when it is free or its holder
   * is gone; else when the holder goes), and `onDeposed` if another process took it over meanwhile
   * (this one was taken for gone: a long pause, the database away). Before `start()`: elected at once.
   */
  async lead(name: string, onElected: () => Promise<void>, onDeposed: () => Promise<void>): Promise<void> {
    const lead = { held: false, onElected, onDeposed, turn: Promise.resolve() };
    this.leads.set(name, lead);
    if (!this.started) {
      lead.held = true;
      await onElected();
      return;
    }
    lead.turn = this.contend(name);
    await lead.turn;
  }

  /** Whether this process leads `name` now. */
  isLeading(name: string): boolean {
    return this.leads.get(name)?.held ?? false;
  }

  /** Runs after each heartbeat (while started). */
  onBeat(listener: () => Promise<void>): void {
    this.beatListeners.push(listener);
  }

  /** Whether other processes were alive at the last heartbeat. */
  get hasPeers(): boolean {
    return this.peers;
  }

  /** Started, and no other process alive at the last heartbeat (before `start()`, false: tests poll as they always did). */
  get alone(): boolean {
    return this.started && !this.peers;
  }

  /** Whether another process is registered and alive on this database. */
  async othersAlive(): Promise<boolean> {
    if (!this.started) return false;
    return (await this.store.controlPlanes.list()).some((plane) => plane.id !== this.id && this.planeAlive(plane));
  }

  /** Whether the process `owner` is alive. */
  async isAlive(owner: string): Promise<boolean> {
    if (owner === this.id) return true;
    const plane = await this.store.controlPlanes.get(owner);
    return !!plane && this.planeAlive(plane);
  }

  private planeAlive(plane: { hostname: string; pid: number; heartbeatAt: Date }): boolean {
    if (plane.hostname === this.identity.hostname) {
      // Our own host: a pid that is not running, or our own pid under another id (a restarted container), is a process gone.
      if (plane.pid === this.identity.pid || !this.identity.running(plane.pid)) return false;
    }
    return Date.now() - plane.heartbeatAt.getTime() < this.config().deadAfterMs;
  }

  /** The claims of one kind of job, in this process's name. */
  claims(kind: string): JobClaims {
    return {
      claim: async (jobId) => {
        if (!this.started) return true;
        const record = { jobId, kind, owner: this.id, claimedAt: new Date() };
        for (let attempt = 0; attempt < 2; attempt++) {
          if (await this.store.controlPlanes.claim(record)) return true;
          const existing = await this.store.controlPlanes.claimOf(jobId);
          if (!existing) continue;
          if (existing.owner === this.id) return true;
          if (await this.isAlive(existing.owner)) return false;
          // A claim a gone process left behind (it died between its claim and its job's start).
          await this.store.controlPlanes.release(jobId, existing.owner);
        }
        return false;
      },
      alone: () => this.alone,
      release: async (jobId) => {
        if (this.started) await this.store.controlPlanes.release(jobId, this.id);
      },
      orphaned: async (jobId) => {
        if (!this.started) return true;
        const claim = await this.store.controlPlanes.claimOf(jobId);
        if (!claim) return true;
        if (claim.owner === this.id) return false;
        if (await this.isAlive(claim.owner)) return false;
        await this.store.controlPlanes.release(jobId, claim.owner);
        return true;
      },
    };
  }

  private async beat(): Promise<void> {
    if (this.stopping) return;
    try {
      if (!(await this.store.controlPlanes.beat(this.id, new Date()))) {
        // Another process took this one for gone and removed it: register again, and contend afresh.
        this.log('this control plane was taken for gone by another; registering again', { id: this.id });
        const now = new Date();
        await this.store.controlPlanes.register({
          id: this.id,
          hostname: this.identity.hostname,
          pid: this.identity.pid,
          startedAt: now,
          heartbeatAt: now,
        });
      }
      // One read of the registrations serves both: the heartbeat runs every few seconds for the process's whole life.
      const planes = await this.store.controlPlanes.list();
      await this.prune(planes);
      this.peers = planes.some((plane) => plane.id !== this.id && this.planeAlive(plane));
    } catch (error) {
      this.log('control plane heartbeat failed', { error: (error as Error).message });
    }
    for (const listener of this.beatListeners)
      await listener().catch((error: Error) => this.log('heartbeat listener failed', { error: error.message }));
    for (const [name, lead] of this.leads) {
      lead.turn = lead.turn
        .then(() => this.contend(name))
        .catch((error: Error) => this.log('lease check failed', { lease: name, error: error.message }));
    }
  }

  /** Takes the lease when free or its holder is gone; renews it when held; steps down when another has it. */
  private async contend(name: string): Promise<void> {
    const lead = this.leads.get(name);
    if (!lead || !this.started || this.stopping) return;
    const expiresAt = new Date(Date.now() + this.config().deadAfterMs);
    // A lease held is renewed in one write; it is read only when the write finds it moved.
    if (lead.held && (await this.store.controlPlanes.moveLease(name, this.id, this.id, expiresAt))) return;
    const lease = await this.store.controlPlanes.lease(name);
    let mine = false;
    if (!lease) mine = await this.store.controlPlanes.createLease({ name, holder: this.id, expiresAt });
    else if (lease.holder === this.id) mine = await this.store.controlPlanes.moveLease(name, this.id, this.id, expiresAt);
    else if (!(await this.isAlive(lease.holder))) {
      mine = await this.store.controlPlanes.moveLease(name, lease.holder, this.id, expiresAt);
      if (mine) this.log('took over a duty from a control plane that is gone', { lease: name, from: lease.holder });
    }
    if (mine && !lead.held) {
      lead.held = true;
      this.log('this control plane leads', { lease: name, id: this.id });
      await lead.onElected();
    } else if (!mine && lead.held) {
      lead.held = false;
      this.log('another control plane leads now; this one steps down', { lease: name, id: this.id });
      await lead.onDeposed();
    }
  }

  /** Registrations of processes gone for long: nothing refers to them any more. */
  private async prune(planes: Array<{ id: string; heartbeatAt: Date }>): Promise<void> {
    const cutoff = Date.now() - 10 * this.config().deadAfterMs;
    for (const plane of planes) {
      if (plane.id !== this.id && plane.heartbeatAt.getTime() < cutoff) await this.store.controlPlanes.unregister(plane.id);
    }
  }
}
