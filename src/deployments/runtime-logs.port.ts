import type { LogStream } from '../domain/types.js';

export interface RuntimeLogLine {
  line: string;
  stream: LogStream;
  createdAt: Date;
}

export type RuntimeLogEvent =
  /** First: the last `tail` lines written so far. */
  | { type: 'snapshot'; lines: RuntimeLogLine[] }
  | { type: 'line'; line: RuntimeLogLine }
  /** Last: the container stopped, was replaced, or never existed (ok false). */
  | { type: 'closed'; ok: boolean; reason: string };

/** The logs of the container that currently runs a service. */
export interface RuntimeLogSource {
  /** Ends after `closed`, or when the signal aborts; must release its resources either way. */
  follow(serviceId: string, opts: { tail: number; since?: Date | undefined; signal: AbortSignal }): AsyncIterable<RuntimeLogEvent>;
}
