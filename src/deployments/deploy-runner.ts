import { databaseEngineOf } from '../domain/database-engines.js';
import type { DeploymentRecord, ServiceRecord } from '../domain/types.js';
import type { ContainerState } from './container-engine.port.js';
import type { ServiceDeps } from '../platform/deps.js';
import { DeploymentLogWriter } from './deployment-log-writer.js';
import { DeploymentFailure, DeploymentPipeline } from './deployment-pipeline.js';
import type { DeploymentService } from './deployment.service.js';
import type { EnvService } from '../env/env.service.js';
import type { RoutingService } from '../routing/routing.service.js';
import { LABELS, resourceNames, type RuntimeDeps } from './runtime-deps.js';
import { TrafficSlots, type SlotAssignment } from '../routing/traffic-slots.js';

const POLL_MS = 500;
const RECONCILE_MS = 10_000;
const DRAIN_POLL_MS = 100;
/** While the engine is down, it is asked again at most this often (the claim loop ticks every 500 ms). */
const ENGINE_RETRY_MS = 2_000;
const ENGINE_PING_TIMEOUT_MS = 3_000;
/** When a container's connections cannot be counted: long enough for a typical request to finish. */
const DRAIN_FALLBACK_MS = 2_000;

class AbortedByUser extends Error {}

/** Web services and databases answer on their host port; workers do not. */
function serves(service: ServiceRecord): boolean {
  return service.runtimeMode === 'web' || databaseEngineOf(service) !== null;
}

/** What the proxy routes to: web services that are not databases. */
function isWeb(service: ServiceRecord): boolean {
  return service.runtimeMode === 'web' && databaseEngineOf(service) === null;
}
class InterruptedByShutdown extends Error {}

/**
 * Takes queued deployments from the database (the queue is the table: a restart loses nothing),
 * one at a time per service and at most `buildConcurrency` at once, runs each through the
 * pipeline, then switches the service over: host port, routes, old container retired.
 */
export class DeployRunner {
  private readonly running = new Map<string, { serviceId: string; controller: AbortController; done: Promise<void> }>();
  private timer: NodeJS.Timeout | null = null;
  private reconcileTimer: NodeJS.Timeout | null = null;
  private ticking: Promise<void> | null = null;
  private reconciling: Promise<void> | null = null;
  private stopped = true;
  private readonly pipeline: DeploymentPipeline;
  /** Null without a traffic gate or a proxy: cutovers then reload the proxy with the new address. */
  private readonly slots: TrafficSlots | null;
  private slotsProblem = '';
  /** Slots handed to deployments under way: a reconcile pass leaves them as they are. */
  private readonly jobSlots = new Set<string>();
  /** Why the engine did not answer, while it does not; nothing is claimed then. */
  private engineDown: string | null = null;
  private engineCheckedAt = 0;
  /**
   * Recovery runs once the engine answers; until it has, nothing is claimed either (a new
   * deployment's container would look like a stray one to it).
   */
  private recovered = false;
  /** The last maintenance failure logged: a lasting one is logged once, not every pass. */
  private lastFailure: string | null = null;

  constructor(
    private readonly deps: ServiceDeps,
    private readonly runtime: RuntimeDeps,
    private readonly deployments: DeploymentService,
    private readonly env: EnvService,
    private readonly routing: RoutingService,
    private readonly log: (message: string, extra?: Record<string, unknown>) => void = () => {},
  ) {
    this.pipeline = new DeploymentPipeline(deps, runtime, env);
    this.slots = runtime.gate && routing.enabled ? new TrafficSlots(runtime.engine, runtime.gate, deps.config) : null;
    deployments.onAbort((id) => this.running.get(id)?.controller.abort(new AbortedByUser('aborted')));
    deployments.onCreated(() => this.wake());
  }

  /** Recovers from whatever a previous process left, then starts taking work. */
  async start(): Promise<void> {
    this.stopped = false;
    this.recovered = false;
    await this.maintain();
    this.timer = setInterval(() => this.wake(), POLL_MS);
    this.reconcileTimer = setInterval(() => {
      // A pass may outlast the interval (a drain): never two at once.
      if (this.reconciling) return;
      this.reconciling = this.maintain().finally(() => {
        this.reconciling = null;
      });
    }, RECONCILE_MS);
    this.wake();
  }

