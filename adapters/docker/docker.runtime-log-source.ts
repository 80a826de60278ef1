import type Docker from 'dockerode';
import { LABELS } from '../../src/deployments/container-engine.port.js';
import type { RuntimeLogEvent, RuntimeLogLine, RuntimeLogSource } from '../../src/deployments/runtime-logs.port.js';
import { DockerFrameParser, splitTimestamp } from './docker-log-frames.js';
import type { ReplicaEngines, ReplicaOnEngine } from './replica-engines.js';

interface TimedLine {
  timestamp: string;
  line: RuntimeLogLine;
}

/**
 * Follows the log of the running container labelled with the service id; on the cluster, of every task of the
 * service's serving Swarm service, each read from its own node's engine (ReplicaEngines) and merged by time.
 */
export class DockerRuntimeLogSource implements RuntimeLogSource {
  constructor(
    private readonly docker: Docker,
    /** The cluster's tasks and their nodes' engines; without it (or on one server), the local engine only. */
    private readonly replicas: ReplicaEngines | null = null,
  ) {}

  async *follow(serviceId: string, opts: { tail: number; since?: Date | undefined; signal: AbortSignal }): AsyncGenerator<RuntimeLogEvent> {
    let tasks: ReplicaOnEngine[] | null = null;
    try {
      tasks = this.replicas ? await this.replicas.tasksOf(serviceId, opts.signal) : null;
    } catch (error) {
      yield { type: 'closed', ok: false, reason: `the cluster's tasks could not be read: ${(error as Error).message}` };
      return;
    }
    if (tasks) {
      yield* this.followTasks(tasks, opts);
      return;
    }
    let containerId: string | undefined;
    try {
      const containers = await this.docker.listContainers({
        filters: { label: [`${LABELS.service}=${serviceId}`], status: ['running'] },
        abortSignal: AbortSignal.any([opts.signal, AbortSignal.timeout(5000)]),
      } as Docker.ContainerListOptions);
      containerId = containers.sort((a, b) => b.Created - a.Created)[0]?.Id;
    } catch (error) {
      yield { type: 'closed', ok: false, reason: `Docker engine unreachable: ${(error as Error).message}` };
      return;
    }
    if (!containerId) {
      yield { type: 'closed', ok: false, reason: 'the service has no running container' };
      return;
    }
    const container = this.docker.getContainer(containerId);
    const snapshot = await snapshotOf(container, opts);
    yield { type: 'snapshot', lines: snapshot.map((l) => l.line) };
    const lastTimestamp = snapshot[snapshot.length - 1]?.timestamp ?? '';
    try {
      for await (const line of followOne(container, lastTimestamp, opts.signal)) yield { type: 'line', line };
    } catch (error) {
      if (!opts.signal.aborted) yield { type: 'closed', ok: false, reason: `log stream failed: ${(error as Error).message}` };
      return;
    }
    if (!opts.signal.aborted) yield { type: 'closed', ok: true, reason: 'the container stopped or was replaced' };
  }

