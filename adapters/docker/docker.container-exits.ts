import type Docker from 'dockerode';
import { LABELS } from '../../src/deployments/container-engine.port.js';
import type { ContainerExit, ContainerExits } from '../../src/monitoring/monitoring.ports.js';

interface DockerEvent {
  Type?: string;
  Action?: string;
  time?: number;
  timeNano?: number;
  Actor?: { ID?: string; Attributes?: Record<string, string> };
}

const RECONNECT_MS = [1_000, 2_000, 5_000, 10_000];

/**
 * Container exits from the engine's event stream (`die` of this installation's service
 * containers), as they happen: a crash loop's exits are seen however fast Docker restarts the
 * container. The stream is opened again after an error or an engine restart, from the time of the
 * last event seen, so no exit is missed across a reconnect.
 */
export class DockerContainerExits implements ContainerExits {
  constructor(
    private readonly docker: Docker,
    private readonly instanceId: string,
  ) {}

  watch(onExit: (exit: ContainerExit) => void, log?: (message: string, extra?: Record<string, unknown>) => void): () => void {
    let stopped = false;
    let stream: NodeJS.ReadableStream | null = null;
    let since = Math.floor(Date.now() / 1000);
    let failures = 0;
    const open = async () => {
      if (stopped) return;
      try {
        stream = (await this.docker.getEvents({
          since,
          filters: { type: ['container'], event: ['die'], label: [`${LABELS.instance}=${this.instanceId}`, LABELS.service] },
        })) as NodeJS.ReadableStream;
      } catch (error) {
        return retry(error as Error);
      }
      failures = 0;
      let buffer = '';
      stream.on('data', (chunk: Buffer) => {
        buffer += chunk.toString('utf8');
        let newline = buffer.indexOf('\n');
        while (newline >= 0) {
          const line = buffer.slice(0, newline).trim();
          buffer = buffer.slice(newline + 1);
          newline = buffer.indexOf('\n');
          if (!line) continue;
          try {
            const event = JSON.parse(line) as DockerEvent;
            const attributes = event.Actor?.Attributes ?? {};
            const serviceId = attributes[LABELS.service];
            if (event.Action !== 'die' || !serviceId || !event.Actor?.ID) continue;
            since = event.time ?? since;
            const exitCode = Number(attributes.exitCode);
            onExit({
              containerId: event.Actor.ID,
              serviceId,
              deploymentId: attributes[LABELS.deployment] ?? null,
              exitCode: Number.isFinite(exitCode) ? exitCode : null,
              at: new Date(event.timeNano ? event.timeNano / 1e6 : (event.time ?? Date.now() / 1000) * 1000),
            });
          } catch {
            // A line that is not an event: skipped.
          }
        }
      });
      stream.on('error', (error: Error) => retry(error));
      stream.on('end', () => retry(new Error('the event stream ended')));
    };
    const retry = (error: Error) => {
      if (stopped) return;
      stream?.removeAllListeners();
      stream = null;
      if (failures === 0) log?.('container events unavailable; watching again shortly', { error: error.message });
      const wait = RECONNECT_MS[Math.min(failures++, RECONNECT_MS.length - 1)]!;
      setTimeout(() => void open(), wait).unref();
    };
    void open();
    return () => {
      stopped = true;
      const open = stream as (NodeJS.ReadableStream & { destroy?: () => void }) | null;
      open?.removeAllListeners();
      open?.destroy?.();
    };
  }
}
