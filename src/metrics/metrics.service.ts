import { ValidationError } from '../domain/errors.js';
import type { Actor } from '../domain/access.js';
import type { ServiceDeps } from '../platform/deps.js';
import { serviceFor } from '../platform/lookup.js';
import type { MetricPointView, MetricsView } from './metrics-views.js';
import type { CurrentSample } from './metrics-sampler.js';
import type { MetricRecord } from './metrics.repository.js';

/** At most this many points in one answer. */
export const MAX_POINTS = 1_500;
const HOUR_MS = 3_600_000;

export interface MetricsQuery {
  from?: string | undefined;
  to?: string | undefined;
  /** Seconds per point, a multiple of 60 (rows are per minute). */
  step?: number | undefined;
}

/** Reads a service's metrics: the sampler's latest sample and the stored per-minute history, re-bucketed by `step`. */
export class MetricsService {
  constructor(
    private readonly deps: ServiceDeps,
    /** The sampler's latest sample; absent without a runtime. */
    private readonly currentOf: (serviceId: string) => CurrentSample | null = () => null,
    private readonly intervalMs = 0,
    /** The sampler's minute under way, not stored yet. */
    private readonly pendingOf: (serviceId: string) => MetricRecord | null = () => null,
  ) {}

  async get(actor: Actor, serviceId: string, query: MetricsQuery): Promise<MetricsView> {
    const service = await serviceFor(this.deps.store, actor, serviceId);
    const to = query.to ? instant(query.to, 'to') : new Date();
    const from = query.from ? instant(query.from, 'from') : new Date(to.getTime() - HOUR_MS);
    if (from.getTime() >= to.getTime()) throw new ValidationError('from', '`from` must be before `to`');
    const rangeMs = to.getTime() - from.getTime();
    const step = query.step ?? Math.max(60, Math.ceil(rangeMs / 1000 / 360 / 60) * 60);
    if (step % 60 !== 0) throw new ValidationError('step', 'step is in seconds and a multiple of 60 (history is kept per minute)');
    if (rangeMs / 1000 / step > MAX_POINTS)
      throw new ValidationError('step', `the range holds more than ${MAX_POINTS} steps of ${step} s; use a larger step`);
    const rows: MetricRecord[] = await this.deps.store.metrics.range(service.id, from, to);
    const pending = this.pendingOf(service.id);
    if (pending && pending.at >= from && pending.at < to && !rows.some((row) => row.at.getTime() === pending.at.getTime()))
      rows.push(pending);
    // Rows are oldest first, so the steps come out in order.
    const steps = new Map<number, { n: number; cpu: number; mem: number; point: MetricPointView }>();
    for (const row of rows) {
      const at = from.getTime() + Math.floor((row.at.getTime() - from.getTime()) / (step * 1000)) * step * 1000;
      let acc = steps.get(at);
      if (!acc) {
        acc = {
          n: 0,
          cpu: 0,
          mem: 0,
          point: {
            at: new Date(at).toISOString(),
            cpuPercent: 0,
            memoryUsedBytes: 0,
            memoryLimitBytes: 0,
            netRxBytes: 0,
            netTxBytes: 0,
            blockReadBytes: 0,
            blockWriteBytes: 0,
            restarts: 0,
            requests: 0,
            errors5xx: 0,
          },
        };
        steps.set(at, acc);
      }
      acc.n++;
      acc.cpu += row.cpuPercent;
      acc.mem += row.memoryUsedBytes;
      const p = acc.point;
      p.memoryLimitBytes = Math.max(p.memoryLimitBytes, row.memoryLimitBytes);
      p.netRxBytes += row.netRxBytes;
      p.netTxBytes += row.netTxBytes;
      p.blockReadBytes += row.blockReadBytes;
      p.blockWriteBytes += row.blockWriteBytes;
      p.restarts = Math.max(p.restarts, row.restarts);
      p.requests += row.requests;
      p.errors5xx += row.errors5xx;
    }
    const points = [...steps.values()].map(({ n, cpu, mem, point }) => ({
      ...point,
      cpuPercent: Math.round((cpu / n) * 100) / 100,
      memoryUsedBytes: Math.round(mem / n),
    }));
    const current = this.currentOf(service.id);
    return {
      serviceId: service.id,
      running: current !== null,
      intervalMs: this.intervalMs,
      current: current ? { ...current, at: current.at.toISOString(), cpuPercent: Math.round(current.cpuPercent * 100) / 100 } : null,
      series: { from: from.toISOString(), to: to.toISOString(), step, points },
    };
  }

  /** For AI diagnostics: the latest sample, else the newest stored minute. */
  async latest(serviceId: string): Promise<Record<string, unknown> | null> {
    const current = this.currentOf(serviceId);
    if (current) return { ...current, running: true };
    const row = await this.deps.store.metrics.latest(serviceId);
    return row ? { ...row, id: undefined, running: false } : null;
  }
}

function instant(raw: string, field: string): Date {
  const date = new Date(raw);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(raw) || Number.isNaN(date.getTime()))
    throw new ValidationError(field, `${field} must be an ISO 8601 timestamp such as 2026-11-26T10:00:00.000Z`);
  return date;
}
