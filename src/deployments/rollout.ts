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
import { replicaName, resourceNames, type RuntimeDeps } from './runtime-deps.js';
import type { SwarmPath } from './swarm-path.port.js';
import { keepsData } from '../domain/storage-server.js';

const DRAIN_POLL_MS = 100;
/** Docker's label on the containers of Swarm's tasks. */
const SWARM_TASK_LABEL = 'com.docker.swarm.task.id';
/** When a container's connections cannot be counted: long enough for a typical request to finish. */
const DRAIN_FALLBACK_MS = 2_000;
/** Removing a replaced Swarm service: one manager call per service (the tasks stop on their nodes afterwards). */
const SWARM_RETIRE_TIMEOUT_MS = 30_000;

/** One deployment's way through a rollout: what it made and which slot it holds, for `abandon` and `end`. */
export interface RolloutAttempt {
  created: CreatedResources;
  slot?: SlotAssignment;
  /** The gate's opening of the new slot, begun as the slot is assigned (see run). */
  opening?: Promise<void>;
  /** Whether a route may have named the new container (the switch got that far): its slot's closing then waits for the proxy. */
  routed?: boolean;
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
    if (service.replicas === 0) throw new DeploymentFailure('The service is scaled to 0 replicas: set replicas to 1 or more, then deploy');
    const swarm = await this.swarmFor(service, signal);
    if (swarm) return this.runOnSwarm(swarm, attempt, target);
    attempt.slot = await this.assignSlot(service);
    if (attempt.slot) {
      this.held.add(attempt.slot.ip);
      // The gate opens the new slot while the image builds, not at the switch (an iptables-restore and its checks,
      // 20-50 ms). Open is not routed: no route names the slot before the container passed its check, so nothing
      // reaches it before then; the proxy reaches the slots its routes name only.
      attempt.opening = this.slots?.switchTo({ ip: attempt.slot.ip, port: service.internalPort }, [], { wait: false });
      attempt.opening?.catch(() => {}); // awaited by the switch, or by abandon
    }
    const ctx = { ...target, created: attempt.created, ...(attempt.slot ? { slot: attempt.slot } : {}) };
    const result = await this.pipeline.run(ctx);
    throwIfAborted(signal);
    const replicas = [result.container];
    // One at a time, each checked before any traffic reaches it; the live replicas serve meanwhile, and a
    // failure leaves them exactly as they were (abandon removes the new ones).
    for (let index = 1; index < service.replicas; index++) {
      log.write(`Starting replica ${index + 1} of ${service.replicas}`);
      replicas.push(await this.pipeline.startReplica(ctx, result.imageTag, result.env, index));
      throwIfAborted(signal);
    }
    await this.switchTo(service, deployment, replicas, log, attempt);
    return result;
  }

  /** The cluster's path for a stateless service once more than one server is ready; null keeps plain containers. */
  async swarmFor(service: ServiceRecord, signal?: AbortSignal): Promise<SwarmPath | null> {
    const swarm = this.runtime.swarm?.() ?? null;
    if (!swarm || keepsData(service)) return null;
    return (await swarm.active(signal)) ? swarm : null;
  }

  /**
   * On the cluster: the image built (or pulled) here as on one server, then pushed and run by digest as the
   * deployment's own Swarm service, beside the serving one; once every new task is healthy the hostname's routes
   * name the new tasks, the earlier tasks drain (their requests in flight finish), and only then does their
   * service go. A failure leaves the earlier service serving, untouched. Plain containers the service ran on
   * before the cluster formed are drained and stopped once the tasks serve.
   */
  private async runOnSwarm(swarm: SwarmPath, attempt: RolloutAttempt, target: RolloutTarget): Promise<PipelineResult> {
    const { service, deployment, log, signal } = target;
    const ctx = { ...target, created: attempt.created };
    const { built, env } = await this.pipeline.prepare(ctx);
    const { name, upstreams, previous } = await swarm.rollOut({ service, deployment, imageTag: built.imageTag, env, log, signal });
    await this.pipeline.recordRunner(ctx, name, built.imageTag);
    // Kept: rollbacks and the registry's garbage collection count this deployment's image from now on.
    delete attempt.created.image;
    if (serves(service)) {
      this.routing.setUpstream(service.id, upstreams[0] ?? null, upstreams.slice(1));
      const proxy = await this.routing.reload();
      if (await this.routing.routesTo(service.id))
        log.write(
          proxy.ok ? `Routes switched to the ${upstreams.length} task(s) of ${name}: ${proxy.detail}` : `Proxy: ${proxy.detail}`,
          proxy.ok ? 'stdout' : 'stderr',
        );
    }
    if (previous.length > 0) {
      // The routes name only the new tasks now: requests already sent to the earlier ones get to finish. Their
      // connections on other nodes cannot be counted here, so the wait is the one a plain container gets then;
      // Swarm then stops them with SIGTERM and STOP_GRACE_SECONDS, for a request still running.
      if (isWeb(service) && !this.stopping()) await new Promise((resolve) => setTimeout(resolve, this.drainFallbackMs()));
      log.write(`Removing the earlier Swarm service(s) ${previous.join(', ')}`);
      await swarm
        .retire(previous, AbortSignal.timeout(SWARM_RETIRE_TIMEOUT_MS))
        .catch((error: Error) => log.write(`Could not remove ${previous.join(', ')}: ${error.message}`, 'stderr'));
    }
    // The containers of before the cluster (Swarm's own task containers are Swarm's to stop).
    const old = (await this.containers.ofService(service.id)).filter((c) => !c.labels[SWARM_TASK_LABEL]);
    if (old.length > 0) await this.runtime.forwarder.set(service.hostPort, null, exposureOf(service)).catch(() => {});
    for (const previous of old) await this.retire(service, previous, log);
    const closing = old.map((c) => c.labels[LABELS.slot]).filter((ip): ip is string => !!ip);
    if (closing.length) await this.slots?.close(closing);
    const state: ContainerState = {
      id: name,
      name,
      image: built.imageTag,
      running: true,
      exitCode: null,
      ip: null,
      labels: { [LABELS.service]: service.id, [LABELS.deployment]: deployment.id },
    };
    return { ...built, container: state, env };
  }

  /** After a failure: traffic leaves the new slot (a switch cut short may have opened it), then what the attempt made goes. */
  async abandon(attempt: RolloutAttempt, log: JobLogWriter): Promise<void> {
    const slot = attempt.slot;
    // Closed after its opening, which may still be under way.
    await attempt.opening?.catch(() => {});
    if (slot)
      await this.slots
        ?.close([slot.ip], undefined, { wait: attempt.routed ?? false })
        .catch((e: Error) => log.write(`Could not close traffic slot ${slot.ip}: ${e.message}`, 'stderr'));
    try {
      for (const replica of attempt.created.replicas ?? []) await this.runtime.engine.stopAndRemove(replica, 0);
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

  /** The upstreams of a service's replicas after the first: their own addresses (only the first has a slot). */
  replicaUpstreamsFor(service: ServiceRecord, replicas: ContainerState[]): string[] {
    if (!isWeb(service)) return [];
    return replicas.flatMap((c) => (c.ip ? [`${c.ip}:${service.internalPort}`] : []));
  }

  /**
   * Starts replica `index` of the deployment that is live, outside any deployment (a replica that died,
   * or a scale up): the deployment's image, the service's variables as they are now, checked before the
   * caller routes to it. What it started goes again when the check fails.
   */
  async startReplica(service: ServiceRecord, deployment: DeploymentRecord, index: number, log: JobLogWriter): Promise<ContainerState> {
    const project = await this.deps.store.projects.get(service.projectId);
    if (!project) throw new DeploymentFailure('The project is gone');
    if (!deployment.imageTag || !(await this.runtime.engine.imageExists(deployment.imageTag)))
      throw new DeploymentFailure(`The image of deployment ${deployment.id} is no longer kept; deploy again`);
    const signal = AbortSignal.timeout(this.deps.config.deploy.healthTimeoutMs + 30_000);
    const ctx = { deployment, service, project, log, signal, created: {} as CreatedResources };
    const names = resourceNames(this.deps.config.resourcePrefix, service.id, deployment.id, service.environmentId);
    // A dead container of the same name holds the name: it goes first.
    await this.runtime.engine.stopAndRemove(replicaName(names.container, index), 0);
    try {
      const { env } = await this.pipeline.envOf(ctx);
      const started = await this.pipeline.startReplica(ctx, deployment.imageTag, env, index);
      await this.runtime.engine.keepRunning(started.id);
      return started;
    } catch (error) {
      for (const name of [ctx.created.container, ...(ctx.created.replicas ?? [])])
        if (name) await this.runtime.engine.stopAndRemove(name, 0).catch(() => {});
      throw error;
    }
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
      if (open === null) await new Promise((resolve) => setTimeout(resolve, this.drainFallbackMs()));
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

  /** How long requests in flight get when connections cannot be counted. */
  private drainFallbackMs(): number {
    return Math.min(DRAIN_FALLBACK_MS, this.deps.config.routing.drainTimeoutMs);
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
    replicas: ContainerState[],
    log: JobLogWriter,
    attempt: RolloutAttempt,
  ): Promise<void> {
    const { slot } = attempt;
    const container = replicas[0]!;
    // The service's containers are listed beside the switch of the host port rather than between it and the routes':
    // the list is the same either way (the new ones exist, nothing else starts or stops meanwhile).
    const listed = this.containers.ofService(service.id);
    listed.catch(() => {}); // awaited below, unless the switch of the host port failed
    for (const replica of replicas) await this.runtime.engine.keepRunning(replica.id);
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
    const fresh = new Set(replicas.map((c) => c.id));
    const old = (await listed).filter((c) => !fresh.has(c.id));
    // The new slot is open before any route names it (run began it); nothing closes yet.
    await attempt.opening;
    attempt.routed = true;
    this.routing.setUpstream(
      service.id,
      this.upstreamFor(service, upstream ? container : undefined),
      upstream ? this.replicaUpstreamsFor(service, replicas.slice(1)) : [],
    );
    const proxy = await this.routing.reload();
    const routed = await this.routing.routesTo(service.id);
    if (routed) {
      const how = slot ? `traffic slot ${slot.ip} opened; ${proxy.detail}` : proxy.detail;
      const to = replicas.length > 1 ? `${replicas.length} replicas (${replicas.map((c) => c.name).join(', ')})` : container.name;
      log.write(proxy.ok ? `Routes switched to ${to}: ${how}` : `Proxy: ${proxy.detail}`, proxy.ok ? 'stdout' : 'stderr');
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
