import { createRequire } from 'node:module';

// autocannon ships no types: the subset the benches use.

export interface Histogram {
  average: number;
  mean: number;
  stddev: number;
  min: number;
  max: number;
  total: number;
  p50: number;
  p90: number;
  p99: number;
}

export interface AutocannonResult {
  duration: number;
  errors: number;
  timeouts: number;
  non2xx: number;
  requests: Histogram & { sent: number };
  latency: Histogram;
  throughput: Histogram;
}

type Autocannon = (opts: {
  url: string;
  connections: number;
  duration: number;
  /** Requests to send; overrides duration (which autocannon counts in whole seconds, at least one). */
  amount?: number;
  headers?: Record<string, string>;
  timeout?: number;
}) => Promise<AutocannonResult>;

export const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;
