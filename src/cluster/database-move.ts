import type { ServiceRecord } from '../domain/types.js';
import type { ServiceDeps } from '../platform/deps.js';
import type { ServerRecord } from './server.records.js';
import type { DatabaseMover } from './service-move.js';

/** The service's container and volume made on the target server, before the switch. */
export interface MovedContainer {
  serverId: string;
  containerId: string;
}

/**
 * What moving a database needs of the runtime, step by step; the adapters reach each server's engine
 * through NodeEngines (mutual TLS for the nodes). Every step takes the move's AbortSignal.
 */
export interface MoveRuntime {
  /** Its container and an empty volume on `to`, started and answering; nothing routes to it yet. */
  prepare(service: ServiceRecord, to: ServerRecord, signal: AbortSignal): Promise<MovedContainer>;
  /** Stops the container on `from` (the downtime starts: nothing is written after the copy's dump). */
  quiesce(service: ServiceRecord, from: ServerRecord, signal: AbortSignal): Promise<void>;
  /** The data copied through the backup path: a dump of `from`'s, restored into the new container. */
  copy(
    service: ServiceRecord,
    from: ServerRecord,
    target: MovedContainer,
    signal: AbortSignal,
    log: (line: string) => void,
  ): Promise<{ bytes: number }>;
  /** Routes, endpoints and the host port forwarder name the new container. */
  switchTo(service: ServiceRecord, target: MovedContainer, signal: AbortSignal): Promise<void>;
  /** A failure before the switch: the old container starts again, as it was. */
  resume(service: ServiceRecord, from: ServerRecord, signal: AbortSignal): Promise<void>;
  /** A failure before the switch: the new container and its volume go. */
  discard(service: ServiceRecord, target: MovedContainer): Promise<void>;
  /** After the switch: the old container and its volume go. */
  retire(service: ServiceRecord, from: ServerRecord): Promise<void>;
}

/** Where a move's lines go (the service's job log). */
export type MoveLog = (service: ServiceRecord) => { write(line: string): void };

/** How long a whole move may take before it is given up (the old container serves again). */
const MOVE_TIMEOUT_MS = 60 * 60 * 1000;

/**
 * Moves a database or storage instance to another server with the least downtime the copy allows: the
 * new container starts first, beside the old one; then the old one stops, its data is copied (dump,
 * restore), the routes switch and the new server is recorded as holding it; only then does the old
 * container go. The downtime (the old one stopped until the switch) is written to the log. A failure
 * before the switch starts the old one again and removes the new: the database stays where it was.
 */
export class DatabaseMoveJob implements DatabaseMover {
  private readonly moving = new Set<string>();

  constructor(
    private readonly deps: ServiceDeps,
    private readonly runtime: MoveRuntime,
    private readonly logOf: MoveLog,
  ) {}

  /** Whether a move of this service is under way (a second one is refused). */
  busy(serviceId: string): boolean {
    return this.moving.has(serviceId);
  }

  async start(service: ServiceRecord, from: ServerRecord, to: ServerRecord): Promise<void> {
    if (this.moving.has(service.id)) throw new Error(`${service.name} is being moved already`);
    this.moving.add(service.id);
    // The request answers at once; the move runs on (its outcome is in the log).
    void this.run(service, from, to, AbortSignal.timeout(MOVE_TIMEOUT_MS))
      .catch(() => {})
      .finally(() => this.moving.delete(service.id));
  }

  /** The move itself; resolves when it is done or undone (the log says which), rejects with the reason of a failure. */
  async run(service: ServiceRecord, from: ServerRecord, to: ServerRecord, signal: AbortSignal): Promise<void> {
    const log = this.logOf(service);
    const clock = this.deps.clock;
    log.write(`Moving ${service.name} from ${from.name} to ${to.name}`);
    let target: MovedContainer | null = null;
    let stoppedAt: Date | null = null;
    try {
      log.write(`Starting its container and volume on ${to.name}`);
      target = await this.runtime.prepare(service, to, signal);
      stoppedAt = clock.now();
      log.write(`Stopping it on ${from.name}: the downtime starts`);
      await this.runtime.quiesce(service, from, signal);
      const { bytes } = await this.runtime.copy(service, from, target, signal, (line) => log.write(line));
      log.write(`Copied ${bytes} bytes to ${to.name}`);
      await this.runtime.switchTo(service, target, signal);
      await this.deps.store.servers.place(service.id, to.id, clock.now());
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      log.write(`The move failed: ${reason}`);
      if (target)
        await this.runtime.discard(service, target).catch((e: Error) => log.write(`The new container could not be removed: ${e.message}`));
      if (stoppedAt)
        await this.runtime
          .resume(service, from, AbortSignal.timeout(120_000))
          .then(() => log.write(`${service.name} serves from ${from.name} again (down ${seconds(stoppedAt!, clock.now())} s)`))
          .catch((e: Error) => log.write(`It could not be started again on ${from.name}: ${e.message}`));
      else log.write(`${service.name} stays on ${from.name}; it was not stopped`);
      throw error;
    }
    const servedAt = clock.now();
    log.write(
      `Downtime: ${seconds(stoppedAt, servedAt)} s (stopped on ${from.name} at ${stoppedAt.toISOString()}, served from ${to.name} at ${servedAt.toISOString()})`,
    );
    await this.runtime
      .retire(service, from)
      .then(() => log.write(`Removed its container and volume on ${from.name}`))
      .catch((e: Error) => log.write(`Its old container or volume on ${from.name} could not be removed: ${e.message}`));
    log.write(`${service.name} now lives on ${to.name}`);
  }
}

function seconds(from: Date, to: Date): string {
  return ((to.getTime() - from.getTime()) / 1000).toFixed(1);
}
