import { createHash, randomBytes } from 'node:crypto';
import type { Actor } from '../domain/access.js';
import { ConflictError, NotFoundError, NotSupportedError } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import type { Table } from '../persistence/store.js';
import type { ServiceDeps } from '../platform/deps.js';
import { noteCheckedRead, tracingReads } from '../platform/read-trace.js';
import { fingerprintOf, type CertificateAuthority } from '../tls/certificate-authority.js';
import type { ClusterFormation } from './cluster-formation.js';
import type { ClusterRuntime, EngineInfo, RuntimeTask, SwarmNode } from './cluster-runtime.port.js';
import type { ServerCreatedView, ServerTaskView, ServerView } from './cluster-views.js';
import type { CreateServerInput, UpdateServerInput } from './cluster.inputs.js';
import type { NodeEngines } from './node-engines.js';
import { assertInstallAdmin, assertInstallWriter } from './server-access.js';
import { nodeLabels, stateOf } from './server-state.js';
import { holdersOf, isStateful } from './service-holders.js';
import type { ServerRecord } from './server.records.js';

const SWARM_PORT = 2377;
const MB = 1024 * 1024;
/** A call to the manager while a page is shown: past this, servers show what the table last knew. */
const RUNTIME_TIMEOUT_MS = 10_000;

export interface ServerServiceOptions {
  /** The platform's URL as a joining server reaches it (CLUSTER_JOIN_URL, else http://<advertise address>:<port>). */
  joinUrl: () => string;
  /** The join script's text, as GET /api/servers/join.sh serves it: the command checks its digest. */
  joinScript: () => Promise<string>;
  /**
   * A reconcile pass now (the deploy runner's), so that the routes leave a draining server's tasks before Swarm
   * stops them; without it, the drain waits for nothing but the in-flight grace.
   */
  reroute?: () => Promise<void>;
}

/** What requests already sent to a drained server's tasks get to finish in, once the routes left them (as a redeploy's earlier tasks get). */
const DRAIN_GRACE_MS = 2_000;
/** How long one reading of the engine's nodes and tasks answers the servers' reads (see ServerService.snapshot). */
const SNAPSHOT_REUSE_MS = 1_000;
/** What the snapshot shows besides the engine's own state: written through the platform, it is read again. */
const SNAPSHOT_TABLES: readonly Table[] = ['Server', 'ServicePlacement', 'Deployment'];

/** What the manager said, read once per request; null parts could not be read. */
interface RuntimeSnapshot {
  info: EngineInfo | null;
  nodes: SwarmNode[] | null;
  tasks: RuntimeTask[] | null;
}

/**
 * The servers of the install (issue 31): the host running the platform first, then each server
 * added with a one-line join command. Reading them is for the install's admins (all-project keys,
 * owners and admins, admin tokens); project-scoped keys and members are refused.
 */
