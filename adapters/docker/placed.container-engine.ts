import path from 'node:path';
import { Transform } from 'node:stream';
import type Docker from 'dockerode';
import {
  LABELS,
  type BuildRequest,
  type ContainerEngine,
  type ContainerState,
  type DaemonRequest,
  type LineSink,
  type NetworkState,
  type RunRequest,
} from '../../src/deployments/container-engine.port.js';
import type { PlacedServer, StatefulPlacements } from '../../src/cluster/stateful-placements.port.js';
import type { PortForwarder } from '../../src/deployments/port-forwarder.port.js';
import { DockerodeContainerEngine } from './dockerode.container-engine.js';

/** One call to another server's engine: a node that stopped answering must not hold a reconcile pass up. */
const REMOTE_CALL_MS = 10_000;
/** An image or a data volume sent between servers: as long as the deployment allows, at most this. */
const TRANSFER_MS = 60 * 60_000;
/** Docker's label on the containers of Swarm's tasks (Swarm's own to run and stop). */
const SWARM_TASK_LABEL = 'com.docker.swarm.task.id';

/** A volume to bring, and the stopped container on another server that mounts it. */
interface VolumeSource {
  volume: { name: string; target: string };
  docker: Docker;
  where: string;
  containerId: string;
  destination: string;
}

interface Remote {
  server: PlacedServer;
  docker: Docker;
  engine: DockerodeContainerEngine;
}

interface Bound {
  placements: StatefulPlacements;
  /** A swarm node's engine client (mutual TLS; ReplicaEngines.dockerOf). */
  dockerOf(nodeId: string): Promise<Docker>;
}

/**
 * The platform's container engine on the cluster (issue 31): a database or storage instance runs on the server that
 * holds its volume, so every call about one of its containers, volumes or image tags goes to that server's engine
 * (its API over mutual TLS); everything else stays on the platform's own engine, as on a single server, where this
 * asks whether the cluster formed (an answer kept in memory) and reads the service once per container started.
 *
 * - Such a container joins its environment's overlay network (services on any server reach it by name) and publishes
 *   its port on its node's address; the platform reaches it through a loopback tunnel of its own
 *   (`127.77.x.y:<its port>`), which is the address callers see, so the database's administration, readiness checks,
 *   backups' connections and the host port all reach it as they reach a local one.
 * - An image the node lacks is sent from the platform's engine (`docker save` into `docker load`); only one the
 *   platform's engine lacks too is pulled there.
 * - A data volume the target server lacks, which a stopped container of the service mounts on another server, is
 *   copied into the new container before it starts (the engines' archive API, streamed through the platform): this is
 *   how a database moves (POST /api/services/{id}/move), a deployment that stops the old server first.
 */
export class PlacedContainerEngine implements ContainerEngine {
  private bound: Bound | null = null;
  /** Containers seen on another server's engine, by id and by name: the node each runs on, and its id. */
  private readonly seen = new Map<string, { nodeId: string; id: string }>();
  private readonly remotes = new Map<string, Remote>();
  private readonly tunnels: LoopbackTunnels;

  constructor(
    private readonly local: DockerodeContainerEngine,
    private readonly localDocker: Docker,
    private readonly prefix: string,
    private readonly instanceId: string,
    /** A TCP forwarder listening on one address (TcpPortForwarder): the platform's end of a tunnel. */
    tunnel: (host: string) => PortForwarder,
  ) {
    this.tunnels = new LoopbackTunnels(tunnel);
  }

  bind(placements: StatefulPlacements, dockerOf: (nodeId: string) => Promise<Docker>): void {
    this.bound = { placements, dockerOf };
  }

  /** The engine client that reaches a container: the node's, for one seen on another server. */
  dockerOfContainer(idOrName: string): Docker {
    const node = this.seen.get(idOrName)?.nodeId;
    return (node && this.remotes.get(node)?.docker) || this.localDocker;
  }

  /** A stateful service's running container on another server, with the node and the client that reach it; null when it runs here. */
  async remoteContainerOf(
    serviceId: string,
    signal?: AbortSignal,
  ): Promise<{ containerId: string; nodeId: string; docker: Docker } | null> {
    const holder = await this.bound?.placements.remoteHolderOf(serviceId);
    if (!holder) return null;
    const remote = await this.remote(holder);
    const running = (await this.remoteList(remote, { key: LABELS.service, value: serviceId }, signal)).find((c) => c.running);
    return running ? { containerId: running.id, nodeId: holder.nodeId, docker: remote.docker } : null;
  }