  /**
   * One maintenance pass: recovery until it has succeeded once, then reconcile. Skipped while the
   * engine is unreachable; a failure that lasts is logged once, not every 10 s.
   */
  async maintain(): Promise<void> {
    if (!(await this.engineReachable())) return;
    const what = this.recovered ? 'reconcile failed' : 'recovery failed';
    try {
      if (this.recovered) await this.reconcile();
      else {
        await this.recover();
        this.recovered = true;
        this.wake();
      }
      this.lastFailure = null;
    } catch (error) {
      const message = (error as Error).message;
      if (`${what}|${message}` !== this.lastFailure) this.log(what, { error: message });
      this.lastFailure = `${what}|${message}`;
    }
  }

  /**
   * Whether the engine answers. While it does not, queued deployments wait (claiming them would only
   * fail them) and it is asked again at most every ENGINE_RETRY_MS; the outage is logged once.
   */
  private async engineReachable(): Promise<boolean> {
    if (this.engineDown !== null && Date.now() - this.engineCheckedAt < ENGINE_RETRY_MS) return false;
    this.engineCheckedAt = Date.now();
    try {
      await this.runtime.engine.ping(AbortSignal.timeout(ENGINE_PING_TIMEOUT_MS));
    } catch (error) {
      const reason = (error as Error).message;
      if (this.engineDown === null) this.log('the Docker engine is unreachable; queued deployments wait for it', { error: reason });
      this.engineDown = reason;
      return false;
    }
    if (this.engineDown !== null) {
      this.log('the Docker engine is reachable again');
      this.engineDown = null;
      this.lastFailure = null;
    }
    return true;
  }

  /** Stops taking work and interrupts what runs; those deployments end `failed`, saying why. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    if (this.reconcileTimer) clearInterval(this.reconcileTimer);
    for (const job of this.running.values()) job.controller.abort(new InterruptedByShutdown('the server is shutting down'));
    await Promise.allSettled([...this.running.values()].map((job) => job.done));
    await this.ticking;
    await this.reconciling;
  }

  wake(): void {
    if (this.stopped || !this.recovered || this.ticking) return;
    this.ticking = this.tick()
      .catch((error: Error) => this.log('runner tick failed', { error: error.message }))
      .finally(() => {
        this.ticking = null;
      });
  }

  private async tick(): Promise<void> {
    const limit = this.deps.config.deploy.buildConcurrency;
    if (this.running.size >= limit) return;
    const queued = await this.deps.store.deployments.listByStatus(['queued']);
    const busy = new Set([...this.running.values()].map((job) => job.serviceId));
    let engineAsked = false;
    for (const deployment of queued) {
      if (this.stopped || this.running.size >= limit) return;
      if (busy.has(deployment.serviceId)) continue;
      // Asked only when there is something to claim, once per pass.
      if (!engineAsked) {
        engineAsked = true;
        if (!(await this.engineReachable())) return;
        // Recovery comes first: it removes containers no deployment owns, which a new one's would be.
        if (!this.recovered) {
          void this.maintainOnce();
          return;
        }
      }
      busy.add(deployment.serviceId);
      const now = this.deps.clock.now();
      if (!(await this.deps.store.deployments.transition(deployment.id, ['queued'], { status: 'running', startedAt: now }))) continue;
      this.deps.logBus.publish(deployment.id, { type: 'status', status: 'running' });
      const controller = new AbortController();
      const job = { serviceId: deployment.serviceId, controller, done: Promise.resolve() };
      this.running.set(deployment.id, job);
      job.done = this.execute({ ...deployment, status: 'running', startedAt: now }, controller).finally(() => {
        this.running.delete(deployment.id);
        this.wake();
      });
    }
  }

  /** Recovery as soon as the engine is back, without waiting for the 10-second loop. */
  private maintainOnce(): Promise<void> {
    this.reconciling ??= this.maintain().finally(() => {
      this.reconciling = null;
    });
    return this.reconciling;
  }

