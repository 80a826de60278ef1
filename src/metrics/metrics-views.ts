import { z } from 'zod';
import { timestamp } from '../platform/view-fields.js';

/** A service's metrics: the latest sample and a series of steps. */

const metricValues = {
  cpuPercent: z.number().meta({ description: 'CPU use; 100 is one core' }),
  memoryUsedBytes: z.number().int().meta({ description: 'Memory in use (page cache excluded)' }),
  memoryLimitBytes: z.number().int().meta({ description: "The container's limit, or the host's memory without one" }),
  netRxBytes: z.number().int(),
  netTxBytes: z.number().int(),
  blockReadBytes: z.number().int(),
  blockWriteBytes: z.number().int(),
  restarts: z.number().int().meta({ description: 'Restarts of the running container(s) by the engine' }),
};
export const metricPointView = z
  .object({
    at: timestamp.meta({ description: 'Start of the step' }),
    ...metricValues,
    requests: z
      .number()
      .int()
      .meta({ description: "Requests the proxy answered for the service's hostnames during the step (web services)" }),
    errors5xx: z.number().int().meta({ description: 'Of those, answers with a 5xx status' }),
  })
  .meta({
    id: 'MetricPoint',
    description:
      'One step: CPU and memory averaged; network and block I/O bytes moved and requests answered during the step; restarts as counted at its end. The newest step includes the minute under way',
  });
export type MetricPointView = z.infer<typeof metricPointView>;
export const metricsView = z
  .object({
    serviceId: z.string(),
    running: z.boolean(),
    intervalMs: z.number().int().meta({ description: 'Sampling interval (METRICS_INTERVAL_MS); 0 when sampling is off' }),
    current: z
      .object({ at: timestamp, ...metricValues })
      .nullable()
      .meta({ description: 'The latest sample; byte counters are cumulative since the container started. null when no container runs' }),
    series: z.object({
      from: timestamp,
      to: timestamp,
      step: z.number().int().meta({ description: 'Seconds per point' }),
      points: z.array(metricPointView).meta({ description: 'Oldest first; steps without samples are left out' }),
    }),
  })
  .meta({ id: 'ServiceMetrics' });
export type MetricsView = z.infer<typeof metricsView>;