  /** The running containers of this install's databases on other servers, with the client that reaches each. */
  async remoteContainers(signal?: AbortSignal): Promise<Array<{ serviceId: string; containerId: string; nodeId: string; docker: Docker }>> {
    if (!this.bound) return [];
    const out: Array<{ serviceId: string; containerId: string; nodeId: string; docker: Docker }> = [];
    for (const server of await this.bound.placements.holderServers()) {
      const remote = await this.remote(server).catch(() => null);
      if (!remote) continue;
      const list = await this.remoteList(remote, { key: LABELS.instance, value: this.instanceId }, signal).catch(() => []);
      for (const c of list)
        if (c.running && c.labels[LABELS.service])
          out.push({ serviceId: c.labels[LABELS.service]!, containerId: c.id, nodeId: server.nodeId, docker: remote.docker });
    }
    return out;
  }

  ping(signal?: AbortSignal): Promise<void> {
    return this.local.ping(signal);
  }

  async imageExists(ref: string): Promise<boolean> {
    if (await this.local.imageExists(ref)) return true;
    for (const remote of await this.enginesOfName(ref)) if (await remote.engine.imageExists(ref)) return true;
    return false;
  }

  pullImage(ref: string, onLine: LineSink, signal: AbortSignal): Promise<void> {
    return this.local.pullImage(ref, onLine, signal);
  }

  buildImage(request: BuildRequest): Promise<void> {
    return this.local.buildImage(request);
  }

  ensureNetwork(name: string, labels: Record<string, string>): Promise<void> {
    return this.local.ensureNetwork(name, labels);
  }

  ensureSlotNetwork(name: string, labels: Record<string, string>, candidates: string[]): Promise<string> {
    return this.local.ensureSlotNetwork(name, labels, candidates);
  }

  listNetworks(label: { key: string; value?: string }): Promise<NetworkState[]> {
    return this.local.listNetworks(label);
  }

  async runContainer(request: RunRequest): Promise<ContainerState> {
    const serviceId = request.labels[LABELS.service];
    const holder = serviceId && this.bound ? await this.bound.placements.remoteHolderOf(serviceId) : null;
    // Which volumes to bring is asked before the container exists: creating it makes its volumes, empty.
    const missing = await this.volumesElsewhere(request, holder);
    const bringVolumes = (containerId: string) => this.bringVolumes(request, holder, missing, containerId);
    const environmentId = request.labels[LABELS.environment];
    if (!holder) {
      const state = await this.local.runContainer(request, { beforeStart: bringVolumes });
      // On the cluster a database here joins its environment's overlay too: services' tasks on any server reach it by name.
      if (serviceId && environmentId && this.bound && (await this.bound.placements.isStateful(serviceId))) {
        const overlay = await this.bound.placements.overlayOf(environmentId, request.signal);
        if (overlay) await this.local.connectNetwork(state.id, overlay, request.aliases);
      }
      return state;
    }
    const remote = await this.remote(holder);
    if (!environmentId || !request.port) throw new Error(`${request.name} names no environment or port: it cannot run on ${holder.name}`);
    await this.ensureImageOn(remote, request.image, request.log, request.signal);
    const network = await this.bound!.placements.overlayOf(environmentId, request.signal);
    if (!network) throw new Error(`The cluster has not formed: ${request.name} cannot run on ${holder.name}`);
    request.log?.(
      `Running on ${holder.name} (${holder.address}): on the overlay network ${network}, its port ${request.port} published on ${holder.address}`,
    );
    // A slot is the proxy's address on this host's slot network: a database has none, and no other server has that network.
    const { slot: _slot, ...rest } = request;
    const state = await remote.engine.runContainer(
      { ...rest, network },
      { published: { port: request.port, hostIp: holder.address }, beforeStart: bringVolumes },
    );
    this.remember(remote, state.id, state.name);
    return (await this.remoteInspect(remote, state.id)) ?? state;
  }