  private async execute(deployment: DeploymentRecord, controller: AbortController): Promise<void> {
    const log = new DeploymentLogWriter(deployment.id, this.deployments);
    const created: { image?: string; container?: string } = {};
    const service = await this.deps.store.projects.getService(deployment.serviceId);
    const project = service ? await this.deps.store.projects.get(service.projectId) : null;
    let slot: SlotAssignment | undefined;
    try {
      if (!service || !project) throw new DeploymentFailure('The service was deleted');
      await this.deps.store.projects.updateService(service.id, { status: service.status === 'active' ? 'active' : 'deploying' });
      log.write(`Deployment ${deployment.id} started`);
      slot = await this.assignSlot(service);
      if (slot) this.jobSlots.add(slot.ip);
      const result = await this.pipeline.run({ deployment, service, project, log, signal: controller.signal, created, ...(slot ? { slot } : {}) });
      if (controller.signal.aborted) throw controller.signal.reason;
      await this.cutover(service, deployment, result.container, log, slot);
      const now = this.deps.clock.now();
      await this.deps.store.projects.updateService(service.id, {
        status: 'active',
        reachable: serves(service),
        lastDeployedAt: now,
        updatedAt: now,
      });
      await this.deps.store.projects.update(project.id, { status: 'active', updatedAt: now });
      log.write(`Deployment succeeded: ${result.container.name}`);
      await log.flush();
      await this.finish(deployment.id, 'succeeded', { imageTag: result.imageTag, containerName: result.container.name });
    } catch (error) {
      const aborted = error instanceof AbortedByUser || controller.signal.reason instanceof AbortedByUser;
      const reason =
        error instanceof DeploymentFailure
          ? error.message
          : controller.signal.reason instanceof Error
            ? controller.signal.reason.message
            : `Internal error: ${(error as Error).message}`;
      log.write(aborted ? 'Deployment aborted; the previous container keeps serving' : `Deployment failed: ${reason}`, aborted ? 'stdout' : 'stderr');
      // A cutover that failed half-way may have opened the new slot: traffic leaves it before it goes.
      if (slot) await this.slots?.close([slot.ip]).catch((e: Error) => log.write(`Could not close traffic slot ${slot!.ip}: ${e.message}`, 'stderr'));
      await this.discard(created, log);
      if (service) {
        const current = await this.currentContainer(service);
        if (!current) await this.deps.store.projects.updateService(service.id, { status: 'failed', reachable: false });
      }
      await log.flush();
      await this.finish(deployment.id, aborted ? 'aborted' : 'failed', {});
    } finally {
      if (slot) {
        this.slots?.release(slot.ip);
        this.jobSlots.delete(slot.ip);
      }
    }
  }

  /** A web service behind the proxy gets the free slot of its pair (see TrafficSlots). */
  private async assignSlot(service: ServiceRecord): Promise<SlotAssignment | undefined> {
    if (!this.slots?.ready || !isWeb(service)) return undefined;
    const containers = await this.instanceContainers();
    const current = (await this.pickCurrent(containers.filter((c) => c.labels[LABELS.service] === service.id))).get(service.id) ?? null;
    return this.slots.assign(current, containers);
  }

  /** Creates the slot network and the gate's rules; until then cutovers reload the proxy. Said once per cause. */
  private async prepareSlots(): Promise<void> {
    if (!this.slots || this.slots.ready) return;
    try {
      await this.slots.prepare();
      if (this.slotsProblem) this.log('traffic slots are ready: cutovers no longer reload the proxy');
      this.slotsProblem = '';
    } catch (error) {
      const message = (error as Error).message;
      if (message !== this.slotsProblem) this.log('traffic slots unavailable: cutovers reload the proxy until they are', { error: message });
      this.slotsProblem = message;
    }
  }

  /** The upstream the proxy gets for a service's current container: its slot pair, or its address. */
  private upstreamFor(service: ServiceRecord, container: ContainerState | undefined): string | string[] | null {
    if (!isWeb(service) || !container?.ip) return null;
    const slotIp = container.labels[LABELS.slot];
    if (slotIp && this.slots?.ready) return this.slots.pairOf(slotIp).map((ip) => `${ip}:${service.internalPort}`);
    return `${container.ip}:${service.internalPort}`;
  }

  private async finish(id: string, status: 'succeeded' | 'failed' | 'aborted', patch: Partial<DeploymentRecord>): Promise<void> {
    await this.deps.store.deployments.transition(id, ['running'], { ...patch, status, finishedAt: this.deps.clock.now() });
    this.deps.logBus.publish(id, { type: 'status', status });
  }