export class ServerService {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly runtime: ClusterRuntime | null,
    private readonly formation: ClusterFormation | null,
    private readonly engines: NodeEngines | null,
    private readonly ca: CertificateAuthority,
    private readonly options: ServerServiceOptions,
    private readonly log: (message: string, extra?: Record<string, unknown>) => void = () => {},
  ) {}

  /** The host's own row, made at the first start: the install's first server, a manager. */
  async ensureLocal(): Promise<ServerRecord> {
    const known = await this.deps.store.servers.local();
    if (known) return known;
    const info = this.runtime ? await this.runtime.info(AbortSignal.timeout(RUNTIME_TIMEOUT_MS)).catch(() => null) : null;
    const now = this.deps.clock.now();
    const record: ServerRecord = {
      id: newId(),
      name: localName(info?.hostname),
      role: 'manager',
      local: true,
      address: this.deps.config.cluster.advertiseAddress,
      hostname: info?.hostname ?? null,
      swarmNodeId: info?.swarm === 'active' ? info.nodeId : null,
      labels: {},
      availability: 'active',
      state: info ? 'ready' : 'unknown',
      stateChangedAt: now,
      engineVersion: info?.version ?? null,
      joinTokenHash: null,
      joinExpiresAt: null,
      joinUsedAt: null,
      joinedAt: now,
      createdAt: now,
      updatedAt: now,
    };
    try {
      const inserted = await this.deps.store.servers.insert(record);
      await this.placeOnLocal(inserted);
      return inserted;
    } catch (error) {
      // Another process made it first.
      const again = await this.deps.store.servers.local();
      if (again) return again;
      throw error;
    }
  }

  /**
   * Databases and storage instances made before the host's row existed ran on it: they are recorded as
   * held there (what the migration of 2026-11-29 does for installs that had the row).
   */
  private async placeOnLocal(local: ServerRecord): Promise<void> {
    const placed = new Set((await this.deps.store.servers.placementsOf(null)).map((p) => p.serviceId));
    const now = this.deps.clock.now();
    for (const service of await this.deps.store.projects.listAllServices())
      if (isStateful(service) && !placed.has(service.id)) await this.deps.store.servers.place(service.id, local.id, now);
  }

  async list(actor: Actor): Promise<ServerView[]> {
    assertInstallAdmin(actor, 'read servers');
    await this.ensureLocal();
    const servers = await this.deps.store.servers.list();
    return this.present(servers, await this.snapshot());
  }

  /**
   * What each ready, active server could still take (its totals less what its tasks reserve): a
   * service asking for more than the largest is refused at once (service-scale-rules.ts). Empty when
   * no engine answers: nothing is refused then.
   */
  async capacity(): Promise<ServerCapacity[]> {
    await this.ensureLocal();
    const views = await this.present(await this.deps.store.servers.list(), await this.snapshot());
    return views.flatMap((v) =>
      v.state === 'ready' && v.availability === 'active' && v.resources
        ? [
            {
              name: v.name,
              freeCpus: Math.max(0, v.resources.cpus - v.resources.reservedCpus),
              freeMemoryMb: Math.max(0, v.resources.memoryMb - v.resources.reservedMemoryMb),
            },
          ]
        : [],
    );
  }

  async get(actor: Actor, id: string): Promise<ServerView> {
    assertInstallAdmin(actor, 'read servers');
    await this.ensureLocal();
    const server = await this.serverOf(id);
    return (await this.present([server], await this.snapshot()))[0]!;
  }

  /**
   * Adds a server: its row, and a join command with a single-use token valid for JOIN_TOKEN_TTL (shown
   * once). Nothing changes at runtime until the command runs on the new machine: the cluster forms
   * when the second server joins.
   */
  async add(actor: Actor, input: CreateServerInput): Promise<ServerCreatedView> {
    assertInstallWriter(actor, 'add servers');
    if (!this.runtime || !this.formation) throw new NotSupportedError('This platform runs no container engine: it cannot form a cluster');
    await this.ensureLocal();
    if ((await this.deps.store.servers.list()).some((s) => s.name.toLowerCase() === input.name.toLowerCase()))
      throw new ConflictError(`A server named ${JSON.stringify(input.name)} exists`, { field: 'name' });
    const token = `slwj_${randomBytes(32).toString('base64url')}`;
    const now = this.deps.clock.now();
    const expiresAt = new Date(now.getTime() + this.deps.config.cluster.joinTokenTtlMs);
    const record: ServerRecord = {
      id: newId(),
      name: input.name,
      role: 'worker',
      local: false,
      address: null,
      hostname: null,
      swarmNodeId: null,
      labels: input.labels ?? {},
      availability: 'active',
      state: 'unknown',
      stateChangedAt: now,
      engineVersion: null,
      joinTokenHash: tokenHash(token),
      joinExpiresAt: expiresAt,
      joinUsedAt: null,
      joinedAt: null,
      createdAt: now,
      updatedAt: now,
    };
    // The CA the node checks, by the fingerprint the command carries (made now if this is its first use).
    const authority = await this.ca.authority();
    await this.deps.store.servers.insert(record);
    const url = this.options.joinUrl();
    const managerAddress = `${this.deps.config.cluster.advertiseAddress}:${SWARM_PORT}`;
    const scriptDigest = createHash('sha256')
      .update(await this.options.joinScript())
      .digest('hex');
    const command = joinCommand({ url, token, scriptDigest, caFingerprint: fingerprintOf(authority.certPem), managerAddress });
    this.log('server added; its join command was shown once', {
      serverId: record.id,
      name: record.name,
      expiresAt: expiresAt.toISOString(),
    });
    const [view] = await this.present([record], await this.snapshot());
    return { server: view!, join: { command, token, managerAddress, expiresAt: expiresAt.toISOString() } };
  }

  /** Availability (Swarm moves tasks off a drained node) and labels; the row and the node change together. */
  async update(actor: Actor, input: UpdateServerInput): Promise<ServerView> {
    assertInstallWriter(actor, 'change servers');
    await this.ensureLocal();
    const server = await this.serverOf(input.id);
    const availability = input.availability ?? server.availability;
    const labels = input.labels ?? server.labels;
    if (availability !== server.availability && server.local && !server.swarmNodeId && availability !== 'active')
      throw new ConflictError(
        `${server.name} is the only server: there is nowhere to move its services to. Add a server first (POST /api/servers)`,
        { field: 'availability' },
      );
    if (server.swarmNodeId && this.runtime && availability === 'drain' && server.availability !== 'drain') {
      await this.drain(server, this.runtime, server.swarmNodeId, labels);
    } else if (server.swarmNodeId && this.runtime) {
      await this.runtime.updateNode(server.swarmNodeId, { availability, labels: nodeLabels(server.id, labels) });
    }
    // A server that has not joined yet gets them when it does.
    await this.deps.store.servers.update(server.id, { availability, labels, updatedAt: this.deps.clock.now() });
    return this.get(actor, server.id);
  }

  /**
   * A drain with no failed request (docs/cluster.md, "Draining a server"). Swarm's own drain stops a node's tasks
   * at once and starts their replacements elsewhere, while the proxy's routes may still name the stopping tasks
   * (Caddy 2.6 cannot resend a POST's body after a failed dial). So: (1) the node is paused (Swarm schedules
   * nothing new there, its tasks serve on) and the server's row says `drain`; (2) a reconcile pass routes every
   * Swarm service to its tasks on the other servers only (ClusterSwarmPath.current leaves out a draining server's
   * tasks); (3) requests already sent to them get DRAIN_GRACE_MS to finish; (4) the node is drained: Swarm stops
   * its tasks, none routed any more, and starts their replacements on the others, which the reconcile pass routes
   * once Swarm reports them running (after their health check passed).
   */
  private async drain(server: ServerRecord, runtime: ClusterRuntime, nodeId: string, labels: Record<string, string>): Promise<void> {
    const swarmLabels = nodeLabels(server.id, labels);
    await runtime.updateNode(nodeId, { availability: 'pause', labels: swarmLabels });
    await this.deps.store.servers.update(server.id, { availability: 'drain', labels, updatedAt: this.deps.clock.now() });
    const serving = (await runtime.tasks(AbortSignal.timeout(RUNTIME_TIMEOUT_MS)).catch(() => null))?.filter(
      (task) => task.nodeId === nodeId && task.state === 'running',
    );
    // Nothing runs there: nothing to take out of the routes. (Any task counts: a task's own labels may not say
    // which service it is; when the manager did not answer, the routes are updated all the same.)
    if (serving === undefined || serving.length > 0) {
      if (this.options.reroute)
        await this.options
          .reroute()
          .catch((error: Error) =>
            this.log('the routes could not be updated before a drain; draining anyway', { name: server.name, error: error.message }),
          );
      await new Promise((resolve) => setTimeout(resolve, Math.min(DRAIN_GRACE_MS, this.deps.config.routing.drainTimeoutMs)));
    }
    await runtime.updateNode(nodeId, { availability: 'drain', labels: swarmLabels });
    this.log('server drained: its tasks left the routes before Swarm moved them', { serverId: server.id, name: server.name });
  }

  /**
   * Removes a drained server from the cluster: refused (409) while it is the last manager, while it
   * is not drained or still runs tasks, and while it holds a database's volume (naming them). A
   * reachable node is asked to leave the swarm through its own engine first.
   */
  async remove(actor: Actor, id: string): Promise<void> {
    assertInstallWriter(actor, 'remove servers');
    await this.ensureLocal();
    const server = await this.serverOf(id);
    const servers = await this.deps.store.servers.list();
    if (server.role === 'manager' && servers.filter((s) => s.role === 'manager').length <= 1)
      throw new ConflictError(`${server.name} is the last manager: removing it would end the cluster and the platform's own server`, {
        reason: 'last_manager',
      });
    if (server.local) throw new ConflictError(`${server.name} runs the platform: it cannot be removed`, { reason: 'local' });
    const pinned = await this.deps.store.servers.placementsOn(server.id);
    if (pinned.length > 0) {
      const all = new Map((await this.deps.store.projects.listAllServices()).map((s) => [s.id, s]));
      const databases = pinned.flatMap((p) => {
        const service = all.get(p.serviceId);
        return service ? [{ id: service.id, name: service.name }] : [];
      });
      if (databases.length > 0)
        throw new ConflictError(
          `${server.name} holds the data of ${databases.map((d) => d.name).join(', ')}: move ${databases.length === 1 ? 'it' : 'them'} to another server first (POST /api/services/{id}/move)`,
          { reason: 'holds_volumes', databases },
        );
    }
    const nodeId = server.swarmNodeId ?? (await this.nodeAt(server))?.id ?? null;
    if (nodeId && this.runtime) {
      if (server.availability !== 'drain')
        throw new ConflictError(
          `Drain ${server.name} first (PATCH /api/servers/${server.id} {"availability":"drain"}): its tasks move to the other servers`,
          {
            reason: 'not_drained',
          },
        );
      const running = (await this.runtime.tasks()).filter((t) => t.nodeId === nodeId && t.serviceId && t.state === 'running');
      if (running.length > 0)
        throw new ConflictError(
          `${server.name} still runs ${running.length} task(s): the drain is under way; try again when they have moved`,
          {
            reason: 'draining',
            tasks: running.length,
          },
        );
      const node = (await this.runtime.nodes()).find((n) => n.id === nodeId);
      if (node && stateOf(node) === 'ready' && this.engines) {
        // Its own engine leaves the swarm: the machine is told, not only forgotten.
        await (await this.engines.remote(server))
          .leaveSwarm(AbortSignal.timeout(RUNTIME_TIMEOUT_MS))
          .catch((error: Error) =>
            this.log('the server could not be told to leave the swarm; removing it anyway', { name: server.name, error: error.message }),
          );
      }
      if (node) await this.runtime.removeNode(nodeId, true);
    }
    this.engines?.forget(server);
    await this.deps.store.servers.remove(server.id);
    this.log('server removed', { serverId: server.id, name: server.name });
  }

  private async serverOf(id: string): Promise<ServerRecord> {
    const server = await this.deps.store.servers.get(id);
    if (!server) throw new NotFoundError('Server', id);
    return server;
  }

  /** The swarm node a joined server became, found by the address it advertised (before the monitor linked it). */
  private async nodeAt(server: ServerRecord): Promise<SwarmNode | undefined> {
    if (!server.address || !server.joinUsedAt || !this.runtime || !(await this.formation?.formed())) return undefined;
    return (await this.runtime.nodes().catch(() => [])).find((n) => n.address === server.address);
  }

  /**
   * The engine's view, shared by the reads of one moment: a list read by many callers at once is one round of
   * engine calls, not one per request (issue 32). Taken again after SNAPSHOT_REUSE_MS, or at once after a write
   * to what it shows (a server's row, a placement, a deployment); an answer made from it is checked the same way.
   */
  private snapshot(): Promise<RuntimeSnapshot> {
    const version = this.deps.store.versionOf(SNAPSHOT_TABLES);
    let memo = this.snapshotMemo;
    if (!memo || memo.version !== version || Date.now() - memo.at > SNAPSHOT_REUSE_MS) {
      const fresh = { at: Date.now(), version, value: this.readSnapshot() };
      // A failed read is not shared beyond the callers already waiting for it.
      fresh.value.catch(() => {
        if (this.snapshotMemo === fresh) this.snapshotMemo = null;
      });
      this.snapshotMemo = memo = fresh;
    }
    const taken = memo;
    if (tracingReads())
      noteCheckedRead(
        () =>
          this.snapshotMemo === taken &&
          taken.version === this.deps.store.versionOf(SNAPSHOT_TABLES) &&
          Date.now() - taken.at <= SNAPSHOT_REUSE_MS,
      );
    return taken.value;
  }

  private snapshotMemo: { at: number; version: number; value: Promise<RuntimeSnapshot> } | null = null;

  private async readSnapshot(): Promise<RuntimeSnapshot> {
    if (!this.runtime) return { info: null, nodes: null, tasks: null };
    const signal = AbortSignal.timeout(RUNTIME_TIMEOUT_MS);
    const formed = await this.formation?.formed();
    const [info, nodes, tasks] = await Promise.all([
      this.runtime.info(signal).catch(() => null),
      formed ? this.runtime.nodes(signal).catch(() => null) : Promise.resolve(null),
      this.runtime.tasks(signal).catch(() => null),
    ]);
    return { info, nodes, tasks };
  }

  private async present(servers: ServerRecord[], snapshot: RuntimeSnapshot): Promise<ServerView[]> {
    const all = await this.deps.store.projects.listAllServices();
    const names = new Map(all.map((s) => [s.id, s.name]));
    const local = servers.find((s) => s.local) ?? (await this.deps.store.servers.local());
    const holders = await holdersOf(this.deps.store, all, true);
    return servers.map((server) => {
      const node = server.swarmNodeId ? snapshot.nodes?.find((n) => n.id === server.swarmNodeId) : undefined;
      const onIt = (snapshot.tasks ?? []).filter((task) =>
        server.local ? task.nodeId === null || task.nodeId === local?.swarmNodeId : !!task.nodeId && task.nodeId === server.swarmNodeId,
      );
      const live = onIt.filter((task) => task.desiredState === 'running' || task.state === 'running');
      const state = node ? stateOf(node) : server.local && !server.swarmNodeId ? (snapshot.info ? 'ready' : 'unknown') : server.state;
      const totals = node
        ? { cpus: node.cpus, memoryBytes: node.memoryBytes }
        : server.local && snapshot.info
          ? { cpus: snapshot.info.cpus, memoryBytes: snapshot.info.memoryBytes }
          : null;
      const services = new Map<string, { serviceId: string | null; name: string; tasks: number }>();
      for (const task of live) {
        const key = task.serviceId ?? `name:${task.name}`;
        const entry = services.get(key) ?? {
          serviceId: task.serviceId,
          name: (task.serviceId && names.get(task.serviceId)) || task.name,
          tasks: 0,
        };
        entry.tasks++;
        services.set(key, entry);
      }
      return {
        id: server.id,
        name: server.name,
        role: node?.role ?? server.role,
        local: server.local,
        state,
        availability: node?.availability ?? server.availability,
        address: node?.address ?? server.address,
        hostname: node?.hostname ?? server.hostname,
        engineVersion: node?.engineVersion ?? (server.local ? (snapshot.info?.version ?? server.engineVersion) : server.engineVersion),
        labels: server.labels,
        resources: totals
          ? {
              cpus: totals.cpus,
              memoryMb: Math.round(totals.memoryBytes / MB),
              reservedCpus: Math.round(live.reduce((sum, t) => sum + t.reservedCpus, 0) * 1000) / 1000,
              reservedMemoryMb: Math.round(live.reduce((sum, t) => sum + t.reservedMemoryBytes, 0) / MB),
            }
          : null,
        services: [...services.values()],
        tasks: live.map(presentTask),
        databases: all.filter((s) => holders.get(s.id)?.id === server.id).map((s) => ({ id: s.id, name: s.name })),
        stateChangedAt: server.stateChangedAt.toISOString(),
        joinedAt: server.joinedAt?.toISOString() ?? null,
        createdAt: server.createdAt.toISOString(),
      };
    });
  }
}

