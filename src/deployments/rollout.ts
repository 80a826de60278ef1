import type { DeploymentRecord, ProjectRecord, ServiceRecord } from '../domain/types.js';
import type { JobLogWriter } from '../jobs/job-log-writer.js';
import type { ServiceDeps } from '../platform/deps.js';
import type { RoutingService } from '../routing/routing.service.js';
import { SLOT_DIAL_PORT } from './traffic-gate.port.js';
import type { SlotAssignment, TrafficSlots } from './traffic-slots.js';
import { LABELS, type ContainerState } from './container-engine.port.js';
import { isWeb, serves, type CurrentContainers, exposureOf } from './current-containers.js';
import type { DeploymentPipeline, PipelineResult } from './deployment-pipeline.js';
import { DeploymentFailure, throwIfAborted, type CreatedResources } from './pipeline-context.js';
import { resourceNames, type RuntimeDeps } from './runtime-deps.js';

const DRAIN_POLL_MS = 100;
/** When a container's connections cannot be counted: long enough for a typical request to finish. */
const DRAIN_FALLBACK_MS = 2_000;

/** One deployment's way through a rollout: what it made and which slot it holds, for `abandon` and `end`. */
export interface RolloutAttempt {
  created: CreatedResources;
  slot?: SlotAssignment;
}

export interface RolloutTarget {
  deployment: DeploymentRecord;
  service: ServiceRecord;
  project: ProjectRecord;
  log: JobLogWriter;
  signal: AbortSignal;
}

/**
 * Replaces a service's container without a gap: the new one starts beside the live one (in the
 * free traffic slot of its pair, for a web service behind the proxy) and is checked by the pipeline,
 * then takes the host port and the traffic, and only then is the old one drained and stopped.
 */
export class Rollout {
  /** Slots held by rollouts under way: a reconcile pass leaves them as they are. */
  private readonly held = new Set<string>();

  constructor(
    private readonly deps: ServiceDeps,
    private readonly runtime: RuntimeDeps,
    private readonly routing: RoutingService,
    /** Null without a traffic gate or a proxy: the proxy then dials the containers' own addresses. */
    private readonly slots: TrafficSlots | null,
    private readonly containers: CurrentContainers,
    private readonly pipeline: DeploymentPipeline,
    /** The runner is stopping: drains end early rather than hold the shutdown up. */
    private readonly stopping: () => boolean,
  ) {}

  get heldSlots(): ReadonlySet<string> {
    return this.held;
  }

  /** Start, check, switch, drain: resolves once the new container serves and the old ones are gone (or kept, see switchTo). */
  async run(attempt: RolloutAttempt, target: RolloutTarget): Promise<PipelineResult> {
    const { service, deployment, log, signal } = target;
    attempt.slot = await this.assignSlot(service);
    if (attempt.slot) this.held.add(attempt.slot.ip);
    const result = await this.pipeline.run({ ...target, created: attempt.created, ...(attempt.slot ? { slot: attempt.slot } : {}) });
    throwIfAborted(signal);
    await this.switchTo(service, deployment, result.container, log, attempt.slot);
    return result;
  }

  /** After a failure: traffic leaves the new slot (a switch cut short may have opened it), then what the attempt made goes. */
  async abandon(attempt: RolloutAttempt, log: JobLogWriter): Promise<void> {
    const slot = attempt.slot;
    if (slot)
      await this.slots?.close([slot.ip]).catch((e: Error) => log.write(`Could not close traffic slot ${slot.ip}: ${e.message}`, 'stderr'));
    try {
      if (attempt.created.container) await this.runtime.engine.stopAndRemove(attempt.created.container, 0);
      if (attempt.created.image) await this.runtime.engine.removeImage(attempt.created.image);
      // A database's previous server was stopped to free its volume: it serves again.
      for (const previous of attempt.created.stopped ?? []) {
        await this.runtime.engine.startContainer(previous);
        log.write(`The previous container ${previous.slice(0, 12)} is started again`);
      }
    } catch (error) {
      log.write(`Cleanup after the failure was incomplete: ${(error as Error).message}`, 'stderr');
    }
  }

  /** The attempt is over, however it ended: its slot is the container's now, or nobody's. */
  end(attempt: RolloutAttempt): void {
    if (!attempt.slot) return;
    this.slots?.release(attempt.slot.ip);
    this.held.delete(attempt.slot.ip);
  }

  /**
   * The upstream the proxy gets for a service's current container: its traffic slot (the gate sends
   * the slot's dial port on to the service's port, and refuses closed slots), or its address.
   */
  upstreamFor(service: ServiceRecord, container: ContainerState | undefined): string | null {
    if (!isWeb(service) || !container?.ip) return null;
    const slotIp = container.labels[LABELS.slot];
    if (slotIp && this.slots?.ready) return `${slotIp}:${SLOT_DIAL_PORT}`;
    return `${container.ip}:${service.internalPort}`;
  }