  async keepRunning(idOrName: string): Promise<void> {
    const remote = await this.remoteOfRef(idOrName);
    return remote ? remote.engine.keepRunning(idOrName) : this.local.keepRunning(idOrName);
  }

  async inspect(idOrName: string): Promise<ContainerState | null> {
    const remote = await this.remoteOfRef(idOrName);
    if (!remote) return this.local.inspect(idOrName);
    // A name of the service made here before it moved (a deployment's container) is still the platform's engine's.
    return (await this.remoteInspect(remote, idOrName)) ?? this.local.inspect(idOrName);
  }

  async tail(idOrName: string, lines: number): Promise<string[]> {
    const remote = await this.remoteOfRef(idOrName);
    return remote ? remote.engine.tail(idOrName, lines) : this.local.tail(idOrName, lines);
  }

  async stopAndRemove(idOrName: string, graceSeconds: number): Promise<void> {
    const remote = await this.remoteOfRef(idOrName);
    if (!remote) return this.local.stopAndRemove(idOrName, graceSeconds);
    await remote.engine.stopAndRemove(idOrName, graceSeconds);
    await this.forget(idOrName);
  }

  async countConnections(idOrName: string, port: number): Promise<number | null> {
    // The count reads the container's process through this host's /proc: another server's is not there.
    return (await this.remoteOfRef(idOrName)) ? null : this.local.countConnections(idOrName, port);
  }

  runDaemon(request: DaemonRequest): Promise<ContainerState> {
    return this.local.runDaemon(request);
  }

  async startContainer(idOrName: string): Promise<void> {
    const remote = await this.remoteOfRef(idOrName);
    return remote ? remote.engine.startContainer(idOrName) : this.local.startContainer(idOrName);
  }

  async stopContainer(idOrName: string, graceSeconds: number): Promise<void> {
    const remote = await this.remoteOfRef(idOrName);
    if (!remote) return this.local.stopContainer(idOrName, graceSeconds);
    await remote.engine.stopContainer(idOrName, graceSeconds);
    await this.tunnels.close(this.idOf(idOrName));
  }

  /**
   * The platform's engine's containers, and those of databases on other servers (never Swarm's task containers,
   * which Swarm runs): by service, the servers a stateful service's container may be on; install-wide, the servers
   * holding a database's volume. A server that does not answer is left out, not waited for.
   */
  async listContainers(label: { key: string; value?: string }): Promise<ContainerState[]> {
    const here = await this.local.listContainers(label);
    if (!this.bound) return here;
    const servers =
      label.key === LABELS.service && label.value
        ? await this.bound.placements.serversOf(label.value)
        : label.key === LABELS.instance || label.key === LABELS.managed
          ? await this.bound.placements.holderServers()
          : [];
    const lists = await Promise.all(
      servers.map(async (server) => {
        const remote = await this.remote(server).catch(() => null);
        return remote ? this.remoteList(remote, label).catch(() => []) : [];
      }),
    );
    return [...here, ...lists.flat()];
  }

  async tagImage(source: string, target: string): Promise<void> {
    const [remote] = await this.enginesOfName(target, true);
    // A rollback's image may be on another server only (where the database ran before it moved here).
    if (this.bound) await this.ensureImageOn(remote ?? null, source, undefined, AbortSignal.timeout(TRANSFER_MS));
    await (remote ? remote.engine : this.local).tagImage(source, target);
  }

  async removeImage(ref: string): Promise<void> {
    await this.local.removeImage(ref);
    for (const remote of await this.enginesOfName(ref)) await remote.engine.removeImage(ref).catch(() => undefined);
  }

  async listImageTags(prefix: string): Promise<string[]> {
    const tags = new Set(await this.local.listImageTags(prefix));
    for (const remote of await this.enginesOfName(prefix))
      for (const tag of await remote.engine.listImageTags(prefix).catch(() => [])) tags.add(tag);
    return [...tags];
  }

  async removeVolume(name: string): Promise<void> {
    await this.local.removeVolume(name);
    for (const remote of await this.enginesOfName(name)) await remote.engine.removeVolume(name);
  }

  async listVolumes(prefix: string): Promise<string[]> {
    const names = new Set(await this.local.listVolumes(prefix));
    for (const remote of await this.enginesOfName(prefix))
      for (const name of await remote.engine.listVolumes(prefix).catch(() => [])) names.add(name);
    return [...names];
  }

