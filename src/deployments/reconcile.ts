import type { ServiceRecord } from '../domain/types.js';
import type { RunnerLog } from '../jobs/job-runner.js';
import type { ServiceDeps } from '../platform/deps.js';
import type { RoutingService } from '../routing/routing.service.js';
import type { OpenSlot } from './traffic-gate.port.js';
import type { TrafficSlots } from './traffic-slots.js';
import { LABELS, type ContainerEngine, type ContainerState } from './container-engine.port.js';
import { keepsData } from '../domain/storage-server.js';
import { JobLogWriter } from '../jobs/job-log-writer.js';
import { isWeb, replicaIndex, serves, type CurrentContainers, exposureOf } from './current-containers.js';
import type { Rollout } from './rollout.js';
import type { RuntimeDeps } from './runtime-deps.js';

const RECONCILE_MS = 10_000;
/** A replica that does not answer its health check within this is left out of the routes until it does. */
const REPLICA_CHECK_TIMEOUT_MS = 1_000;
/** While the engine is down, it is asked again at most this often (the claim loop ticks every 500 ms). */
const ENGINE_RETRY_MS = 2_000;
const ENGINE_PING_TIMEOUT_MS = 3_000;

/** What the reconcile pass needs to know of the deployments under way. */
export interface DeploymentsUnderWay {
  /** Services with a deployment running: their host port, routes and slots are the rollout's. */
  services(): Set<string>;
  holds(deploymentId: string): boolean;
  stopping(): boolean;
}

/**
 * Keeps the runtime as the table says it should be: after a crash (recoverRuntime), then every
 * 10 s (reconcile): host ports, routes and traffic slots on each service's current container,
 * containers no route uses any more retired, images of deployments that never went live removed.
 */
export class Reconciler {
  private slotsProblem = '';
  /** Per service on the cluster, its running tasks' endpoints (`node:port`) as the last pass read them. */
  private readonly swarmTasks = new Map<string, string[]>();
  /**
   * Services seen on the cluster, whose routes the task check watches: kept until the service is gone, whatever a pass
   * read meanwhile (a service being deployed is `deploying`, and its Swarm services change under the read).
   */
  private readonly swarmServices = new Set<string>();
  /** Task endpoints that did not answer their last probe (probeSwarmTasks): left out of the routes while another answers. */
  private readonly unanswered = new Set<string>();
  /** Services on the cluster routed to fewer answering tasks than their replicas at the last pass (a lost node's). */
  private readonly short = new Set<string>();
  /** Live deployments whose move to the cluster was asked for (moveOnce). */
  private readonly moved = new Set<string>();

  constructor(
    private readonly deps: ServiceDeps,
    private readonly runtime: RuntimeDeps,
    private readonly routing: RoutingService,
    private readonly slots: TrafficSlots | null,
    private readonly containers: CurrentContainers,
    private readonly rollout: Rollout,
    private readonly underWay: DeploymentsUnderWay,
    private readonly log: RunnerLog,
    /** Queues the move of a service still on plain containers to the Swarm path (DeploymentService.moveToCluster). */
    private readonly moveToCluster?: (serviceId: string) => Promise<{ id: string } | null>,
  ) {}

