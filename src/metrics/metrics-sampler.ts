import type { ServiceDeps } from '../platform/deps.js';
import type { MetricRecord } from './metrics.repository.js';
import type { ContainerStats, ContainerStatsSource } from './container-stats.port.js';
import type { RequestLogSource } from './request-log.port.js';

const MINUTE_MS = 60_000;
/** Old rows are removed at most this often. */
const PRUNE_EVERY_MS = 10 * MINUTE_MS;

/** A service's resource use now: its running containers summed (two during a cutover). */
export interface CurrentSample {
  at: Date;
  cpuPercent: number;
  memoryUsedBytes: number;
  memoryLimitBytes: number;
  /** Cumulative since each running container started. */
  netRxBytes: number;
  netTxBytes: number;
  blockReadBytes: number;
  blockWriteBytes: number;
  restarts: number;
}

interface Bucket {
  minute: number;
  ticks: number;
  cpuSum: number;
  memorySum: number;
  memoryLimit: number;
  netRx: number;
  netTx: number;
  blockRead: number;
  blockWrite: number;
  restarts: number;
  requests: number;
  errors5xx: number;
}

export interface SamplerOptions {
  intervalMs: number;
  retentionMs: number;
  /**
   * The proxy's access data and which service each hostname routes to: requests and 5xx answers
   * are counted in the minute a tick reads them (so within one interval of when they were served).
   */
  requests?: { source: RequestLogSource; hostnames: () => Promise<Map<string, string>> };
}

/**
 * Samples every running container of the install at a fixed interval (one pass over the engine per
 * tick, see ContainerStatsSource), keeps each service's latest sample in memory, and writes one
 * downsampled row per service and minute: averages of CPU and memory, growth of the byte counters.
 * Rows older than the retention are removed, so the history is bounded and survives a restart.
 */
export class MetricsSampler {
  private readonly current = new Map<string, CurrentSample>();
  private readonly previous = new Map<string, ContainerStats>();
  private readonly buckets = new Map<string, Bucket>();
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = true;
  private baselined = false;
  private lastPrune = 0;
  private failing = false;
  private readonly controller = new AbortController();

  constructor(
    private readonly deps: ServiceDeps,
    private readonly source: ContainerStatsSource,
    private readonly options: SamplerOptions,
    private readonly log: (message: string, extra?: Record<string, unknown>) => void = () => {},
  ) {}

  get intervalMs(): number {
    return this.options.intervalMs;
  }

  start(): void {
    if (!this.stopped || this.options.intervalMs <= 0) return;
    this.stopped = false;
    this.schedule(0);
  }

  /** Ends the loop, and writes the minute under way so a restart loses at most one tick. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.controller.abort();
    await this.running;
    await this.flush(Number.POSITIVE_INFINITY).catch(() => {});
  }

  /** The latest sample of a service with a running container, or null. */
  currentOf(serviceId: string): CurrentSample | null {
    return this.current.get(serviceId) ?? null;
  }

  /** The minute under way of a service, not written yet: the newest point of its series. */
  pendingOf(serviceId: string): MetricRecord | null {
    const bucket = this.buckets.get(serviceId);
    return bucket ? rowOf(serviceId, bucket) : null;
  }

  /** One sampling pass (the loop calls it; tests too). */
  async tick(now = Date.now()): Promise<void> {
    const signal = AbortSignal.any([this.controller.signal, AbortSignal.timeout(Math.max(this.options.intervalMs, 5_000))]);
    await this.countRequests(now, signal);
    let stats: ContainerStats[];
    try {
      stats = await this.source.sample(signal);
      if (this.failing) this.log('metrics sampling works again');
      this.failing = false;
    } catch (error) {
      if (!this.failing) this.log('metrics sampling failed; retrying every interval', { error: (error as Error).message });
      this.failing = true;
      return;
    }
    const minute = Math.floor(now / MINUTE_MS) * MINUTE_MS;
    await this.flush(minute);
    const byService = new Map<string, CurrentSample>();
    const seen = new Set<string>();
    for (const s of stats) {
      seen.add(s.containerId);
      const before = this.previous.get(s.containerId);
      this.previous.set(s.containerId, s);
      const cpuDelta = before ? s.cpuTotal - before.cpuTotal : 0;
      const systemDelta = before ? s.systemCpuTotal - before.systemCpuTotal : 0;
      const cpuPercent = before && cpuDelta > 0 && systemDelta > 0 ? (cpuDelta / systemDelta) * s.onlineCpus * 100 : 0;
      // The first pass after a start is the baseline: containers' whole lifetimes are not one minute's growth.
      const grown = (now: number, then: number | undefined) => (!this.baselined ? 0 : then === undefined ? now : Math.max(0, now - then));
      const sample = byService.get(s.serviceId) ?? emptySample(new Date(now));
      sample.cpuPercent += cpuPercent;
      sample.memoryUsedBytes += s.memoryUsedBytes;
      sample.memoryLimitBytes = Math.max(sample.memoryLimitBytes, s.memoryLimitBytes);
      sample.netRxBytes += s.netRxBytes;
      sample.netTxBytes += s.netTxBytes;
      sample.blockReadBytes += s.blockReadBytes;
      sample.blockWriteBytes += s.blockWriteBytes;
      sample.restarts += s.restarts;
      byService.set(s.serviceId, sample);
      const bucket = this.bucketOf(s.serviceId, minute);
      bucket.netRx += grown(s.netRxBytes, before?.netRxBytes);
      bucket.netTx += grown(s.netTxBytes, before?.netTxBytes);
      bucket.blockRead += grown(s.blockReadBytes, before?.blockReadBytes);
      bucket.blockWrite += grown(s.blockWriteBytes, before?.blockWriteBytes);
    }
    for (const id of this.previous.keys()) if (!seen.has(id)) this.previous.delete(id);
    for (const [serviceId, sample] of byService) {
      const bucket = this.bucketOf(serviceId, minute);
      bucket.ticks++;
      bucket.cpuSum += sample.cpuPercent;
      bucket.memorySum += sample.memoryUsedBytes;
      bucket.memoryLimit = Math.max(bucket.memoryLimit, sample.memoryLimitBytes);
      bucket.restarts = Math.max(bucket.restarts, sample.restarts);
    }
    this.current.clear();
    for (const [serviceId, sample] of byService) this.current.set(serviceId, sample);
    this.baselined = true;
    if (now - this.lastPrune >= PRUNE_EVERY_MS) {
      this.lastPrune = now;
      await this.deps.store.metrics.deleteBefore(new Date(now - this.options.retentionMs));
    }
  }

