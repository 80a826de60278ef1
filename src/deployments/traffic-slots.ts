import { LABELS, type ContainerEngine, type ContainerState } from './container-engine.port.js';
import type { OpenSlot, TrafficGate } from './traffic-gate.port.js';
import type { PlatformConfig } from '../platform/platform-config.js';
import { slotSubnetCandidates } from './slot-subnets.js';

/** The gate responder's port is held by someone else: this install's responder cannot listen there. */
export class GatePortTakenError extends Error {}

export interface SlotsOptions {
  log?: (message: string, extra?: Record<string, unknown>) => void;
  /**
   * How long a gate without a network is given before it counts as left behind: an install of an
   * earlier release starts its responder before it makes its network.
   */
  gateGraceMs?: number;
}

/** Where a new container of a service goes: its fixed address, and the pair the proxy routes to. */
export interface SlotAssignment {
  network: string;
  ip: string;
  pair: [string, string];
}

/** See SlotsOptions.gateGraceMs. */
const GATE_GRACE_MS = 3_000;

function toInt(ip: string): number {
  return ip.split('.').reduce((n, part) => n * 256 + Number(part), 0) >>> 0;
}

function toIp(n: number): string {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

/**
 * Zero-downtime cutovers without a proxy reload. Every web service behind the proxy owns two fixed
 * addresses (a pair of slots) on one network of the install; the proxy dials the slot its routes
 * directory names for the service, and the gate lets it through to open slots only. A cutover starts
 * the new container in the free slot, opens its gate, points the routes at it (files, see
 * RoutingService), and closes the old slot once the old container has drained: the proxy sends new
 * requests to the new slot from the moment the file changes, finishes those in flight, and lets its
 * idle connections to the old container expire, which the drain then sees.
 */
export class TrafficSlots {
  private subnet: string | null = null;
  /** Open slot -> the port its container's service listens on. */
  private readonly open = new Map<string, number>();
  /** Addresses handed out to deployments that have not started their container yet. */
  private readonly reserved = new Set<string>();
  private syncing: Promise<void> = Promise.resolve();
  /** Bumped by every cutover's change: a reconcile pass that read the containers before one gives way. */
  private generation = 0;
  /**
   * Whether the slots may be open in ways this process does not know of: this install's slot network existed before
   * it started (an earlier process's rules, or none after a reboot, with its containers on the slots). False once a
   * write made the packet filter say what `open` says, or when prepare made the network (a fresh install): no
   * container was ever on a slot, a forced write then closes nothing the proxy could be dialling, and need not wait.
   */
  private unknownOpen = true;
  private preparing: Promise<void> | null = null;

  constructor(
    private readonly engine: ContainerEngine,
    private readonly gate: TrafficGate,
    private readonly config: PlatformConfig,
    private readonly options: SlotsOptions = {},
  ) {}

  private log(message: string, extra?: Record<string, unknown>): void {
    this.options.log?.(message, extra);
  }

  get network(): string {
    return `${this.config.resourcePrefix}-slots-${this.config.instanceId}`;
  }

  get responderName(): string {
    return `${this.config.resourcePrefix}-gate-${this.config.instanceId}`;
  }

  /**
   * At start, before anything listens: removes what installs that are gone left behind (see sweep),
   * then resolves with why this install's gate cannot listen (its port is someone else's), or null.
   * A packet filter it cannot read is the slots' problem (prepare says so), not a reason to refuse.
   */
  async preflight(signal: AbortSignal = AbortSignal.timeout(60_000)): Promise<string | null> {
    await this.sweep(signal).catch((error: Error) =>
      this.log('could not look for the traffic gates of earlier installs', { error: error.message }),
    );
    if (await this.ownResponderListens()) return null;
    return this.portHolder();
  }

  /**
   * Creates the network and the responder once; throws when the engine or the packet filter cannot be used. A call
   * while one is under way joins it: recovery prepares beside the proxy's first load, and two responders of one name
   * cannot both be made.
   */
  prepare(signal: AbortSignal = AbortSignal.timeout(120_000)): Promise<void> {
    if (this.subnet) return Promise.resolve();
    this.preparing ??= this.prepareNow(signal).finally(() => {
      this.preparing = null;
    });
    return this.preparing;
  }

  private async prepareNow(signal: AbortSignal): Promise<void> {
    const { taken, inherited } = await this.sweep(signal);
    // The network before the responder: another install's sweep, reading gates before networks, then
    // never takes this one's responder for a leftover.
    const subnet = await this.engine.ensureSlotNetwork(
      this.network,
      { [LABELS.managed]: 'true', [LABELS.instance]: this.config.instanceId, [LABELS.role]: 'slots' },
      slotSubnetCandidates(this.config.routing.slotSubnet, taken),
    );
    await this.ensureResponder(signal);
    // No sync here: a platform that restarts knows no open slot yet, and writing none would close every
    // one of them; the first reconcile writes what the containers say.
    this.unknownOpen = inherited;
    this.subnet = subnet;
  }

  /**
   * An install's gate rules and responder outlive it (a reinstall with a new DATA_DIR is a new
   * install): those whose slot network is gone are removed, since their REJECT closes the slots of any
   * later network on their subnet. Resolves with the subnets the rules of live installs name, which a
   * new slot network must not take, and whether this install's slot network exists already (`inherited`). Rules
   * and gates are read before the networks: an install makes its network first, so one starting beside this one is
   * never taken for a leftover.
   */
  private async sweep(signal: AbortSignal): Promise<{ taken: Array<{ subnet: string; by: string }>; inherited: boolean }> {
    const installs = await this.gate.installs(signal);
    const gates = (await this.engine.listContainers({ key: LABELS.managed, value: 'true' })).filter(
      (c) => c.labels[LABELS.role]?.startsWith('gate:') && c.name.includes('-gate-'),
    );
    const live = await this.liveInstalls();
    const own = this.gate.idOf(this.config.instanceId);
    const taken: Array<{ subnet: string; by: string }> = [];
    for (const install of installs) {
      const network = live.get(install.id);
      if (network) {
        if (install.id !== own) taken.push(...install.subnets.map((subnet) => ({ subnet, by: `the install of the network ${network}` })));
        continue;
      }
      await this.gate.removeInstall(install.id, signal);
      this.log('removed the packet-filter rules of an install whose slot network is gone', {
        install: install.id,
        subnets: install.subnets,
      });
    }
    const idOfGate = (name: string) => this.gate.idOf(name.slice(name.lastIndexOf('-gate-') + '-gate-'.length));
    let orphans = gates.filter((gate) => !live.has(idOfGate(gate.name)));
    if (orphans.length > 0) {
      await new Promise((resolve) => setTimeout(resolve, this.options.gateGraceMs ?? GATE_GRACE_MS));
      const still = await this.liveInstalls();
      orphans = orphans.filter((gate) => !still.has(idOfGate(gate.name)));
    }
    for (const gate of orphans) {
      await this.engine.stopAndRemove(gate.id, 0);
      this.log('removed the traffic gate of an install whose slot network is gone', { container: gate.name });
    }
    return { taken, inherited: live.has(own) };
  }

  /** Gate id -> slot network name, of every install whose slot network exists. */
  private async liveInstalls(): Promise<Map<string, string>> {
    const live = new Map<string, string>();
    for (const network of await this.engine.listNetworks({ key: LABELS.role, value: 'slots' })) {
      const instance = network.labels[LABELS.instance];
      if (instance) live.set(this.gate.idOf(instance), network.name);
    }
    return live;
  }

  private async ownResponderListens(): Promise<boolean> {
    const { gateImage: image, gatePort: port } = this.config.routing;
    const state = await this.engine.inspect(this.responderName);
    return !!state?.running && state.image === image && state.labels[LABELS.role] === `gate:${port}`;
  }

  /** Null when the gate port is free; otherwise one line saying who holds it and what to do. */
  private async portHolder(): Promise<string | null> {
    if (await this.gate.portFree()) return null;
    const port = this.config.routing.gatePort;
    const gates = (await this.engine.listContainers({ key: LABELS.role, value: `gate:${port}` })).filter(
      (c) => c.running && c.name !== this.responderName,
    );
    const holder = gates[0] ? `the traffic gate of another Slipway install on this host (container ${gates[0].name})` : 'another process';
    return `PROXY_GATE_PORT ${port} on 127.0.0.1 is taken by ${holder}: each install on a host needs a gate port of its own; set PROXY_GATE_PORT to a free port`;
  }

  /**
   * What the proxy's health checks reach through an open slot: a static HTTP server on the host's
   * network, on 127.0.0.1, in a container of its own so that it keeps answering while the platform
   * is down and while the proxy reloads (a listener inside the proxy was refused for a moment at each
   * load, and closed every slot at once). It answers each request on a new connection and closes it.
   * A port someone else holds is refused: its httpd would crash-loop, and the slots' checks reach
   * whatever answers there.
   */
  private async ensureResponder(signal: AbortSignal): Promise<void> {
    const { gateImage: image, gatePort: port } = this.config.routing;
    if (await this.ownResponderListens()) return;
    if (await this.engine.inspect(this.responderName)) await this.engine.stopAndRemove(this.responderName, 1);
    const holder = await this.portHolder();
    if (holder) throw new GatePortTakenError(holder);
    const cmd = ['httpd', '-f', '-p', `127.0.0.1:${port}`, '-h', '/tmp'];
    if (!(await this.engine.imageExists(image))) await this.engine.pullImage(image, () => {}, signal);
    await this.engine.runDaemon({
      name: this.responderName,
      image,
      cmd,
      env: {},
      // No instance label: the runner owns every container that has one, and would remove this one as a stray.
      labels: { [LABELS.managed]: 'true', [LABELS.role]: `gate:${port}` },
      volumes: [],
      files: [{ path: '/tmp/index.html', content: 'open\n' }],
      signal,
    });
  }

  get ready(): boolean {
    return this.subnet !== null;
  }

  /** The two slots an address belongs to. */
  pairOf(ip: string): [string, string] {
    if (!this.subnet) throw new Error('the slot network is not ready');
    const base = toInt(this.subnet.split('/')[0]!);
    const first = base + 2 + 2 * Math.floor((toInt(ip) - base - 2) / 2);
    return [toIp(first), toIp(first + 1)];
  }

  /** The other slot of the service's current pair, or a free pair when it has none. */
  assign(current: ContainerState | null, containers: ContainerState[]): SlotAssignment {
    if (!this.subnet) throw new Error('the slot network is not ready');
    const [network, bits] = this.subnet.split('/') as [string, string];
    const base = toInt(network);
    const size = 2 ** (32 - Number(bits));
    const used = new Set([...containers.map((c) => c.labels[LABELS.slot]).filter((ip): ip is string => !!ip), ...this.reserved]);
    const currentIp = current?.labels[LABELS.slot];
    if (currentIp) {
      const pair = this.pairOf(currentIp);
      const ip = pair[0] === currentIp ? pair[1] : pair[0];
      if (!used.has(ip)) return this.reserve({ network: this.network, ip, pair });
    }
    // .0 is the network, .1 Docker's gateway, the last one the broadcast address.
    for (let first = base + 2; first + 1 < base + size - 1; first += 2) {
      const pair: [string, string] = [toIp(first), toIp(first + 1)];
      if (!used.has(pair[0]) && !used.has(pair[1])) return this.reserve({ network: this.network, ip: pair[0], pair });
    }
    throw new Error(`every traffic slot of ${this.subnet} is taken; set SLOT_SUBNET to a larger network`);
  }

  private reserve(assignment: SlotAssignment): SlotAssignment {
    this.reserved.add(assignment.ip);
    return assignment;
  }

  /** The container holds the address now (or never will): Docker's view is the one that counts. */
  release(ip: string): void {
    this.reserved.delete(ip);
  }

  isOpen(ip: string): boolean {
    return this.open.has(ip);
  }

  /**
   * Moves the service's traffic to `next`: opens it, then closes `previous`, each time waiting until
   * the proxy's health checks have seen the change.
   */
  async switchTo(next: OpenSlot, previous: string[], options: { wait: boolean; signal?: AbortSignal }): Promise<void> {
    this.generation++;
    await this.set((open) => void open.set(next.ip, next.port), options);
    this.generation++;
    await this.set((open) => previous.filter((ip) => ip !== next.ip).forEach((ip) => open.delete(ip)), options);
  }

  /**
   * Closes slots (a failed cutover, a removed service), waiting until the proxy has seen it; `wait: false` for
   * slots no route ever named (a deployment that failed before its switch), which the proxy never dialled.
   */
  async close(ips: string[], signal?: AbortSignal, options: { wait: boolean } = { wait: true }): Promise<void> {
    if (!ips.some((ip) => this.open.has(ip))) return;
    this.generation++;
    await this.set((open) => ips.forEach((ip) => open.delete(ip)), { wait: options.wait, signal });
  }

  /** Taken before reading the containers that a reconcile pass is computed from. */
  snapshot(): number {
    return this.generation;
  }

  /**
   * Opens exactly `wanted` plus what `keep` holds among the open slots (services being deployed),
   * unless a cutover changed the gate since `snapshot` (the pass then read a world that is gone: the
   * next one redoes it). Waits for the proxy only when something closed.
   */
  async reconcile(
    wanted: Iterable<OpenSlot>,
    keep: Set<string>,
    snapshot: number,
    options: { force?: boolean; signal?: AbortSignal } = {},
  ): Promise<void> {
    const target = [...wanted];
    await this.set(
      (open) => {
        if (this.generation !== snapshot) return 'skip';
        const next = new Map([
          ...[...open].filter(([ip]) => keep.has(ip)),
          ...target.map((slot): [string, number] => [slot.ip, slot.port]),
        ]);
        const closes = [...open.keys()].some((ip) => !next.has(ip));
        open.clear();
        next.forEach((port, ip) => open.set(ip, port));
        // A forced write (a restart) may close what only the kernel knew was open; on a fresh install nothing was.
        return closes || (options.force && this.unknownOpen) ? 'wait' : 'no-wait';
      },
      { wait: false, signal: options.signal, force: options.force ?? false },
    );
  }

  /**
   * One change at a time: each writes the whole set, so the last one written is the truth. `change`
   * may say to skip the write, or whether to wait for the proxy after it.
   */
  private set(
    change: (open: Map<string, number>) => 'skip' | 'wait' | 'no-wait' | void,
    options: { wait: boolean; signal?: AbortSignal; force?: boolean },
  ): Promise<void> {
    const run = this.syncing.then(async () => {
      if (!this.subnet) throw new Error('the slot network is not ready');
      const next = new Map(this.open);
      const verdict = change(next);
      if (verdict === 'skip') return;
      if (!options.force && next.size === this.open.size && [...next].every(([ip, port]) => this.open.get(ip) === port)) return;
      const slots = [...next].map(([ip, port]) => ({ ip, port })).sort((a, b) => toInt(a.ip) - toInt(b.ip));
      await this.gate.sync(this.subnet, slots, options.signal);
      this.unknownOpen = false;
      this.open.clear();
      next.forEach((port, ip) => this.open.set(ip, port));
      if (verdict === 'wait' || (verdict === undefined && options.wait)) await new Promise((resolve) => setTimeout(resolve, this.settleMs));
    });
    this.syncing = run.catch(() => {});
    return run;
  }

  /** Two health intervals (PROXY_HEALTH_INTERVAL_MS): how long a gate change is given before the next step. */
  get settleMs(): number {
    return 2 * this.config.routing.healthIntervalMs + 100;
  }
}