  /** Lets requests in flight to a replaced container finish (up to the drain timeout), then stops it. */
  async retire(service: ServiceRecord, previous: ContainerState, log?: JobLogWriter): Promise<void> {
    const started = Date.now();
    const deadline = started + this.deps.config.routing.drainTimeoutMs;
    let open: number | null = 0;
    // Only web traffic is drained: a database's clients reconnect, and a worker serves none.
    if (previous.running && isWeb(service)) {
      // Twice in a row: a connection may be opening as the first look finds none.
      let idleLooks = 0;
      while (Date.now() < deadline && idleLooks < 2 && !this.stopping()) {
        open = await this.runtime.engine.countConnections(previous.id, service.internalPort);
        if (open === null) break;
        idleLooks = open === 0 ? idleLooks + 1 : 0;
        if (idleLooks < 2) await new Promise((resolve) => setTimeout(resolve, DRAIN_POLL_MS));
      }
      if (open === null)
        await new Promise((resolve) => setTimeout(resolve, Math.min(DRAIN_FALLBACK_MS, this.deps.config.routing.drainTimeoutMs)));
    }
    const waited = Date.now() - started;
    log?.write(
      open === null
        ? `Stopping the previous container ${previous.name} after ${waited} ms (its connections could not be counted)`
        : open > 0
          ? `Stopping the previous container ${previous.name}: ${open} connection(s) still open after the ${this.deps.config.routing.drainTimeoutMs} ms drain timeout`
          : `Stopping the previous container ${previous.name} (drained in ${waited} ms)`,
    );
    await this.runtime.engine.stopAndRemove(previous.id, this.deps.config.deploy.stopGraceSeconds);
  }

  /** A web service behind the proxy gets the free slot of its pair (see TrafficSlots). */
  private async assignSlot(service: ServiceRecord): Promise<SlotAssignment | undefined> {
    if (!this.slots?.ready || !isWeb(service)) return undefined;
    const containers = await this.containers.ofInstance();
    const current = (await this.containers.pick(containers.filter((c) => c.labels[LABELS.service] === service.id))).get(service.id) ?? null;
    return this.slots.assign(current, containers);
  }

  /**
   * The new container takes the host port and the routes; the old ones stop once what they were
   * serving has finished. Behind the proxy, the routes are files Caddy reads per request: the new
   * container's slot opens, the routes name it, and the old slot closes once its container is gone, so
   * Caddy is not reloaded. When the proxy did not take the new routes, it may still send traffic to
   * the old container, which then keeps running (its slot open) until the reconcile loop sees the routes loaded.
   */
  private async switchTo(
    service: ServiceRecord,
    deployment: DeploymentRecord,
    container: ContainerState,
    log: JobLogWriter,
    slot?: SlotAssignment,
  ): Promise<void> {
    await this.runtime.engine.keepRunning(container.id);
    const upstream = serves(service) && container.ip ? { host: container.ip, port: service.internalPort } : null;
    // A worker (maybe a web service until now) publishes nothing.
    const exposure = exposureOf(service);
    await this.runtime.forwarder.set(service.hostPort, upstream, exposure).catch((error: NodeJS.ErrnoException) => {
      // Checked free when the service was made, the port may have been taken by another program since.
      if (error.code === 'EADDRINUSE')
        throw new DeploymentFailure(
          `host port ${exposure === 'public' ? '0.0.0.0' : '127.0.0.1'}:${service.hostPort} is in use by another program on this host; stop it, then deploy again`,
        );
      throw error;
    });
    if (upstream)
      log.write(`Host port ${exposure === 'public' ? '0.0.0.0' : '127.0.0.1'}:${service.hostPort} now forwards to ${container.name}`);
    const old = (await this.containers.ofService(service.id)).filter((c) => c.id !== container.id);
    // The new slot opens before any route names it; nothing closes yet.
    if (slot && this.slots) await this.slots.switchTo({ ip: slot.ip, port: service.internalPort }, [], { wait: false });
    this.routing.setUpstream(service.id, this.upstreamFor(service, upstream ? container : undefined));
    const proxy = await this.routing.reload();
    const routed = await this.routing.routesTo(service.id);
    if (routed) {
      const how = slot ? `traffic slot ${slot.ip} opened; ${proxy.detail}` : proxy.detail;
      log.write(proxy.ok ? `Routes switched to ${container.name}: ${how}` : `Proxy: ${proxy.detail}`, proxy.ok ? 'stdout' : 'stderr');
    }
    const keepOld = old.length > 0 && routed && !proxy.ok;
    if (keepOld) log.write(`The previous container keeps running until the proxy has the new routes; it is stopped then`, 'stderr');
    else {
      for (const previous of old) await this.retire(service, previous, log);
      // Closed once its container is gone: a request Caddy routed just before the switch still got through.
      const closing = old.map((c) => c.labels[LABELS.slot]).filter((ip): ip is string => !!ip && ip !== slot?.ip);
      if (closing.length) await this.slots?.close(closing);
    }
    const prefix = resourceNames(this.deps.config.resourcePrefix, service.id, deployment.id, service.environmentId).imagePrefix;
    // Rollback targets: the images of the newest live deployments, this one counted as the first.
    const others = this.deps.config.deploy.rollbackKeep - 1;
    const earlier = others > 0 ? await this.deps.store.deployments.listLive(service.id, others) : [];
    const keep = new Set([
      `${container.image}`,
      `${container.image}:latest`,
      ...(keepOld ? old.flatMap((c) => [c.image, `${c.image}:latest`]) : []),
      ...earlier.flatMap((d) => (d.imageTag ? [d.imageTag, `${d.imageTag}:latest`] : [])),
    ]);
    for (const tag of await this.runtime.engine.listImageTags(prefix)) if (!keep.has(tag)) await this.runtime.engine.removeImage(tag);
  }
}
