import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export interface Series {
  label: string;
  values: Array<number | null>;
  color: string;
}

/**
 * A time series chart (uPlot: canvas, ~45 kB). The canvas is decorative for assistive technology: the
 * figure's caption says what it shows and the latest values are written out beside it.
 */
export function TimeChart(props: { title: string; times: number[]; series: Series[]; format: (v: number) => string }) {
  const host = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = host.current;
    if (!el) return;
    const dark = window.matchMedia('(prefers-color-scheme: dark)').matches;
    const axis = { stroke: dark ? '#a9b0bc' : '#4b5361', grid: { stroke: dark ? '#343a46' : '#e3e5e9' } };
    const plot = new uPlot(
      {
        width: Math.max(280, el.clientWidth),
        height: 220,
        legend: { show: true },
        scales: { x: { time: true } },
        axes: [axis, { ...axis, size: 70, values: (_u, ticks) => ticks.map(props.format) }],
        series: [
          {},
          ...props.series.map((s) => ({
            label: s.label,
            stroke: s.color,
            width: 2,
            value: (_u: uPlot, v: number | null) => (v == null ? '-' : props.format(v)),
          })),
        ],
      },
      [props.times, ...props.series.map((s) => s.values)],
      el,
    );
    const resize = new ResizeObserver(() => plot.setSize({ width: Math.max(280, el.clientWidth), height: 220 }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
  }, [props.times, props.series, props.format]);
  const last = props.series.map((s) => `${s.label}: ${s.values.length ? props.format(s.values.at(-1) ?? 0) : 'no data'}`).join(', ');
  return (
    <figure className="card" style={{ margin: 0 }}>
      <figcaption>
        <strong>{props.title}</strong> <span className="muted">(latest: {last})</span>
      </figcaption>
      <div ref={host} className="chart" aria-hidden="true" />
    </figure>
  );
}