function presentTask(task: RuntimeTask): ServerTaskView {
  return {
    id: task.id,
    serviceId: task.serviceId,
    name: task.name,
    state: task.state,
    desiredState: task.desiredState,
    containerId: task.containerId,
  };
}

/** One server's room for reservations. */
export interface ServerCapacity {
  name: string;
  freeCpus: number;
  freeMemoryMb: number;
}

export function tokenHash(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/** The host's name as a server name (the API's rule: letters, digits, dots, dashes, underscores). */
function localName(hostname: string | undefined): string {
  const name = (hostname ?? '')
    .replace(/[^A-Za-z0-9._-]/g, '-')
    .replace(/^[^A-Za-z0-9]+/, '')
    .slice(0, 64);
  return name || 'manager';
}

/**
 * The one line the user runs as root on the new machine: the script is fetched, checked against the
 * digest this platform computed (so a proxy on the way cannot change it), then run with the token,
 * the CA's fingerprint (the script refuses a CA that does not match) and the manager's address.
 * Every value is made of characters a shell takes literally inside single quotes.
 */
export function joinCommand(parts: {
  url: string;
  token: string;
  scriptDigest: string;
  caFingerprint: string;
  managerAddress: string;
}): string {
  for (const value of Object.values(parts)) if (/['\s\\]/.test(value)) throw new Error('a join command part holds a quote or a space');
  return [
    `f=$(mktemp) && curl -fsS --max-time 60 -o "$f" '${parts.url}/api/servers/join.sh'`,
    `echo "${parts.scriptDigest}  $f" | sha256sum -c --quiet -`,
    `bash "$f" --url '${parts.url}' --token '${parts.token}' --ca-sha256 '${parts.caFingerprint}' --manager '${parts.managerAddress}'`,
  ].join(' && ');
}