  /**
   * After a crash (deployments left running are settled by then): containers nothing owns any more
   * go, and the host ports point at the containers that kept running.
   */
  async recoverRuntime(): Promise<void> {
    await this.runtime.engine.ping();
    // The slot network and the gate responder (a container to start: a few hundred ms on a fresh install) are made
    // beside the proxy's first load when no container has a slot yet, since no route can name one before then;
    // otherwise the routes below are computed once the slots are ready, as they name the containers' slots.
    const slotsPrepared = this.prepareSlots();
    const services = new Map((await this.deps.store.projects.listAllServices()).map((s) => [s.id, s]));
    const all = await this.containers.ofInstance();
    if (all.some((c) => c.labels[LABELS.slot])) await slotsPrepared;
    const snapshot = this.slots?.snapshot() ?? 0;
    const replicas = await this.containers.pickReplicas(all);
    const picked = new Map([...replicas].map(([id, list]) => [id, list[0]!]));
    const currents = [...picked.values()];
    const keep = new Set([...replicas.values()].flat().map((c) => c.id));
    // Traffic goes back to the current containers before a stray one (a cutover the crash cut short) goes:
    // the routes first (they may name the stray's slot), then the gate. Written even when memory says
    // nothing changed: the kernel's rules are the truth to restore.
    // Services on the cluster are routed to their tasks, never to nothing.
    this.routeCurrents([...services.values()], replicas, await this.keepSwarmServices());
    await this.routing.reload();
    await slotsPrepared;
    if (this.slots?.ready) {
      await this.slots.reconcile(
        currents.flatMap((c) => {
          const ip = c.labels[LABELS.slot];
          const service = services.get(c.labels[LABELS.service] ?? '');
          return ip && service ? [{ ip, port: service.internalPort }] : [];
        }),
        new Set(),
        snapshot,
        { force: true },
      );
    }
    for (const container of all) {
      const service = services.get(container.labels[LABELS.service] ?? '');
      if (!service || !keep.has(container.id)) {
        this.log('removing a stray container', { name: container.name });
        if (service && container.running && container.labels[LABELS.slot]) await this.rollout.retire(service, container);
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
    const onSwarm = await this.keepSwarmServices();
    // Taken before the containers are read: a cutover after this makes the slot write below give way.
    await this.keepReplicas(onSwarm);
    const snapshot = this.slots?.snapshot() ?? 0;
    const containers = await this.containers.ofInstance();
    const replicas = await this.containers.pickReplicas(containers);
    const currents = new Map([...replicas].map(([id, list]) => [id, list[0]!]));
    const services = await this.deps.store.projects.listAllServices();
    // Services on the cluster have their routes from their tasks (keepSwarmServices), no host port and no slot.
    const deploying = new Set([...this.underWay.services(), ...onSwarm]);
    if (this.slots?.ready) await this.reconcileSlots(services, containers, currents, deploying, snapshot);
    this.routeCurrents(services, await this.answering(services, replicas), deploying);
    for (const service of services) {
      if (deploying.has(service.id)) continue;
      const current = currents.get(service.id);
      const target = serves(service) && current?.ip ? { host: current.ip, port: service.internalPort } : null;
      if (service.status !== 'active') continue;
      await this.runtime.forwarder.set(service.hostPort, target, exposureOf(service)).catch(() => {});
      if (serves(service) && !!current !== service.reachable)
        await this.deps.store.projects.updateService(service.id, { reachable: !!current });
    }
    await this.retireLeftovers(services, containers, replicas, deploying);
  }

  /**
   * Each service's route goes to its current replicas (deployments under way keep theirs); routes may
   * load from then on. A replica that has no address (it is restarting) is left out until it has one.
   */
  private routeCurrents(services: ServiceRecord[], replicas: Map<string, ContainerState[]>, deploying: Set<string>): void {
    for (const service of services) {
      if (deploying.has(service.id)) continue;
      this.routeTo(service, replicas.get(service.id) ?? []);
    }
    this.routing.markUpstreamsKnown();
  }

  /**
   * The platform's active health check of a web service's replicas, when it runs several: each pass
   * asks every replica (GET the health path, as a deployment's check does) and routes only those that
   * answer, so one that Docker restarted gets traffic once it serves again. When none answers, all stay
   * routed: the proxy's own retries then decide, rather than a 503 for the hostname.
   */
  private async answering(services: ServiceRecord[], replicas: Map<string, ContainerState[]>): Promise<Map<string, ContainerState[]>> {
    const byId = new Map(services.map((s) => [s.id, s]));
    const { healthPath } = this.deps.config.deploy;
    const checked = new Map(replicas);
    await Promise.all(
      [...replicas].map(async ([serviceId, list]) => {
        const service = byId.get(serviceId);
        if (!service || !isWeb(service) || list.length < 2) return;
        const answers = await Promise.all(
          list.map((c) =>
            c.ip
              ? this.runtime.health
                  .http(c.ip, service.internalPort, healthPath, AbortSignal.timeout(REPLICA_CHECK_TIMEOUT_MS))
                  .catch(() => null)
              : Promise.resolve(null),
          ),
        );
        const live = list.filter((_, i) => answers[i] !== null);
        if (live.length > 0) checked.set(serviceId, live);
      }),
    );
    return checked;
  }

  /**
   * A replica's container died (Docker's event): it leaves the routes at once, before the next pass
   * replaces it (or routes it again once Docker restarted it and it answers).
   */
  async replicaExited(serviceId: string, containerId: string): Promise<void> {
    if (this.underWay.services().has(serviceId)) return;
    const service = await this.deps.store.projects.getService(serviceId);
    if (!service || !isWeb(service) || service.replicas < 2) return;
    const replicas = (await this.containers.pickReplicas(await this.containers.ofService(serviceId))).get(serviceId) ?? [];
    const live = replicas.filter((c) => c.id !== containerId && !containerId.startsWith(c.id) && !c.id.startsWith(containerId));
    // Docker may list it as exited already: what runs is what stays routed.
    if (live.length === 0) return;
    this.routeTo(service, live);
    await this.routing.reload();
  }

  private routeTo(service: ServiceRecord, replicas: ContainerState[]): void {
    const live = serves(service) ? replicas.filter((c) => c.ip) : [];
    this.routing.setUpstream(
      service.id,
      this.rollout.upstreamFor(service, live[0]),
      this.rollout.replicaUpstreamsFor(service, live.slice(1)),
    );
  }

  /**
   * On the cluster (more than one ready server): each stateless service that runs as a Swarm service is scaled to
   * its `replicas` (Swarm itself replaces tasks that die) and routed to its running tasks, which Docker's health
   * checks decide. Answers those services: the plain-container steps leave them alone. Nothing on a single server.
   */
  private async keepSwarmServices(): Promise<Set<string>> {
    const onSwarm = new Set<string>();
    const swarm = this.runtime.swarm?.() ?? null;
    if (!swarm || !(await swarm.active().catch(() => false))) return onSwarm;
    const deploying = this.underWay.services();
    let routed = false;
    const listed = await this.deps.store.projects.listAllServices();
    for (const service of listed) {
      if (keepsData(service) || !(service.status === 'active' || (service.status === 'stopped' && service.replicas === 0))) continue;
      const current = await swarm.current(service).catch((error: Error) => {
        this.log('a Swarm service could not be read', { service: service.name, error: error.message });
        return undefined;
      });
      if (!current) {
        await this.moveOnce(service, deploying);
        continue;
      }
      onSwarm.add(service.id);
      this.swarmServices.add(service.id);
      // Asked again before each change, not only at the pass's start: a deployment that began while this pass read
      // the engine switches the routes itself, and this pass's view of the tasks is already stale (seen: a redeploy
      // under load got 404s and 502s when a pass routed to the tasks it had read before the switch).
      const started = () => deploying.has(service.id) || this.underWay.services().has(service.id);
      if (started()) continue;
      const pruned = await swarm.prune(service).catch((error: Error) => {
        this.log('leftover Swarm services could not be removed', { service: service.name, error: error.message });
        return [];
      });
      if (pruned.length) this.log('removed leftover Swarm services', { service: service.name, names: pruned });
      let upstreams = current.upstreams;
      if (started()) continue;
      if (current.replicas !== service.replicas) {
        this.log('scaling a Swarm service', { service: service.name, from: current.replicas, replicas: service.replicas });
        // Fewer tasks leave the routes before Swarm stops them; more join once they run (the next pass).
        upstreams = upstreams.slice(0, service.replicas);
        if (serves(service)) {
          this.routing.setUpstream(service.id, upstreams[0] ?? null, upstreams.slice(1));
          await this.routing.reload();
        }
        await swarm
          .scale(service, service.replicas)
          .catch((error: Error) => this.log('a Swarm service could not be scaled', { service: service.name, error: error.message }));
      }
      if (serves(service) && !started()) {
        this.swarmTasks.set(service.id, upstreams);
        // Swarm still lists a lost node's tasks as running until it marks the node down: the probe's word counts first.
        const answering = upstreams.filter((u) => !this.unanswered.has(u));
        const chosen = answering.length > 0 ? answering : upstreams;
        if (answering.length < service.replicas) this.short.add(service.id);
        else this.short.delete(service.id);
        this.routing.setUpstream(service.id, chosen[0] ?? null, chosen.slice(1));
        routed = true;
      }
    }
    // Only services gone leave the check: one being deployed, or read at a bad moment, keeps its tasks checked.
    const ids = new Set(listed.map((s) => s.id));
    for (const id of this.swarmServices) if (!ids.has(id)) this.swarmServices.delete(id);
    for (const id of this.swarmTasks.keys()) if (!ids.has(id)) this.swarmTasks.delete(id);
    for (const id of this.short) if (!ids.has(id)) this.short.delete(id);
    const known = new Set([...this.swarmTasks.values()].flat());
    for (const endpoint of this.unanswered) if (!known.has(endpoint)) this.unanswered.delete(endpoint);
    if (routed) await this.routing.reload();
    return onSwarm;
  }

  /**
   * The platform's own check of the Swarm tasks it routes to, every health interval (PROXY_HEALTH_INTERVAL_MS; the
   * runner's timer): a TCP connect to each task's `node:port` within one interval. Caddy 2.6 runs no health checks on
   * these upstreams and cannot resend a POST's body after a failed dial, and Swarm lists a lost node's tasks as running
   * until it marks the node down (7-13 s on the test cluster): without this, every request balanced to such a task in
   * those seconds waits for a dial timeout, and each such POST fails. A task that does not answer leaves the routes at
   * once while another answers (so a lost node's tasks are out within two intervals); one that answers again is routed
   * again, by this check when the route is still of the tasks the last pass read, else by the next pass.
   */
  async probeSwarmTasks(timeoutMs: number): Promise<void> {
    for (const serviceId of this.swarmServices) {
      const tasks = this.swarmTasks.get(serviceId) ?? [];
      // Not skipped while a deployment of the service is under way: from its switch of the routes to the end of its job
      // (the earlier service drained and removed) its new tasks serve, and a node lost then would stay routed.
      const routed = this.routing.upstreamsOf(serviceId);
      if (routed.length === 0) continue;
      const asked = [...new Set([...routed, ...tasks.filter((t) => this.unanswered.has(t))])];
      const answers = await Promise.all(
        asked.map((endpoint) => {
          const split = endpoint.lastIndexOf(':');
          const host = endpoint.slice(0, split).replace(/^\[|\]$/g, '');
          return this.runtime.health.tcp(host, Number(endpoint.slice(split + 1)), AbortSignal.timeout(timeoutMs)).catch(() => false);
        }),
      );
      asked.forEach((endpoint, i) => (answers[i] ? this.unanswered.delete(endpoint) : this.unanswered.add(endpoint)));
      // The route is still the one the last pass made from `tasks` (not a deployment's newer one): tasks back in it.
      const sameTasks = routed.every((u) => tasks.includes(u));
      const wanted = (sameTasks ? tasks : routed).filter((u) => !this.unanswered.has(u));
      if (wanted.length === 0 || (wanted.length === routed.length && wanted.every((u, i) => u === routed[i]))) continue;
      // Compared again with no await before the change: a deployment that switched the routes meanwhile wins.
      const now = this.routing.upstreamsOf(serviceId);
      if (now.length !== routed.length || !now.every((u, i) => u === routed[i])) continue;
      const left = routed.filter((u) => !wanted.includes(u));
      if (left.length) {
        this.log('tasks that do not answer left the routes', { serviceId, endpoints: left });
        this.short.add(serviceId);
      }
      this.routing.setUpstream(serviceId, wanted[0]!, wanted.slice(1));
      await this.routing.reload();
    }
  }

  /**
   * Whether a service on the cluster is routed to fewer answering tasks than its replicas: the tasks Swarm starts in
   * place of a lost node's are then routed by passes every few seconds (the runner's), not at the next 10-second one.
   */
  runningShort(): boolean {
    return this.short.size > 0;
  }

  /**
   * A stateless service with no Swarm service while the cluster runs them was deployed before the cluster formed: its
   * live deployment's image is queued to run on Swarm (no build), which moves it without a redeploy by hand. Asked
   * once per live deployment in this process: a move that failed is not retried every pass (a deployment retries).
   */
  private async moveOnce(service: ServiceRecord, deploying: Set<string>): Promise<void> {
    if (!this.moveToCluster || service.status !== 'active' || service.replicas === 0) return;
    if (deploying.has(service.id) || this.underWay.services().has(service.id)) return;
    const live = (await this.deps.store.deployments.listLive(service.id, 1))[0];
    if (!live || this.moved.has(live.id)) return;
    this.moved.add(live.id);
    const queued = await this.moveToCluster(service.id).catch((error: Error) => {
      this.log('a service could not be moved to the cluster', { service: service.name, error: error.message });
      return null;
    });
    if (queued) this.log('moving a service deployed before the cluster formed to it', { service: service.name, deploymentId: queued.id });
  }

  /**
   * Keeps `replicas` of each stateless service running from its live deployment, outside deployments:
   * a replica that died is started again, a scale up starts the missing ones (one at a time, each
   * checked before it is routed), a scale down (0 included) takes the highest indexes out of the routes,
   * then drains and stops them. Databases and storage instances are the deployments' and ServicePower's.
   */
  private async keepReplicas(onSwarm: Set<string>): Promise<void> {
    const deploying = this.underWay.services();
    // `stopped` with replicas left is a service held still on purpose (a volume's snapshot or restore): not a scale to 0.
    const services = (await this.deps.store.projects.listAllServices()).filter(
      (s) =>
        !deploying.has(s.id) &&
        !onSwarm.has(s.id) &&
        !keepsData(s) &&
        (s.status === 'active' || (s.status === 'stopped' && s.replicas === 0)),
    );
    if (services.length === 0) return;
    const all = await this.containers.ofInstance();
    const replicas = await this.containers.pickReplicas(all);
    for (const service of services) {
      if (this.underWay.stopping() || this.underWay.services().has(service.id)) continue;
      const running = replicas.get(service.id) ?? [];
      const target = service.replicas;
      const extra = running.filter((c) => replicaIndex(c) >= target);
      if (extra.length > 0) {
        const staying = running.filter((c) => replicaIndex(c) < target);
        this.routeTo(service, staying);
        await this.routing.reload();
        for (const container of extra.reverse()) {
          this.log('scaling down: stopping a replica', { name: container.name, replicas: target });
          await this.rollout.retire(service, container);
        }
        if (staying.length === 0 && serves(service))
          await this.runtime.forwarder.set(service.hostPort, null, exposureOf(service)).catch(() => {});
      }
      // A replica the engine is starting again after an exit (its restart policy; a pass runs at each exit) is not
      // missing: starting another in its place would replace the one the engine brings back.
      const restarting = all.filter((c) => c.restarting && c.labels[LABELS.service] === service.id);
      const present = new Set([...running, ...restarting].map(replicaIndex));
      const missing = Array.from({ length: target }, (_, i) => i).filter((i) => !present.has(i));
      if (missing.length === 0) continue;
      const deploymentId = running[0]?.labels[LABELS.deployment];
      const deployment = deploymentId
        ? await this.deps.store.deployments.get(deploymentId)
        : (await this.deps.store.deployments.listLive(service.id, 1))[0];
      if (!deployment) continue;
      const log = new JobLogWriter(async (stream, lines) => {
        if (stream === 'stderr') for (const line of lines) this.log(`replica of ${service.name}: ${line}`);
      });
      let live = running.filter((c) => replicaIndex(c) < target);
      for (const index of missing) {
        if (this.underWay.stopping() || this.underWay.services().has(service.id)) break;
        this.log('starting a replica', { service: service.name, replica: index + 1, replicas: target });
        try {
          const started = await this.rollout.startReplica(service, deployment, index, log);
          live = [...live, started].sort((a, b) => replicaIndex(a) - replicaIndex(b));
          this.routeTo(service, live);
          await this.routing.reload();
        } catch (error) {
          this.log('a replica did not start', { service: service.name, replica: index + 1, error: (error as Error).message });
          break;
        }
      }
    }
  }

  /** Creates the slot network and the gate's rules; until then the proxy dials containers' own addresses. Said once per cause. */
  private async prepareSlots(): Promise<void> {
    if (!this.slots || this.slots.ready) return;
    try {
      await this.slots.prepare();
      if (this.slotsProblem) this.log('traffic slots are ready: the proxy dials them from now on');
      this.slotsProblem = '';
    } catch (error) {
      const message = (error as Error).message;
      if (message !== this.slotsProblem)
        this.log('traffic slots unavailable: the proxy dials containers directly until they are', { error: message });
      this.slotsProblem = message;
    }
  }

  /** Open: the slots of current web containers; those of services being deployed stay as their cutover left them. */
  private async reconcileSlots(
    services: ServiceRecord[],
    containers: ContainerState[],
    currents: Map<string, ContainerState>,
    deploying: Set<string>,
    snapshot: number,
  ): Promise<void> {
    const wanted: OpenSlot[] = [];
    for (const service of services) {
      const ip = currents.get(service.id)?.labels[LABELS.slot];
      if (ip && isWeb(service) && !deploying.has(service.id)) wanted.push({ ip, port: service.internalPort });
    }
    // A slot the routes the proxy has still name stays open: its requests get through until the routes move.
    const keep = new Set([
      ...[...this.routing.servedUpstreams()].map((upstream) => upstream.replace(/:\d+$/, '')),
      ...this.rollout.heldSlots,
      ...containers.filter((c) => deploying.has(c.labels[LABELS.service] ?? '')).map((c) => c.labels[LABELS.slot] ?? ''),
    ]);
    await this.slots!.reconcile(wanted, keep, snapshot);
  }

  private async retireLeftovers(
    services: ServiceRecord[],
    containers: ContainerState[],
    replicas: Map<string, ContainerState[]>,
    deploying: Set<string>,
  ): Promise<void> {
    const byId = new Map(services.map((s) => [s.id, s]));
    const leftovers = containers.filter((c) => {
      const serviceId = c.labels[LABELS.service] ?? '';
      const current = replicas.get(serviceId);
      // A dead replica of the live deployment is keepReplicas' to replace, not a leftover, unless scaled away.
      const live = current && c.labels[LABELS.deployment] === current[0]!.labels[LABELS.deployment];
      const scaledAway = live && !c.running && replicaIndex(c) >= (byId.get(serviceId)?.replicas ?? 1);
      return current && (!live || scaledAway) && !deploying.has(serviceId) && !this.underWay.holds(c.labels[LABELS.deployment] ?? '');
    });
    if (leftovers.length === 0 || !(await this.routing.settled())) return;
    for (const container of leftovers) {
      if (this.underWay.stopping()) return;
      const service = byId.get(container.labels[LABELS.service]!);
      if (!service) continue;
      this.log('stopping a container the routes no longer use', { name: container.name });
      await this.rollout.retire(service, container);
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
      if (!match || match[1] !== this.deps.config.resourcePrefix || this.underWay.holds(match[3]!)) return [];
      return [{ tag, serviceId: match[2]!, deploymentId: match[3]! }];
    });
    if (candidates.length === 0) return;
    // One query for all of them: this runs every 10 s.
    const deployments = new Map(
      (await this.deps.store.deployments.listByIds([...new Set(candidates.map((c) => c.deploymentId))])).map((d) => [d.id, d]),
    );
    for (const { tag, serviceId, deploymentId } of candidates) {
      const deployment = deployments.get(deploymentId);
      if (
        !deployment ||
        deployment.serviceId !== serviceId ||
        deployment.status === 'succeeded' ||
        deployment.status === 'running' ||
        deployment.status === 'queued'
      )
        continue;
      await this.runtime.engine.removeImage(tag);
    }
  }
}

/** The two steps the loop alternates between: recovery until it has succeeded once, then reconcile. */
export interface MaintenanceSteps {
  recovered(): boolean;
  recover(): Promise<void>;
  reconcile(): Promise<void>;
}

/**
 * The 10-second maintenance loop, and the one place that watches the engine: while it is
 * unreachable, passes are skipped and queued deployments wait (claiming them would only fail them),
 * it is asked again at most every ENGINE_RETRY_MS, and the outage is logged once. A failure that
 * lasts is logged once too, not every 10 s.
 */
export class ReconcileLoop {
  private timer: NodeJS.Timeout | null = null;
  private pass: Promise<void> | null = null;
  /** Why the engine did not answer, while it does not. */
  private engineDown: string | null = null;
  private engineCheckedAt = 0;
  /** The last maintenance failure logged. */
  private lastFailure: string | null = null;