  /**
   * Every task's lines: the snapshot is the last `tail` of all of them by time; then each task's stream, merged
   * as lines arrive. When one task stops (replaced by Swarm or by a deployment) the stream closes, as a single
   * container's does, so the client reconnects to the tasks that run then.
   */
  private async *followTasks(
    tasks: ReplicaOnEngine[],
    opts: { tail: number; since?: Date | undefined; signal: AbortSignal },
  ): AsyncGenerator<RuntimeLogEvent> {
    if (tasks.length === 0) {
      yield { type: 'closed', ok: false, reason: 'the service has no running task' };
      return;
    }
    const containers = tasks.map((task) => task.docker.getContainer(task.location.containerId));
    let snapshots: TimedLine[][];
    try {
      snapshots = await Promise.all(containers.map((container) => snapshotOf(container, opts)));
    } catch (error) {
      yield { type: 'closed', ok: false, reason: `a task's engine did not answer: ${(error as Error).message}` };
      return;
    }
    const merged = snapshots
      .flatMap((lines, task) => lines.map((line, index) => ({ line, task, index })))
      .sort((a, b) => a.line.line.createdAt.getTime() - b.line.line.createdAt.getTime() || a.task - b.task || a.index - b.index)
      .slice(-Math.max(0, opts.tail))
      .map((entry) => entry.line.line);
    yield { type: 'snapshot', lines: opts.tail > 0 ? merged : [] };

    const stop = new AbortController();
    const signal = AbortSignal.any([opts.signal, stop.signal]);
    const queue: Array<{ line: RuntimeLogLine } | { end: true; error?: Error }> = [];
    let wake: (() => void) | null = null;
    const push = (item: (typeof queue)[number]) => {
      queue.push(item);
      wake?.();
    };
    containers.forEach((container, task) => {
      const last = snapshots[task]![snapshots[task]!.length - 1]?.timestamp ?? '';
      void (async () => {
        try {
          for await (const line of followOne(container, last, signal)) push({ line });
          push({ end: true });
        } catch (error) {
          push({ end: true, error: error as Error });
        }
      })();
    });
    const onAbort = () => wake?.();
    opts.signal.addEventListener('abort', onAbort, { once: true });
    try {
      while (!opts.signal.aborted) {
        const item = queue.shift();
        if (!item) {
          await new Promise<void>((resolve) => {
            wake = resolve;
          });
          wake = null;
          continue;
        }
        if ('line' in item) {
          yield { type: 'line', line: item.line };
          continue;
        }
        if (opts.signal.aborted) return;
        yield item.error
          ? { type: 'closed', ok: false, reason: `log stream failed: ${item.error.message}` }
          : { type: 'closed', ok: true, reason: 'a task stopped or was replaced' };
        return;
      }
    } finally {
      opts.signal.removeEventListener('abort', onAbort);
      stop.abort();
    }
  }
}

/** The last `tail` lines (since `since`) of one container, with Docker's timestamps. */
async function snapshotOf(
  container: Docker.Container,
  opts: { tail: number; since?: Date | undefined; signal: AbortSignal },
): Promise<TimedLine[]> {
  const buffer = (await container.logs({
    stdout: true,
    stderr: true,
    timestamps: true,
    follow: false,
    tail: opts.tail,
    since: opts.since ? opts.since.getTime() / 1000 : 0,
    abortSignal: AbortSignal.any([opts.signal, AbortSignal.timeout(15_000)]),
  } as never)) as unknown as Buffer;
  const out: TimedLine[] = [];
  for (const frame of new DockerFrameParser().push(buffer)) out.push(...toLines(frame.text, frame.stream));
  return out;
}

/** A container's lines after `lastTimestamp` until it stops (the stream ends) or the signal aborts. */
async function* followOne(container: Docker.Container, lastTimestamp: string, signal: AbortSignal): AsyncGenerator<RuntimeLogLine> {
  const stream = (await container.logs({
    stdout: true,
    stderr: true,
    timestamps: true,
    follow: true,
    since: lastTimestamp ? Math.floor(new Date(lastTimestamp).getTime() / 1000) : Math.floor(Date.now() / 1000),
  })) as unknown as NodeJS.ReadableStream & { destroy(): void };
  const onAbort = () => stream.destroy();
  signal.addEventListener('abort', onAbort, { once: true });
  if (signal.aborted) stream.destroy();
  const parser = new DockerFrameParser();
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      for (const frame of parser.push(chunk)) {
        for (const line of toLines(frame.text, frame.stream)) {
          // `since` has one-second resolution: skip what the snapshot already held.
          if (lastTimestamp && line.timestamp && line.timestamp <= lastTimestamp) continue;
          yield line.line;
        }
      }
    }
  } catch (error) {
    if (!signal.aborted) throw error;
  } finally {
    signal.removeEventListener('abort', onAbort);
    stream.destroy();
  }
}

function toLines(text: string, stream: 'stdout' | 'stderr'): TimedLine[] {
  return text
    .split('\n')
    .filter((l) => l.length > 0)
    .map((raw) => {
      const { timestamp, createdAt, text: body } = splitTimestamp(raw);
      return { timestamp, line: { line: body.replace(/\r$/, ''), stream, createdAt } };
    });
}