  /** Adds what the proxy answered since the last tick to each service's minute; a proxy without access data counts nothing. */
  private async countRequests(now: number, signal: AbortSignal): Promise<void> {
    const requests = this.options.requests;
    if (!requests) return;
    const minute = Math.floor(now / MINUTE_MS) * MINUTE_MS;
    try {
      const counts = await requests.source.drain(signal);
      if (counts.length === 0) return;
      await this.flush(minute);
      const hostnames = await requests.hostnames();
      for (const count of counts) {
        const serviceId = hostnames.get(count.hostname);
        if (!serviceId) continue;
        const bucket = this.bucketOf(serviceId, minute);
        bucket.requests += count.requests;
        bucket.errors5xx += count.errors5xx;
      }
    } catch (error) {
      this.log('reading the proxy access log failed', { error: (error as Error).message });
    }
  }

  private bucketOf(serviceId: string, minute: number): Bucket {
    let bucket = this.buckets.get(serviceId);
    if (!bucket) {
      bucket = {
        minute,
        ticks: 0,
        cpuSum: 0,
        memorySum: 0,
        memoryLimit: 0,
        netRx: 0,
        netTx: 0,
        blockRead: 0,
        blockWrite: 0,
        restarts: 0,
        requests: 0,
        errors5xx: 0,
      };
      this.buckets.set(serviceId, bucket);
    }
    return bucket;
  }

  /** Writes the buckets of minutes before `minute` in one statement. */
  private async flush(minute: number): Promise<void> {
    const rows: MetricRecord[] = [];
    for (const [serviceId, b] of this.buckets) {
      if (b.minute >= minute) continue;
      this.buckets.delete(serviceId);
      if (b.ticks === 0 && b.requests === 0) continue;
      rows.push(rowOf(serviceId, b));
    }
    if (rows.length === 0) return;
    // Services deleted since their minute began are not written back.
    const live = new Set((await this.deps.store.projects.listAllServices()).map((s) => s.id));
    await this.deps.store.metrics.insertMany(rows.filter((r) => live.has(r.serviceId)));
  }

  private schedule(delay: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.tick()
        .catch((error: Error) => this.log('metrics tick failed', { error: error.message }))
        .finally(() => {
          this.running = null;
          this.schedule(this.options.intervalMs);
        });
    }, delay);
    this.timer.unref();
  }
}

/** A minute as stored: averages over its ticks (none when only requests were counted), counters summed. */
function rowOf(serviceId: string, b: Bucket): MetricRecord {
  return {
    serviceId,
    at: new Date(b.minute),
    cpuPercent: b.ticks ? round(b.cpuSum / b.ticks) : 0,
    memoryUsedBytes: b.ticks ? Math.round(b.memorySum / b.ticks) : 0,
    memoryLimitBytes: b.memoryLimit,
    netRxBytes: b.netRx,
    netTxBytes: b.netTx,
    blockReadBytes: b.blockRead,
    blockWriteBytes: b.blockWrite,
    restarts: b.restarts,
    requests: b.requests,
    errors5xx: b.errors5xx,
  };
}

function emptySample(at: Date): CurrentSample {
  return {
    at,
    cpuPercent: 0,
    memoryUsedBytes: 0,
    memoryLimitBytes: 0,
    netRxBytes: 0,
    netTxBytes: 0,
    blockReadBytes: 0,
    blockWriteBytes: 0,
    restarts: 0,
  };
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}