  constructor(
    private readonly engine: ContainerEngine,
    private readonly steps: MaintenanceSteps,
    private readonly log: RunnerLog,
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      // A pass may outlast the interval (a drain): never two at once.
      if (!this.pass) void this.runPass();
    }, RECONCILE_MS);
  }

  /** A pass now, for a change the next tick would see too late; after the one under way, never beside it. */
  async passNow(): Promise<void> {
    while (this.pass) await this.pass;
    await this.runPass();
  }

  private runPass(): Promise<void> {
    this.pass = this.maintain().finally(() => {
      this.pass = null;
    });
    return this.pass;
  }

  /** No further passes; resolves once the one under way has ended. */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.pass;
  }

  /** One maintenance pass: recovery until it has succeeded once, then reconcile; skipped while the engine is unreachable. */
  async maintain(): Promise<void> {
    if (!(await this.engineReachable())) return;
    const what = this.steps.recovered() ? 'reconcile failed' : 'recovery failed';
    try {
      if (this.steps.recovered()) await this.steps.reconcile();
      else await this.steps.recover();
      this.lastFailure = null;
    } catch (error) {
      const message = (error as Error).message;
      if (`${what}|${message}` !== this.lastFailure) this.log(what, { error: message });
      this.lastFailure = `${what}|${message}`;
    }
  }

  async engineReachable(): Promise<boolean> {
    if (this.engineDown !== null && Date.now() - this.engineCheckedAt < ENGINE_RETRY_MS) return false;
    this.engineCheckedAt = Date.now();
    try {
      await this.engine.ping(AbortSignal.timeout(ENGINE_PING_TIMEOUT_MS));
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
}
