import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Actor } from '../../src/index.js';
import type { ContainerStats, ContainerStatsSource } from '../../src/metrics/container-stats.port.js';
import { MetricsSampler } from '../../src/metrics/metrics-sampler.js';
import { MetricsService } from '../../src/metrics/metrics.service.js';
import type { RequestCount } from '../../src/metrics/request-log.port.js';
import { createHarness, type Harness } from '../helpers/harness.js';

/** The sampler over a scripted stats source, on SQLite in memory; the query use case over what it wrote. */
const admin: Actor = { keyId: 'admin', access: 'write', projectIds: null };
const T0 = Date.parse('2026-11-26T10:00:00.000Z');
const SEC = 1_000;

class ScriptedStats implements ContainerStatsSource {
  next: ContainerStats[] = [];
  calls = 0;
  fail = false;
  async sample(): Promise<ContainerStats[]> {
    this.calls++;
    if (this.fail) throw new Error('engine down');
    return this.next;
  }
}

function stats(serviceId: string, containerId: string, at: number, extra: Partial<ContainerStats> = {}): ContainerStats {
  // One core busy 50 % on a 2-core host: 0.5 s of CPU per second of wall time, system time grows by 2 s per second.
  const seconds = (at - T0) / SEC;
  return {
    containerId,
    serviceId,
    cpuTotal: seconds * 0.5e9,
    systemCpuTotal: 1e12 + seconds * 2e9,
    onlineCpus: 2,
    memoryUsedBytes: 100 * 1024 * 1024,
    memoryLimitBytes: 1024 * 1024 * 1024,
    netRxBytes: 1_000_000 + seconds * 1_000,
    netTxBytes: 500_000 + seconds * 100,
    blockReadBytes: 4096,
    blockWriteBytes: 8192,
    restarts: 1,
    ...extra,
  };
}

let h: Harness;
let source: ScriptedStats;
let sampler: MetricsSampler;
let serviceId: string;

beforeEach(async () => {
  h = await createHarness();
  source = new ScriptedStats();
  sampler = new MetricsSampler(depsOf(h), source, { intervalMs: 10 * SEC, retentionMs: 3_600_000 });
  const { project } = await h.caller().projects.create({ name: 'm', description: '' });
  serviceId = (await h.caller().services.create({ projectId: project.id, name: 'web', repoFullName: 'acme/web' })).service.id;
});
afterEach(async () => {
  await h.close();
});

function depsOf(harness: Harness) {
  return { store: harness.database.store } as never;
}

async function tickAt(at: number, list: ContainerStats[]): Promise<void> {
  source.next = list;
  await sampler.tick(at);
}

describe('MetricsSampler', () => {
  it('computes CPU % from two ticks, sums containers per service, and writes one row per minute', async () => {
    await tickAt(T0, [stats(serviceId, 'c1', T0)]);
    // First tick: the baseline (no CPU delta yet, no counter growth).
    expect(sampler.currentOf(serviceId)).toMatchObject({ cpuPercent: 0, memoryUsedBytes: 100 * 1024 * 1024, restarts: 1 });
    for (let t = T0 + 10 * SEC; t < T0 + 60 * SEC; t += 10 * SEC) await tickAt(t, [stats(serviceId, 'c1', t)]);
    expect(sampler.currentOf(serviceId)?.cpuPercent).toBeCloseTo(50, 5);
    expect(await h.database.store.metrics.range(serviceId, new Date(T0 - 3_600_000), new Date(T0 + 3_600_000))).toEqual([]);

    // The next minute flushes the first: averages over its 6 ticks (the baseline counts 0 % CPU), growth of the counters.
    await tickAt(T0 + 60 * SEC, [stats(serviceId, 'c1', T0 + 60 * SEC)]);
    const rows = await h.database.store.metrics.range(serviceId, new Date(T0), new Date(T0 + 3_600_000));
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      serviceId,
      at: new Date(T0),
      memoryUsedBytes: 100 * 1024 * 1024,
      memoryLimitBytes: 1024 * 1024 * 1024,
      netRxBytes: 50_000,
      netTxBytes: 5_000,
      restarts: 1,
    });
    expect(rows[0]!.cpuPercent).toBeCloseTo((50 * 5) / 6, 1);
    expect(typeof rows[0]!.cpuPercent).toBe('number');
  });

  it('drops a stopped service from the current samples but keeps its history', async () => {
    await tickAt(T0, [stats(serviceId, 'c1', T0)]);
    await tickAt(T0 + 10 * SEC, [stats(serviceId, 'c1', T0 + 10 * SEC)]);
    await tickAt(T0 + 70 * SEC, []);
    expect(sampler.currentOf(serviceId)).toBeNull();
    const view = await new MetricsService(depsOf(h), (id) => sampler.currentOf(id), 10_000).get(admin, serviceId, {
      from: new Date(T0).toISOString(),
      to: new Date(T0 + 3_600_000).toISOString(),
    });
    expect(view.running).toBe(false);
    expect(view.current).toBeNull();
    expect(view.series.points).toHaveLength(1);
  });

  it('a container replaced during the minute counts its whole counters once, the old one stops counting', async () => {
    await tickAt(T0, [stats(serviceId, 'old', T0)]);
    await tickAt(T0 + 10 * SEC, [stats(serviceId, 'old', T0 + 10 * SEC), stats(serviceId, 'new', T0, { netRxBytes: 300, netTxBytes: 30 })]);
    expect(sampler.currentOf(serviceId)?.memoryUsedBytes).toBe(200 * 1024 * 1024);
    await tickAt(T0 + 60 * SEC, [stats(serviceId, 'new', T0, { netRxBytes: 400, netTxBytes: 40 })]);
    const [row] = await h.database.store.metrics.range(serviceId, new Date(T0), new Date(T0 + 3_600_000));
    expect(row).toMatchObject({ netRxBytes: 10_000 + 300, netTxBytes: 1_000 + 30 });
  });

  it('an engine failure skips the tick and keeps what was known', async () => {
    await tickAt(T0, [stats(serviceId, 'c1', T0)]);
    source.fail = true;
    await sampler.tick(T0 + 10 * SEC);
    expect(sampler.currentOf(serviceId)).not.toBeNull();
  });

  it('removes rows older than the retention', async () => {
    await h.database.store.metrics.insertMany([
      { ...row(serviceId), at: new Date(T0 - 2 * 3_600_000) },
      { ...row(serviceId), at: new Date(T0 - 60_000) },
    ]);
    await tickAt(T0, []);
    const left = await h.database.store.metrics.range(serviceId, new Date(0), new Date(T0 + 1));
    expect(left.map((r) => r.at)).toEqual([new Date(T0 - 60_000)]);
  });
});

