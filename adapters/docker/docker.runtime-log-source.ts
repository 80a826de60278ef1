import type Docker from 'dockerode';
import { LABELS } from '../../src/deployments/container-engine.port.js';
import type { RuntimeLogEvent, RuntimeLogLine, RuntimeLogSource } from '../../src/deployments/runtime-logs.port.js';
import { DockerFrameParser, splitTimestamp } from './docker-log-frames.js';

/** Follows the log of the running container labelled with the service id. */
export class DockerRuntimeLogSource implements RuntimeLogSource {
  constructor(private readonly docker: Docker) {}

  async *follow(serviceId: string, opts: { tail: number; since?: Date | undefined; signal: AbortSignal }): AsyncGenerator<RuntimeLogEvent> {
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
    const since = opts.since ? opts.since.getTime() / 1000 : 0;
    const snapshotBuffer = (await container.logs({
      stdout: true,
      stderr: true,
      timestamps: true,
      follow: false,
      tail: opts.tail,
      since,
    })) as unknown as Buffer;
    const snapshot: RuntimeLogLine[] = [];
    let lastTimestamp = '';
    for (const frame of new DockerFrameParser().push(snapshotBuffer)) {
      for (const line of toLines(frame.text, frame.stream)) {
        snapshot.push(line.line);
        lastTimestamp = line.timestamp;
      }
    }
    yield { type: 'snapshot', lines: snapshot };

    const stream = (await container.logs({
      stdout: true,
      stderr: true,
      timestamps: true,
      follow: true,
      since: lastTimestamp ? Math.floor(new Date(lastTimestamp).getTime() / 1000) : Math.floor(Date.now() / 1000),
    })) as unknown as NodeJS.ReadableStream & { destroy(): void };
    const onAbort = () => stream.destroy();
    opts.signal.addEventListener('abort', onAbort, { once: true });
    const parser = new DockerFrameParser();
    try {
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        for (const frame of parser.push(chunk)) {
          for (const line of toLines(frame.text, frame.stream)) {
            // `since` has one-second resolution: skip what the snapshot already held.
            if (lastTimestamp && line.timestamp && line.timestamp <= lastTimestamp) continue;
            yield { type: 'line', line: line.line };
          }
        }
      }
    } catch (error) {
      if (!opts.signal.aborted) yield { type: 'closed', ok: false, reason: `log stream failed: ${(error as Error).message}` };
      return;
    } finally {
      opts.signal.removeEventListener('abort', onAbort);
      stream.destroy();
    }
    if (!opts.signal.aborted) yield { type: 'closed', ok: true, reason: 'the container stopped or was replaced' };
  }
}

function toLines(text: string, stream: 'stdout' | 'stderr'): Array<{ timestamp: string; line: RuntimeLogLine }> {
  return text
    .split('\n')
    .filter((l) => l.length > 0)
    .map((raw) => {
      const { timestamp, createdAt, text: body } = splitTimestamp(raw);
      return { timestamp, line: { line: body.replace(/\r$/, ''), stream, createdAt } };
    });
}
