import { useQuery } from '@tanstack/react-query';
import { useId, useMemo, useState } from 'react';
import { type Series, TimeChart } from '../../components/time-chart';
import { Empty, QueryState } from '../../components/ui';
import { formatBytes } from '../../lib/format';
import { type RouterOutputs, useTRPC } from '../../lib/trpc';
import { useServiceOverview } from './use-service';

const RANGES = { '1h': 3600, '6h': 6 * 3600, '24h': 86_400, '7d': 7 * 86_400 } as const;
type Range = keyof typeof RANGES;

const pct = (v: number) => `${v.toFixed(1)} %`;
const bytes = (v: number) => formatBytes(v);
const count = (v: number) => String(Math.round(v));

/** CPU, memory, network and requests over time, from the platform's per-minute samples. */
export default function Metrics() {
  const { serviceId } = useServiceOverview();
  const trpc = useTRPC();
  const [range, setRange] = useState<Range>('1h');
  const rangeId = useId();
  // The window moves with the clock: recomputed at each refetch.
  const [now, setNow] = useState(() => Date.now());
  const from = new Date(now - RANGES[range] * 1000).toISOString();
  const metrics = useQuery({
    ...trpc.metrics.get.queryOptions({ serviceId, from, to: new Date(now).toISOString() }),
    refetchInterval: 30_000,
    placeholderData: (prev) => prev,
  });
  return (
    <div className="stack">
      <div className="spread">
        <h2>Metrics</h2>
        <div className="row">
          <label htmlFor={rangeId}>Time range</label>
          <select
            id={rangeId}
            value={range}
            onChange={(e) => {
              setRange(e.target.value as Range);
              setNow(Date.now());
            }}
          >
            {Object.keys(RANGES).map((r) => (
              <option key={r} value={r}>
                last {r}
              </option>
            ))}
          </select>
          <button type="button" onClick={() => setNow(Date.now())}>
            Refresh
          </button>
        </div>
      </div>
      <QueryState query={metrics} label="metrics">
        {(data) => <Charts data={data} />}
      </QueryState>
    </div>
  );
}

function Charts({ data }: { data: RouterOutputs['metrics']['get'] }) {
  const charts = useMemo(() => {
    const points = data.series.points;
    const times = points.map((p) => new Date(p.at).getTime() / 1000);
    const s = (label: string, color: string, pick: (p: (typeof points)[number]) => number): Series => ({
      label,
      color,
      values: points.map(pick),
    });
    return {
      times,
      cpu: [s('CPU', '#2563eb', (p) => p.cpuPercent)],
      memory: [s('Used', '#7c3aed', (p) => p.memoryUsedBytes), s('Limit', '#9ca3af', (p) => p.memoryLimitBytes)],
      network: [s('In', '#059669', (p) => p.netRxBytes), s('Out', '#d97706', (p) => p.netTxBytes)],
      requests: [s('Requests', '#2563eb', (p) => p.requests), s('5xx', '#dc2626', (p) => p.errors5xx)],
    };
  }, [data]);
  if (data.series.points.length === 0) {
    return (
      <Empty>
        {data.intervalMs === 0 ? 'Metrics sampling is off on this platform (METRICS_INTERVAL_MS=0).' : 'No samples in this range yet.'}
      </Empty>
    );
  }
  return (
    <div className="chart-grid">
      <TimeChart title="CPU" times={charts.times} series={charts.cpu} format={pct} />
      <TimeChart title="Memory" times={charts.times} series={charts.memory} format={bytes} />
      <TimeChart title="Network per step" times={charts.times} series={charts.network} format={bytes} />
      <TimeChart title="Requests per step" times={charts.times} series={charts.requests} format={count} />
    </div>
  );
}