function row(id: string) {
  return {
    serviceId: id,
    at: new Date(T0),
    cpuPercent: 10,
    memoryUsedBytes: 1000,
    memoryLimitBytes: 2000,
    netRxBytes: 10,
    netTxBytes: 20,
    blockReadBytes: 30,
    blockWriteBytes: 40,
    restarts: 0,
    requests: 0,
    errors5xx: 0,
  };
}

describe('request counts from the proxy', () => {
  it("adds each drain's requests and 5xx to the service of the hostname, in the minute under way, shown before it is written", async () => {
    const drains: RequestCount[][] = [
      [
        { hostname: 'web.test', requests: 10, errors5xx: 1 },
        { hostname: 'other.test', requests: 99, errors5xx: 99 },
      ],
      [{ hostname: 'www.web.test', requests: 5, errors5xx: 2 }],
      [],
    ];
    const counting = new MetricsSampler(depsOf(h), source, {
      intervalMs: 10 * SEC,
      retentionMs: 3_600_000,
      requests: {
        source: { drain: async () => drains.shift() ?? [] },
        hostnames: async () =>
          new Map([
            ['web.test', serviceId],
            ['www.web.test', serviceId],
          ]),
      },
    });
    source.next = [stats(serviceId, 'c1', T0)];
    await counting.tick(T0);
    source.next = [stats(serviceId, 'c1', T0 + 10 * SEC)];
    await counting.tick(T0 + 10 * SEC);
    expect(counting.pendingOf(serviceId)).toMatchObject({ requests: 15, errors5xx: 3 });
    const service = new MetricsService(
      depsOf(h),
      () => null,
      10 * SEC,
      (id) => counting.pendingOf(id),
    );
    const before = await service.get(admin, serviceId, { from: new Date(T0).toISOString(), to: new Date(T0 + 60 * SEC).toISOString() });
    expect(before.series.points).toEqual([expect.objectContaining({ requests: 15, errors5xx: 3 })]);
    // The next minute writes this one: the stored row has the counts, the pending one starts again.
    source.next = [stats(serviceId, 'c1', T0 + 60 * SEC)];
    await counting.tick(T0 + 60 * SEC);
    const [row] = await h.database.store.metrics.range(serviceId, new Date(T0), new Date(T0 + 60 * SEC));
    expect(row).toMatchObject({ requests: 15, errors5xx: 3 });
    expect(counting.pendingOf(serviceId)).toMatchObject({ requests: 0 });
  });
});

describe('MetricsService', () => {
  it('re-buckets minutes by step: CPU and memory averaged, bytes summed', async () => {
    await h.database.store.metrics.insertMany(
      [0, 1, 2, 3, 4, 5].map((m) => ({ ...row(serviceId), at: new Date(T0 + m * 60_000), cpuPercent: m * 10, memoryUsedBytes: 1000 + m })),
    );
    const view = await new MetricsService(depsOf(h)).get(admin, serviceId, {
      from: new Date(T0).toISOString(),
      to: new Date(T0 + 6 * 60_000).toISOString(),
      step: 180,
    });
    expect(view.series.step).toBe(180);
    expect(view.series.points).toEqual([
      expect.objectContaining({
        at: new Date(T0).toISOString(),
        cpuPercent: 10,
        memoryUsedBytes: 1001,
        netRxBytes: 30,
        memoryLimitBytes: 2000,
      }),
      expect.objectContaining({ at: new Date(T0 + 180_000).toISOString(), cpuPercent: 40, memoryUsedBytes: 1004, netRxBytes: 30 }),
    ]);
  });

  it('validates the range and step', async () => {
    const service = new MetricsService(depsOf(h));
    const field = async (q: Parameters<MetricsService['get']>[2]) =>
      service.get(admin, serviceId, q).then(
        () => null,
        (e: { details?: { field?: string } }) => e.details?.field,
      );
    expect(await field({ from: '2026-11-26T10:00:00Z', to: '2026-11-26T09:00:00Z' })).toBe('from');
    expect(await field({ from: 'yesterday' })).toBe('from');
    expect(await field({ step: 90 })).toBe('step');
    expect(await field({ from: '2026-01-01T00:00:00Z', to: '2026-11-26T00:00:00Z', step: 60 })).toBe('step');
    expect(await service.get(admin, 'nope', {}).catch((e: { code: string }) => e.code)).toBe('not_found');
  });
});