  /** The engine of the server holding a volume of a service placed there (null: the platform's own), with a way to bring it an image. */
  async volumeHost(
    volume: string,
  ): Promise<{ docker: Docker; ensureImage(ref: string, signal: AbortSignal, log: (line: string) => void): Promise<void> } | null> {
    const [remote] = await this.enginesOfName(volume, true);
    if (!remote) return null;
    return { docker: remote.docker, ensureImage: (ref, signal, log) => this.ensureImageOn(remote, ref, log, signal) };
  }

  /** The data volumes of a stateful service on one server: what its move leaves behind once it serves elsewhere. */
  async removeVolumesOn(server: PlacedServer | null, serviceId: string): Promise<string[]> {
    const engine = server ? (await this.remote(server)).engine : this.local;
    const names = (await engine.listVolumes(`${this.prefix}-${serviceId}-`)).filter((n) => n.startsWith(`${this.prefix}-${serviceId}-`));
    for (const name of names) await engine.removeVolume(name);
    return names;
  }

  removeNetwork(name: string): Promise<void> {
    return this.local.removeNetwork(name);
  }

  async connectNetwork(idOrName: string, network: string, aliases: string[]): Promise<void> {
    const remote = await this.remoteOfRef(idOrName);
    return (remote ? remote.engine : this.local).connectNetwork(idOrName, network, aliases);
  }

  /**
   * The databases that run here join their environments' overlay networks once the cluster formed (those deployed
   * before it), keeping the names they have on their bridge network; resolves with how many joined.
   */
  async joinOverlays(signal?: AbortSignal): Promise<number> {
    if (!this.bound) return 0;
    const list: Docker.ContainerInfo[] = await this.localDocker.listContainers({
      filters: { label: [`${LABELS.instance}=${this.instanceId}`, LABELS.service], status: ['running'] },
      abortSignal: signal ?? AbortSignal.timeout(REMOTE_CALL_MS),
    } as Docker.ContainerListOptions);
    let joined = 0;
    for (const c of list) {
      const serviceId = c.Labels[LABELS.service];
      const environmentId = c.Labels[LABELS.environment];
      if (!serviceId || !environmentId || !(await this.bound.placements.isStateful(serviceId))) continue;
      const overlay = await this.bound.placements.overlayOf(environmentId, signal);
      if (!overlay) return joined;
      if (c.NetworkSettings?.Networks?.[overlay]) continue;
      const info = (await this.localDocker
        .getContainer(c.Id)
        .inspect({ abortSignal: AbortSignal.timeout(REMOTE_CALL_MS) } as Docker.ContainerInspectOptions)) as Docker.ContainerInspectInfo;
      // Its names on the bridge, without the short ids Docker adds itself.
      const aliases = [
        ...new Set(
          Object.values(info.NetworkSettings.Networks ?? {})
            .flatMap((n) => n.Aliases ?? [])
            .filter((a) => !c.Id.startsWith(a)),
        ),
      ];
      await this.local.connectNetwork(c.Id, overlay, aliases);
      joined++;
    }
    return joined;
  }

  async closeTunnels(): Promise<void> {
    await this.tunnels.closeAll();
  }

  /**
   * Each named volume the new container mounts that its server lacks, where a stopped container of the same
   * service mounts it on another server (the previous server, stopped first by the deployment so nothing writes
   * meanwhile). None on a single server, or for a new service.
   */
  private async volumesElsewhere(request: RunRequest, holder: PlacedServer | null): Promise<VolumeSource[]> {
    const serviceId = request.labels[LABELS.service];
    if (!serviceId || !this.bound || request.volumes.length === 0) return [];
    const others = (await this.bound.placements.remoteServers()).filter((s) => s.id !== holder?.id);
    if (!holder && others.length === 0) return [];
    const target = holder ? (await this.remote(holder)).docker : this.localDocker;
    const sources: Array<{ docker: Docker; where: string }> = [
      ...(holder ? [{ docker: this.localDocker, where: 'the platform\u2019s server' }] : []),
      ...(await Promise.all(others.map(async (s) => ({ docker: (await this.remote(s)).docker, where: s.name })))),
    ];
    const found: VolumeSource[] = [];
    for (const volume of request.volumes) {
      if (await volumeExists(target, volume.name)) continue;
      const source = await findStoppedMount(sources, serviceId, volume.name);
      if (source) found.push({ ...source, volume });
    }
    return found;
  }