  /**
   * The new container takes the host port and the routes; the old ones stop once what they were
   * serving has finished. When the proxy did not take the new routes, it may still send traffic to
   * the old container, which then keeps running until the reconcile loop sees the routes loaded.
   */
  private async cutover(service: ServiceRecord, deployment: DeploymentRecord, container: ContainerState, log: DeploymentLogWriter, slot?: SlotAssignment): Promise<void> {
    await this.runtime.engine.keepRunning(container.id);
    const upstream = serves(service) && container.ip ? { host: container.ip, port: service.internalPort } : null;
    // A worker (maybe a web service until now) publishes nothing.
    await this.runtime.forwarder.set(service.hostPort, upstream);
    if (upstream) log.write(`Host port 127.0.0.1:${service.hostPort} now forwards to ${container.name}`);
    await this.deps.store.deployments.update(deployment.id, { containerName: container.name });
    this.routing.setUpstream(service.id, this.upstreamFor(service, upstream ? container : undefined));
    // Between slots the table stays the same and the proxy is not reloaded: the gate moves the traffic.
    const proxy = slot ? await this.routing.reloadIfChanged() : { ...(await this.routing.reload()), loaded: true };
    const routed = await this.routing.routesTo(service.id);
    const old = (await this.runtime.engine.listContainers({ key: LABELS.service, value: service.id })).filter((c) => c.id !== container.id);
    if (slot && this.slots) {
      const closing = old.map((c) => c.labels[LABELS.slot]).filter((ip): ip is string => !!ip);
      await this.slots.switchTo(slot.ip, closing, { wait: routed });
      if (routed) {
        const how = proxy.loaded ? proxy.detail : `traffic slot ${slot.ip} opened${closing.length ? `, ${closing.join(', ')} closed` : ''}; the proxy was not reloaded`;
        log.write(proxy.ok ? `Routes switched to ${container.name}: ${how}` : `Proxy: ${proxy.detail}`, proxy.ok ? 'stdout' : 'stderr');
      }
    } else if (routed) {
      log.write(proxy.ok ? `Routes switched to ${container.name}: ${proxy.detail}` : `Proxy: ${proxy.detail}`, proxy.ok ? 'stdout' : 'stderr');
    }
    const keepOld = old.length > 0 && routed && !proxy.ok;
    if (keepOld) log.write(`The previous container keeps running until the proxy has the new routes; it is stopped then`, 'stderr');
    else for (const previous of old) await this.retire(service, previous, log);
    const prefix = resourceNames(this.deps.config.resourcePrefix, service.id, deployment.id, service.projectId).imagePrefix;
    const keep = new Set([`${container.image}`, `${container.image}:latest`, ...(keepOld ? old.flatMap((c) => [c.image, `${c.image}:latest`]) : [])]);
    for (const tag of await this.runtime.engine.listImageTags(prefix)) if (!keep.has(tag)) await this.runtime.engine.removeImage(tag);
  }