  /** Before the new container starts: the volumes found elsewhere, copied into it through the engines' archive API. */
  private async bringVolumes(
    request: RunRequest,
    holder: PlacedServer | null,
    missing: VolumeSource[],
    containerId: string,
  ): Promise<void> {
    if (missing.length === 0) return;
    const target = holder ? (await this.remote(holder)).docker : this.localDocker;
    for (const source of missing) {
      const volume = source.volume;
      request.log?.(`Copying the volume ${volume.name} from ${source.where} (its server is stopped: nothing writes to it)`);
      const started = Date.now();
      const signal = AbortSignal.any([request.signal, AbortSignal.timeout(TRANSFER_MS)]);
      const archive = (await source.docker
        .getContainer(source.containerId)
        .getArchive({ path: source.destination, abortSignal: signal } as never)) as unknown as NodeJS.ReadableStream;
      const counted = counting(archive);
      // The archive's top entry is the mount point's own name: extracted into its parent, it lands in the new volume.
      await target
        .getContainer(containerId)
        .putArchive(counted as never, { path: path.posix.dirname(volume.target), abortSignal: signal } as never);
      request.log?.(`Copied ${(counted.bytes / 1e6).toFixed(1)} MB of ${volume.name} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    }
  }

  /**
   * An image onto a server's engine: sent from an engine that has it (the platform's first, then the other servers
   * a service's containers ran on: a rollback's image may exist only where it last ran), else pulled there.
   */
  private async ensureImageOn(
    target: Remote | null,
    ref: string,
    log: ((line: string) => void) | undefined,
    signal: AbortSignal,
  ): Promise<void> {
    const to = target ? { docker: target.docker, engine: target.engine, name: target.server.name } : this.localEnd();
    if (await to.engine.imageExists(ref)) return;
    const candidates = [...(target ? [this.localEnd()] : []), ...(await this.enginesOfName(ref)).filter((r) => r !== target).map(endOf)];
    let from: Awaited<ReturnType<typeof this.localEnd>> | null = null;
    for (const candidate of candidates) if (await candidate.engine.imageExists(ref).catch(() => false)) from ??= candidate;
    if (!from) {
      log?.(`Pulling ${ref} on ${to.name}`);
      await to.engine.pullImage(ref, (line) => log?.(line), signal);
      return;
    }
    const started = Date.now();
    const call = AbortSignal.any([signal, AbortSignal.timeout(TRANSFER_MS)]);
    // The export takes no signal of its own: an abort ends its stream.
    const saved = (await from.docker.getImage(ref).get()) as unknown as NodeJS.ReadableStream & { destroy(error?: Error): void };
    const onAbort = () => saved.destroy(new Error(`sending ${ref} to ${to.name} was aborted`));
    call.addEventListener('abort', onAbort, { once: true });
    const counted = counting(saved);
    try {
      const answer = (await to.docker.loadImage(counted as never, { abortSignal: call } as never)) as unknown as NodeJS.ReadableStream;
      // The load reports on a stream of its own; it is done when that ends.
      await new Promise<void>((resolve, reject) => {
        answer.on('data', () => undefined);
        answer.on('end', resolve);
        answer.on('error', reject);
      });
    } finally {
      call.removeEventListener('abort', onAbort);
    }
    if (!(await to.engine.imageExists(ref))) throw new Error(`${ref} did not load on ${to.name}`);
    log?.(
      `Sent the image ${ref} from ${from.name} to ${to.name} (${(counted.bytes / 1e6).toFixed(1)} MB in ${((Date.now() - started) / 1000).toFixed(1)} s)`,
    );
  }

  private localEnd(): { docker: Docker; engine: DockerodeContainerEngine; name: string } {
    return { docker: this.localDocker, engine: this.local, name: 'the platform\u2019s server' };
  }

  private async remote(server: PlacedServer): Promise<Remote> {
    const known = this.remotes.get(server.nodeId);
    if (known && known.server.address === server.address) return known;
    if (!this.bound) throw new Error('This platform reaches no other server\u2019s engine');
    const docker = await this.bound.dockerOf(server.nodeId);
    const remote = { server, docker, engine: new DockerodeContainerEngine(docker) };
    this.remotes.set(server.nodeId, remote);
    return remote;
  }

  /** The server a container reference is on: one seen there, or a name of a service held by another server. */
  private async remoteOfRef(idOrName: string): Promise<Remote | null> {
    const node = this.seen.get(idOrName)?.nodeId;
    if (node) {
      const known = this.remotes.get(node);
      if (known) return known;
    }
    const [remote] = await this.enginesOfName(idOrName, true);
    return remote ?? null;
  }

  /**
   * The other servers' engines a name of the platform's (`<prefix>-<serviceId>-...`: containers, image tags, volumes)
   * may be on: the server holding the service's volume; with `holderOnly` false, every server a stateful
   * service's container may be on (a move leaves its earlier volume and image behind).
   */
  private async enginesOfName(name: string, holderOnly = false): Promise<Remote[]> {
    const serviceId = this.serviceIdOf(name);
    if (!serviceId || !this.bound) return [];
    const servers = holderOnly
      ? [await this.bound.placements.remoteHolderOf(serviceId)].filter((s): s is PlacedServer => s !== null)
      : await this.bound.placements.serversOf(serviceId);
    return Promise.all(servers.map((s) => this.remote(s)));
  }

  private serviceIdOf(name: string): string | null {
    if (!name.startsWith(`${this.prefix}-`)) return null;
    const id = name.slice(this.prefix.length + 1).split(/[-:@]/)[0] ?? '';
    return /^[a-z0-9]{8,40}$/.test(id) ? id : null;
  }

  private remember(remote: Remote, id: string, name: string): void {
    const entry = { nodeId: remote.server.nodeId, id };
    this.seen.set(id, entry);
    this.seen.set(name, entry);
  }

  private async forget(idOrName: string): Promise<void> {
    const id = this.idOf(idOrName);
    await this.tunnels.close(id);
    for (const [key, entry] of [...this.seen]) if (entry.id === id) this.seen.delete(key);
  }

  /** A container's id, from a name seen with it. */
  private idOf(idOrName: string): string {
    return this.seen.get(idOrName)?.id ?? idOrName;
  }

  private async remoteInspect(remote: Remote, idOrName: string): Promise<ContainerState | null> {
    let info: Docker.ContainerInspectInfo;
    try {
      info = (await remote.docker
        .getContainer(idOrName)
        .inspect({ abortSignal: AbortSignal.timeout(REMOTE_CALL_MS) } as Docker.ContainerInspectOptions)) as Docker.ContainerInspectInfo;
    } catch (error) {
      if ((error as { statusCode?: number }).statusCode === 404) return null;
      throw error;
    }
    const running = info.State.Running && !info.State.Restarting;
    const ports = Object.entries(info.NetworkSettings?.Ports ?? {}).flatMap(([key, bindings]) =>
      (bindings ?? []).map((b) => ({ port: Number.parseInt(key, 10), hostPort: Number(b.HostPort) })),
    );
    const state = await this.stateOf(remote, {
      id: info.Id,
      name: info.Name.replace(/^\//, ''),
      running,
      exitCode: info.State.Running ? null : info.State.ExitCode,
      labels: info.Config.Labels ?? {},
      image: info.Config.Image,
      published: ports.find((p) => p.hostPort > 0) ?? null,
    });
    return state;
  }

  private async remoteList(remote: Remote, label: { key: string; value?: string }, signal?: AbortSignal): Promise<ContainerState[]> {
    const filter = label.value === undefined ? label.key : `${label.key}=${label.value}`;
    const timeout = AbortSignal.timeout(REMOTE_CALL_MS);
    const list: Docker.ContainerInfo[] = await remote.docker.listContainers({
      all: true,
      filters: { label: [filter] },
      abortSignal: signal ? AbortSignal.any([signal, timeout]) : timeout,
    } as Docker.ContainerListOptions);
    const states: ContainerState[] = [];
    for (const c of list) {
      if (c.Labels?.[SWARM_TASK_LABEL]) continue;
      const port = c.Ports.find((p) => p.PublicPort);
      states.push(
        await this.stateOf(remote, {
          id: c.Id,
          name: (c.Names[0] ?? '').replace(/^\//, ''),
          running: c.State === 'running',
          exitCode: null,
          labels: c.Labels ?? {},
          image: c.Image,
          published: port ? { port: port.PrivatePort, hostPort: port.PublicPort } : null,
        }),
      );
    }
    return states;
  }

  /** A container on another server as callers see it: its address is the platform's loopback tunnel to its published port. */
  private async stateOf(
    remote: Remote,
    c: Omit<ContainerState, 'ip'> & { published: { port: number; hostPort: number } | null },
  ): Promise<ContainerState> {
    this.remember(remote, c.id, c.name);
    const { published, ...rest } = c;
    const ip =
      c.running && published
        ? await this.tunnels.open(c.id, published.port, { host: remote.server.address, port: published.hostPort })
        : null;
    if (!c.running) await this.tunnels.close(c.id);
    return { ...rest, ip };
  }
}

/**
 * The platform's ends of its tunnels to containers on other servers: one loopback address per container
 * (127.77.0.0/16, all of it the host's own), listening on the container's own port and forwarding to the port
 * published on its node, so whoever dials `ip:port` as for a local container reaches it.
 */
class LoopbackTunnels {
  private readonly byContainer = new Map<
    string,
    { host: string; port: number; target: { host: string; port: number }; forwarder: PortForwarder }
  >();
  private next = 1;

  constructor(private readonly forwarderOn: (host: string) => PortForwarder) {}

  async open(containerId: string, port: number, target: { host: string; port: number }): Promise<string> {
    const known = this.byContainer.get(containerId);
    if (known && known.port === port && known.target.host === target.host && known.target.port === target.port) return known.host;
    if (known) await this.close(containerId);
    const n = this.next++;
    const host = `127.77.${(n >> 8) & 255}.${n & 255 || 1}`;
    const forwarder = this.forwarderOn(host);
    await forwarder.set(port, target);
    this.byContainer.set(containerId, { host, port, target, forwarder });
    return host;
  }

  async close(containerId: string): Promise<void> {
    const known = this.byContainer.get(containerId);
    if (!known) return;
    this.byContainer.delete(containerId);
    await known.forwarder.closeAll();
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.byContainer.keys()].map((id) => this.close(id)));
  }
}

/** A stream passed through, with how many bytes went by (for the log's transfer lines). */
function counting(stream: NodeJS.ReadableStream): Transform & { bytes: number } {
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      counter.bytes += chunk.length;
      done(null, chunk);
    },
  }) as Transform & { bytes: number };
  counter.bytes = 0;
  // A source that fails fails the copy (pipe alone would leave the reader waiting).
  stream.on('error', (error: Error) => counter.destroy(error));
  stream.pipe(counter);
  return counter;
}

function endOf(remote: Remote): { docker: Docker; engine: DockerodeContainerEngine; name: string } {
  return { docker: remote.docker, engine: remote.engine, name: remote.server.name };
}

async function volumeExists(docker: Docker, name: string): Promise<boolean> {
  try {
    await docker.getVolume(name).inspect({ abortSignal: AbortSignal.timeout(REMOTE_CALL_MS) } as never);
    return true;
  } catch (error) {
    if ((error as { statusCode?: number }).statusCode === 404) return false;
    throw error;
  }
}

/** A stopped container of the service mounting the volume, on the first server that has one. */
async function findStoppedMount(
  sources: Array<{ docker: Docker; where: string }>,
  serviceId: string,
  volume: string,
): Promise<{ docker: Docker; where: string; containerId: string; destination: string } | null> {
  for (const source of sources) {
    const list: Docker.ContainerInfo[] = await source.docker
      .listContainers({
        all: true,
        filters: { label: [`${LABELS.service}=${serviceId}`] },
        abortSignal: AbortSignal.timeout(REMOTE_CALL_MS),
      } as Docker.ContainerListOptions)
      .catch(() => []);
    for (const c of list) {
      if (c.State === 'running') continue;
      const mount = c.Mounts.find((m) => m.Type === 'volume' && m.Name === volume);
      if (mount) return { docker: source.docker, where: source.where, containerId: c.Id, destination: mount.Destination };
    }
  }
  return null;
}