  /** Lets requests in flight to a replaced container finish (up to the drain timeout), then stops it. */
  private async retire(service: ServiceRecord, previous: ContainerState, log?: DeploymentLogWriter): Promise<void> {
    const started = Date.now();
    const deadline = started + this.deps.config.routing.drainTimeoutMs;
    let open: number | null = 0;
    // Only web traffic is drained: a database's clients reconnect, and a worker serves none.
    if (previous.running && service.runtimeMode === 'web' && !databaseEngineOf(service)) {
      // Twice in a row: a connection may be opening as the first look finds none.
      let idleLooks = 0;
      while (Date.now() < deadline && idleLooks < 2 && !this.stopped) {
        open = await this.runtime.engine.countConnections(previous.id, service.internalPort);
        if (open === null) break;
        idleLooks = open === 0 ? idleLooks + 1 : 0;
        if (idleLooks < 2) await new Promise((resolve) => setTimeout(resolve, DRAIN_POLL_MS));
      }
      if (open === null) await new Promise((resolve) => setTimeout(resolve, Math.min(DRAIN_FALLBACK_MS, this.deps.config.routing.drainTimeoutMs)));
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

  /** Removes what a failed or aborted deployment created; the live container is never among it. */
  private async discard(created: { image?: string; container?: string }, log: DeploymentLogWriter): Promise<void> {
    try {
      if (created.container) await this.runtime.engine.stopAndRemove(created.container, 0);
      if (created.image) await this.runtime.engine.removeImage(created.image);
    } catch (error) {
      log.write(`Cleanup after the failure was incomplete: ${(error as Error).message}`, 'stderr');
    }
  }

  /** The running container of the service's latest successful deployment that still runs; never one that was not checked. */
  async currentContainer(service: ServiceRecord): Promise<ContainerState | null> {
    const containers = await this.runtime.engine.listContainers({ key: LABELS.service, value: service.id });
    return (await this.pickCurrent(containers)).get(service.id) ?? null;
  }

  /**
   * The current container of every service among `containers`, in one look-up of their deployments:
   * the reconcile loop runs every 10 s, and must not cost a Docker call and a query per service.
   */
  private async pickCurrent(containers: ContainerState[]): Promise<Map<string, ContainerState>> {
    const running = containers.filter((c) => c.running && c.labels[LABELS.deployment]);
    const deployments = await this.deps.store.deployments.listByIds([...new Set(running.map((c) => c.labels[LABELS.deployment]!))]);
    const succeeded = new Map(deployments.filter((d) => d.status === 'succeeded').map((d) => [d.id, d.createdAt.getTime()]));
    const current = new Map<string, { container: ContainerState; at: number }>();
    for (const container of running) {
      const at = succeeded.get(container.labels[LABELS.deployment]!);
      const serviceId = container.labels[LABELS.service];
      if (at === undefined || !serviceId) continue;
      const best = current.get(serviceId);
      if (!best || at > best.at) current.set(serviceId, { container, at });
    }
    return new Map([...current].map(([serviceId, { container }]) => [serviceId, container]));
  }

  private instanceContainers(): Promise<ContainerState[]> {
    return this.runtime.engine.listContainers({ key: LABELS.instance, value: this.deps.config.instanceId });
  }

  /**
   * After a crash: deployments left `running` end `failed` with the reason, containers nothing
   * owns any more go, and the host ports point at the containers that kept running.
   */
  async recover(): Promise<void> {
    for (const deployment of await this.deps.store.deployments.listByStatus(['running'])) {
      if (this.running.has(deployment.id)) continue;
      await this.deployments.appendLog(deployment.id, 'stderr', 'The server stopped while this deployment was running; it was not finished. Deploy again.');
      await this.finish(deployment.id, 'failed', {});
    }
    await this.runtime.engine.ping();
    await this.prepareSlots();
    const services = new Map((await this.deps.store.projects.listAllServices()).map((s) => [s.id, s]));
    const snapshot = this.slots?.snapshot() ?? 0;
    const all = await this.instanceContainers();
    const currents = [...(await this.pickCurrent(all)).values()];
    const keep = new Set(currents.map((c) => c.id));
    // Traffic goes back to the current containers before a stray one (a cutover the crash cut short) goes.
    // Written even when memory says nothing changed: the kernel's rules are the truth to restore.
    if (this.slots?.ready) {
      await this.slots.reconcile(currents.map((c) => c.labels[LABELS.slot]).filter((ip): ip is string => !!ip), new Set(), snapshot, { force: true });
    }
    for (const container of all) {
      const service = services.get(container.labels[LABELS.service] ?? '');
      if (!service || !keep.has(container.id)) {
        this.log('removing a stray container', { name: container.name });
        if (service && container.running && container.labels[LABELS.slot]) await this.retire(service, container);
        else await this.runtime.engine.stopAndRemove(container.id, 0);
      }
    }
    await this.reconcile();
  }

  /**
   * Keeps each host port and route pointed at its service's current container (its address changes
   * when Docker restarts it), and stops containers a cutover left running once the proxy has
   * the routes that no longer use them.
   */
  async reconcile(): Promise<void> {
    await this.collectImages();
    await this.prepareSlots();
    const snapshot = this.slots?.snapshot() ?? 0;
    const containers = await this.instanceContainers();
    const currents = await this.pickCurrent(containers);
    const services = await this.deps.store.projects.listAllServices();
    const deploying = new Set([...this.running.values()].map((job) => job.serviceId));
    if (this.slots?.ready) await this.reconcileSlots(services, containers, currents, deploying, snapshot);
    for (const service of services) {
      if (deploying.has(service.id)) continue;
      const current = currents.get(service.id);
      const target = serves(service) && current?.ip ? { host: current.ip, port: service.internalPort } : null;
      this.routing.setUpstream(service.id, this.upstreamFor(service, target ? current : undefined));
      if (service.status !== 'active') continue;
      await this.runtime.forwarder.set(service.hostPort, target).catch(() => {});
      if (serves(service) && !!current !== service.reachable) await this.deps.store.projects.updateService(service.id, { reachable: !!current });
    }
    this.routing.markUpstreamsKnown();
    await this.retireLeftovers(services, containers, currents, deploying);
  }

  /** Open: the slots of current web containers; those of services being deployed stay as their cutover left them. */
  private async reconcileSlots(
    services: ServiceRecord[],
    containers: ContainerState[],
    currents: Map<string, ContainerState>,
    deploying: Set<string>,
    snapshot: number,
  ): Promise<void> {
    const wanted: string[] = [];
    for (const service of services) {
      const ip = currents.get(service.id)?.labels[LABELS.slot];
      if (ip && isWeb(service) && !deploying.has(service.id)) wanted.push(ip);
    }
    const keep = new Set([...this.jobSlots, ...containers.filter((c) => deploying.has(c.labels[LABELS.service] ?? '')).map((c) => c.labels[LABELS.slot] ?? '')]);
    await this.slots!.reconcile(wanted, keep, snapshot);
  }

  private async retireLeftovers(services: ServiceRecord[], containers: ContainerState[], currents: Map<string, ContainerState>, deploying: Set<string>): Promise<void> {
    const byId = new Map(services.map((s) => [s.id, s]));
    const leftovers = containers.filter((c) => {
      const serviceId = c.labels[LABELS.service] ?? '';
      const current = currents.get(serviceId);
      return current && current.id !== c.id && !deploying.has(serviceId) && !this.running.has(c.labels[LABELS.deployment] ?? '');
    });
    if (leftovers.length === 0 || !(await this.routing.settled())) return;
    for (const container of leftovers) {
      if (this.stopped) return;
      const service = byId.get(container.labels[LABELS.service]!);
      if (!service) continue;
      this.log('stopping a container the routes no longer use', { name: container.name });
      await this.retire(service, container);
      if (container.image.startsWith(`${this.deps.config.resourcePrefix}-`)) await this.runtime.engine.removeImage(container.image);
    }
  }

  /**
   * Removes images of deployments that did not become live (a build the daemon finished after an
   * abort, or a crash between build and cleanup). Only ids this installation knows are touched.
   */
  private async collectImages(): Promise<void> {
    const prefix = `${this.deps.config.resourcePrefix}-`;
    const candidates = (await this.runtime.engine.listImageTags(prefix)).flatMap((tag) => {
      const match = /^(.+)-([a-z0-9]+)-([a-z0-9]+)(?::latest)?$/.exec(tag);
      if (!match || match[1] !== this.deps.config.resourcePrefix || this.running.has(match[3]!)) return [];
      return [{ tag, serviceId: match[2]!, deploymentId: match[3]! }];
    });
    if (candidates.length === 0) return;
    // One query for all of them: this runs every 10 s.
    const deployments = new Map((await this.deps.store.deployments.listByIds([...new Set(candidates.map((c) => c.deploymentId))])).map((d) => [d.id, d]));
    for (const { tag, serviceId, deploymentId } of candidates) {
      const deployment = deployments.get(deploymentId);
      if (!deployment || deployment.serviceId !== serviceId || deployment.status === 'succeeded' || deployment.status === 'running' || deployment.status === 'queued') continue;
      await this.runtime.engine.removeImage(tag);
    }
  }

  /** Ends the deployments of services about to be deleted, and waits until they have stopped writing. */
  async stopDeploymentsOf(serviceIds: string[]): Promise<void> {
    const jobs = [...this.running.values()].filter((job) => serviceIds.includes(job.serviceId));
    for (const job of jobs) job.controller.abort(new AbortedByUser('the service is being deleted'));
    await Promise.allSettled(jobs.map((job) => job.done));
  }

  /** Everything a deleted service had at runtime: containers, images, host port, data volume. */
  async removeService(service: ServiceRecord): Promise<void> {
    await this.stopDeploymentsOf([service.id]);
    this.routing.setUpstream(service.id, null);
    await this.runtime.forwarder.set(service.hostPort, null);
    const containers = await this.runtime.engine.listContainers({ key: LABELS.service, value: service.id });
    await this.slots?.close(containers.map((c) => c.labels[LABELS.slot]).filter((ip): ip is string => !!ip)).catch(() => {});
    for (const container of containers) {
      await this.runtime.engine.stopAndRemove(container.id, 0);
    }
    const names = resourceNames(this.deps.config.resourcePrefix, service.id, 'x', service.projectId);
    for (const tag of await this.runtime.engine.listImageTags(names.imagePrefix)) await this.runtime.engine.removeImage(tag);
    if (databaseEngineOf(service)) await this.runtime.engine.removeVolume(names.volume);
  }

  async removeProjectNetwork(projectId: string): Promise<void> {
    await this.runtime.engine.removeNetwork(resourceNames(this.deps.config.resourcePrefix, 'x', 'x', projectId).network);
  }
}
