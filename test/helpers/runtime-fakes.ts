import { randomBytes } from 'node:crypto';
import type { SwarmPath } from '../../src/deployments/swarm-path.port.js';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { isTerminal } from '../../src/domain/deployment-state.js';
import type { DeploymentRecord } from '../../src/domain/types.js';
import { DEFAULT_PLATFORM_CONFIG, type Actor, type PlatformConfig } from '../../src/index.js';
import { createUseCases, type UseCases } from '../../adapters/composition/use-cases.js';
import { openDatabase, type Database } from '../../src/persistence/database.js';
import type { Clock } from '../../src/platform/clock.port.js';
import type {
  BuildRequest,
  ContainerEngine,
  ContainerState,
  DaemonRequest,
  LineSink,
  NetworkState,
  RunRequest,
} from '../../src/deployments/container-engine.port.js';
import type { CloneRequest, GitSource } from '../../src/deployments/git-source.port.js';
import type { HealthProbe } from '../../src/deployments/health-probe.port.js';
import type { PortForwarder } from '../../src/deployments/port-forwarder.port.js';
import type { GateInstall, OpenSlot, TrafficGate } from '../../src/deployments/traffic-gate.port.js';
import { overlaps } from '../../src/deployments/slot-subnets.js';
import type { DatabaseAdmin, DatabaseEndpoint } from '../../src/databases/database-admin.port.js';
import type { StorageServer, StorageServerTarget } from '../../src/deployments/storage-server.port.js';
import type { DeployRunner } from '../../src/deployments/deploy-runner.js';
import type { ServiceTeardown } from '../../src/deployments/service-teardown.js';
import { LogBus } from '../../src/platform/log-bus.js';
import type { DeployConfig } from '../../src/platform/platform-config.js';
import { SecretBox } from '../../src/platform/secret-box.js';
import { FakePortProbe, RecordingReverseProxy, ScriptedRuntimeLogs } from './fakes.js';
import { until } from './until.js';

/** One ordered record of what every runtime fake was asked, so tests can check the order across ports. */
export class Journal {
  readonly entries: string[] = [];
  add(entry: string): void {
    this.entries.push(entry);
  }
  indexOf(pattern: string | RegExp): number {
    return this.entries.findIndex((e) => (typeof pattern === 'string' ? e === pattern : pattern.test(e)));
  }
}

const abortError = () => new Error('aborted');

/** Resolves with `until`, or rejects with `aborted` as soon as the signal aborts. */
function waitOrAbort(signal: AbortSignal, until: Promise<void>): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(abortError());
    const onAbort = () => reject(abortError());
    signal.addEventListener('abort', onAbort, { once: true });
    until.then(
      () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      },
      (error: Error) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/** Docker's view of a reference: no tag means `latest`. */
export function normalizeRef(ref: string): string {
  if (ref.includes('@')) return ref;
  const slash = ref.lastIndexOf('/');
  const colon = ref.lastIndexOf(':');
  return colon > slash ? ref : `${ref}:latest`;
}

/** A gate tests open by hand: builds (or clones) wait on it. */
class Gate {
  private opened!: () => void;
  readonly promise = new Promise<void>((resolve) => (this.opened = resolve));
  open(): void {
    this.opened();
  }
}

/** A container as it was run (the engine's RunRequest, less the abort signal) and its state. */
export interface FakeContainer extends Omit<RunRequest, 'signal'> {
  id: string;
  running: boolean;
  exitCode: number | null;
  ip: string | null;
  /** What it wrote, for `tail`. */
  logs: string[];
  /** keepRunning was called: Docker would restart it. */
  restartPolicy: boolean;
  /** Exited, and being started again by its restart policy (Docker's `restarting` state). */
  restarting?: boolean;
  /** Running, but nothing answers on its port (the health probe says so). */
  silent: boolean;
  /** Connections open to it, as countConnections reports them; null: cannot tell. */
  connections: number | null;
  seq: number;
}

export interface BuildRecord {
  tag: string;
  dockerfile: string;
  /** The Dockerfile as it was in the context when the build started (the pipeline removes the folder after). */
  dockerfileText: string | null;
  buildArgs: Record<string, string>;
  contextDir: string;
}

export interface BuildBehaviour {
  /** Rejects with this message, as Docker reports a failed step. */
  fail?: string | null;
  /** Emits this many `Step i/N` lines. */
  lines?: number;
  /** Emits `ARG KEY=value` for each build argument (what a careless Dockerfile would print). */
  echoArgs?: boolean;
  /** Waits until `releaseBuilds()` or the signal aborts. */
  block?: boolean;
  /** Takes this long (aborts early). */
  delayMs?: number;
}

export interface RunBehaviour {
  /** The container dies at once with this code, having written `tail`. */
  exitAtOnce?: { code: number; tail: string[] } | null;
  /** Containers start but never answer the health probe. */
  silent?: boolean;
  /** Those containers that this says start but never answer the health probe. */
  silentWhen?: (request: RunRequest) => boolean;
  /** runContainer itself rejects. */
  fail?: string | null;
}

/** An in-memory container engine: images, containers, networks and volumes, with failures on demand. */
export class FakeContainerEngine implements ContainerEngine {
  readonly images = new Set<string>();
  readonly containers = new Map<string, FakeContainer>();
  readonly networks = new Map<string, Record<string, string>>();
  /** Subnets of the networks that have one (slot networks). */
  readonly subnets = new Map<string, string>();
  readonly volumes = new Set<string>();

  readonly builds: BuildRecord[] = [];
  readonly pulls: string[] = [];
  readonly tags: Array<{ source: string; target: string }> = [];
  readonly runs: RunRequest[] = [];
  readonly removedImages: string[] = [];
  readonly removedContainers: string[] = [];
  readonly removedVolumes: string[] = [];
  readonly removedNetworks: string[] = [];

  activeBuilds = 0;
  maxActiveBuilds = 0;

  pingError: string | null = null;
  /** Pulls of these references fail with the message. */
  readonly pullFailures = new Map<string, string>();
  build: BuildBehaviour = {};
  run: RunBehaviour = {};

  private gate = new Gate();
  private nextIp = 2;
  private seq = 0;

  constructor(private readonly journal = new Journal()) {}

  /** Lets every blocked build finish, and stops blocking new ones. */
  releaseBuilds(): void {
    this.build.block = false;
    this.gate.open();
    this.gate = new Gate();
  }

  /** Seeds an image, as if pulled or built before. */
  addImage(ref: string): void {
    this.images.add(normalizeRef(ref));
  }

  hasImage(ref: string): boolean {
    return this.images.has(normalizeRef(ref));
  }

  /** Seeds a container, as a previous process (or another installation) left it. */
  addContainer(spec: { name: string; image: string; labels: Record<string, string>; running?: boolean }): FakeContainer {
    const running = spec.running ?? true;
    const container: FakeContainer = {
      id: randomBytes(12).toString('hex'),
      name: spec.name,
      image: spec.image,
      env: {},
      cmd: null,
      labels: spec.labels,
      network: '',
      aliases: [],
      volumes: [],
      running,
      exitCode: running ? null : 0,
      ip: running ? this.allocateIp() : null,
      logs: [],
      restartPolicy: true,
      silent: false,
      connections: 0,
      seq: ++this.seq,
    };
    this.containers.set(container.id, container);
    return container;
  }

  /** Docker restarted it: it runs again, at another address. */
  restart(idOrName: string): FakeContainer {
    const container = this.find(idOrName);
    if (!container) throw new Error(`no container ${idOrName}`);
    container.running = true;
    container.exitCode = null;
    container.ip = this.allocateIp();
    return container;
  }

  byName(name: string): FakeContainer | undefined {
    return [...this.containers.values()].find((c) => c.name === name);
  }

  containersOf(serviceId: string): FakeContainer[] {
    return [...this.containers.values()].filter((c) => c.labels['slipway.service'] === serviceId);
  }

  async ping(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) throw abortError();
    if (this.pingError) throw new Error(this.pingError);
  }

  async imageExists(ref: string): Promise<boolean> {
    return this.hasImage(ref);
  }

  async pullImage(ref: string, onLine: LineSink, signal: AbortSignal): Promise<void> {
    if (signal.aborted) throw abortError();
    this.pulls.push(ref);
    this.journal.add(`engine.pull ${ref}`);
    const failure = this.pullFailures.get(ref);
    if (failure) throw new Error(failure);
    onLine(`${ref}: Pulling from library`, 'stdout');
    onLine(`Status: Downloaded newer image for ${ref}`, 'stdout');
    this.images.add(normalizeRef(ref));
  }

  async buildImage(request: BuildRequest): Promise<void> {
    const { signal, onLine } = request;
    if (signal.aborted) throw abortError();
    const dockerfileText = await readFile(path.join(request.contextDir, request.dockerfile), 'utf8').catch(() => null);
    this.builds.push({
      tag: request.tag,
      dockerfile: request.dockerfile,
      dockerfileText,
      buildArgs: { ...request.buildArgs },
      contextDir: request.contextDir,
    });
    this.journal.add(`engine.build ${request.tag}`);
    this.activeBuilds++;
    this.maxActiveBuilds = Math.max(this.maxActiveBuilds, this.activeBuilds);
    try {
      if (dockerfileText === null) throw new Error(`Cannot locate specified Dockerfile: ${request.dockerfile}`);
      const behaviour = this.build;
      if (behaviour.echoArgs) for (const [key, value] of Object.entries(request.buildArgs)) onLine(`ARG ${key}=${value}`, 'stdout');
      const lines = behaviour.lines ?? 2;
      for (let i = 1; i <= lines; i++) onLine(`Step ${i}/${lines} : RUN something ${i}`, 'stdout');
      if (behaviour.delayMs) await waitOrAbort(signal, new Promise((resolve) => setTimeout(resolve, behaviour.delayMs)));
      if (behaviour.block) await waitOrAbort(signal, this.gate.promise);
      if (signal.aborted) throw abortError();
      if (behaviour.fail) throw new Error(behaviour.fail);
      this.images.add(normalizeRef(request.tag));
      onLine(`Successfully tagged ${request.tag}:latest`, 'stdout');
    } finally {
      this.activeBuilds--;
    }
  }

  async ensureNetwork(name: string, labels: Record<string, string>): Promise<void> {
    if (!this.networks.has(name)) this.networks.set(name, labels);
  }

  /** As Docker: an existing network keeps its subnet; a new one takes the first candidate no other network overlaps. */
  async ensureSlotNetwork(name: string, labels: Record<string, string>, candidates: string[]): Promise<string> {
    const existing = this.subnets.get(name);
    if (this.networks.has(name) && existing) return existing;
    const others = [...this.subnets].filter(([other]) => other !== name).map(([, subnet]) => subnet);
    const subnet = candidates.find((candidate) => !others.some((other) => overlaps(candidate, other)));
    if (!subnet) throw new Error(`no free subnet for the slot network ${name} (set SLOT_SUBNET)`);
    this.networks.set(name, labels);
    this.subnets.set(name, subnet);
    return subnet;
  }

  async listNetworks(label: { key: string; value?: string }): Promise<NetworkState[]> {
    return [...this.networks]
      .filter(([, labels]) => (label.value === undefined ? label.key in labels : labels[label.key] === label.value))
      .map(([name, labels]) => ({ name, labels: { ...labels }, subnet: this.subnets.get(name) ?? null }));
  }

  async runContainer(request: RunRequest): Promise<ContainerState> {
    if (request.signal.aborted) throw abortError();
    this.runs.push(request);
    this.journal.add(`engine.run ${request.name}`);
    if (this.run.fail) throw new Error(this.run.fail);
    if (!this.hasImage(request.image)) throw new Error(`No such image: ${request.image}`);
    if (this.byName(request.name)) throw new Error(`Conflict. The container name "/${request.name}" is already in use`);
    if (!this.networks.has(request.network)) throw new Error(`network ${request.network} not found`);
    for (const volume of request.volumes) this.volumes.add(volume.name);
    const exit = this.run.exitAtOnce ?? null;
    const container: FakeContainer = {
      id: randomBytes(12).toString('hex'),
      name: request.name,
      image: request.image,
      env: { ...request.env },
      cmd: request.cmd,
      labels: { ...request.labels },
      network: request.network,
      aliases: [...request.aliases],
      volumes: request.volumes.map((v) => ({ ...v })),
      running: !exit,
      exitCode: exit ? exit.code : null,
      ip: exit ? null : this.allocateIp(),
      logs: exit ? [...exit.tail] : ['listening'],
      restartPolicy: false,
      silent: (this.run.silent ?? false) || (this.run.silentWhen?.(request) ?? false),
      connections: 0,
      seq: ++this.seq,
    };
    this.containers.set(container.id, container);
    return this.stateOf(container);
  }

  async keepRunning(idOrName: string): Promise<void> {
    const container = this.find(idOrName);
    if (!container) throw new Error(`No such container: ${idOrName}`);
    container.restartPolicy = true;
    this.journal.add(`engine.keepRunning ${container.name}`);
  }

  async inspect(idOrName: string): Promise<ContainerState | null> {
    const container = this.find(idOrName);
    return container ? this.stateOf(container) : null;
  }

  async tail(idOrName: string, lines: number): Promise<string[]> {
    return this.find(idOrName)?.logs.slice(-lines) ?? [];
  }

  async stopAndRemove(idOrName: string, _graceSeconds: number): Promise<void> {
    const container = this.find(idOrName);
    this.journal.add(`engine.stopAndRemove ${container?.name ?? idOrName}`);
    if (!container) return;
    this.containers.delete(container.id);
    this.removedContainers.push(container.name);
  }

  async countConnections(idOrName: string, _port: number): Promise<number | null> {
    const container = this.find(idOrName);
    return container ? container.connections : 0;
  }

  readonly daemons: DaemonRequest[] = [];

  async runDaemon(request: DaemonRequest): Promise<ContainerState> {
    this.daemons.push(request);
    const container = this.addContainer({ name: request.name, image: request.image, labels: request.labels });
    return this.stateOf(container);
  }

  async stopContainer(idOrName: string, _graceSeconds: number): Promise<void> {
    const container = this.find(idOrName);
    this.journal.add(`engine.stopContainer ${container?.name ?? idOrName}`);
    if (!container) return;
    container.running = false;
    container.exitCode = 0;
    container.ip = null;
  }

  async startContainer(idOrName: string): Promise<void> {
    const container = this.find(idOrName);
    if (!container) throw new Error(`No such container: ${idOrName}`);
    if (!container.running) this.restart(idOrName);
  }

  async listContainers(label: { key: string; value?: string }): Promise<ContainerState[]> {
    return [...this.containers.values()]
      .filter((c) => (label.value === undefined ? label.key in c.labels : c.labels[label.key] === label.value))
      .sort((a, b) => b.seq - a.seq) // Docker lists the newest first
      .map((c) => ({ ...this.stateOf(c), exitCode: null }));
  }

  async tagImage(source: string, target: string): Promise<void> {
    if (!this.hasImage(source)) throw new Error(`No such image: ${source}`);
    this.tags.push({ source, target });
    this.images.add(normalizeRef(target));
  }

  async removeImage(ref: string): Promise<void> {
    this.journal.add(`engine.removeImage ${ref}`);
    this.removedImages.push(ref);
    this.images.delete(normalizeRef(ref));
  }

  async listImageTags(prefix: string): Promise<string[]> {
    return [...this.images].filter((tag) => tag.startsWith(prefix));
  }

  async removeVolume(name: string): Promise<void> {
    this.removedVolumes.push(name);
    this.volumes.delete(name);
  }

  async removeNetwork(name: string): Promise<void> {
    this.removedNetworks.push(name);
    this.networks.delete(name);
    this.subnets.delete(name);
  }

  private find(idOrName: string): FakeContainer | undefined {
    return this.containers.get(idOrName) ?? this.byName(idOrName);
  }

  private stateOf(c: FakeContainer): ContainerState {
    return {
      id: c.id,
      name: c.name,
      running: c.running,
      ...(c.restarting ? { restarting: true } : {}),
      exitCode: c.running ? null : c.exitCode,
      ip: c.running ? c.ip : null,
      labels: { ...c.labels },
      image: c.image,
    };
  }

  private allocateIp(): string {
    return `10.0.0.${this.nextIp++}`;
  }
}

export interface FakeRepository {
  files: Record<string, string>;
  commitSha: string;
  /** The one branch it has; default `main`. */
  branch?: string;
}

/** Repositories by URL; a clone writes the files into `dest`, so the real pipeline reads a real tree. */
export class FakeGitSource implements GitSource {
  readonly repos = new Map<string, FakeRepository>();
  readonly clones: Array<{ url: string; branch: string; token: string | null }> = [];
  /** Clones wait until their signal aborts. */
  block = false;
  activeClones = 0;

  constructor(private readonly journal = new Journal()) {}

  async clone(request: CloneRequest): Promise<{ commitSha: string }> {
    if (request.signal.aborted) throw abortError();
    this.clones.push({ url: request.url, branch: request.branch, token: request.token });
    this.journal.add(`git.clone ${request.url}#${request.branch}`);
    request.onLine(`Cloning into '${request.dest}'...`, 'stderr');
    if (this.block) {
      this.activeClones++;
      try {
        await waitOrAbort(request.signal, new Promise<void>(() => {}));
      } finally {
        this.activeClones--;
      }
    }
    const repo = this.repos.get(request.url);
    if (!repo) throw new Error(`git clone failed (exit 128): fatal: repository '${request.url}' not found`);
    if ((repo.branch ?? 'main') !== request.branch) {
      throw new Error(`git clone failed (exit 128): fatal: Remote branch ${request.branch} not found in upstream origin`);
    }
    await mkdir(request.dest, { recursive: true });
    for (const [file, content] of Object.entries(repo.files)) {
      const full = path.join(request.dest, file);
      await mkdir(path.dirname(full), { recursive: true });
      await writeFile(full, content);
    }
    return { commitSha: repo.commitSha };
  }
}

/** Records every host port change; `targets` is where each port points now. */
export class FakePortForwarder implements PortForwarder {
  readonly calls: Array<{ hostPort: number; target: { host: string; port: number } | null }> = [];
  readonly targets = new Map<number, { host: string; port: number }>();
  closed = false;
  /** Set to make the next `set` with a target fail as a listen would (e.g. `EADDRINUSE`). */
  failNext: string | null = null;

  constructor(private readonly journal = new Journal()) {}

  async set(hostPort: number, target: { host: string; port: number } | null): Promise<void> {
    if (target && this.failNext) {
      const code = this.failNext;
      this.failNext = null;
      throw Object.assign(new Error(`listen ${code}: 127.0.0.1:${hostPort}`), { code });
    }
    this.calls.push({ hostPort, target: target ? { ...target } : null });
    this.journal.add(`forwarder.set ${hostPort} -> ${target ? `${target.host}:${target.port}` : 'null'}`);
    if (target) this.targets.set(hostPort, { ...target });
    else this.targets.delete(hostPort);
  }

  async closeAll(): Promise<void> {
    this.closed = true;
    this.targets.clear();
  }

  callsFor(hostPort: number) {
    return this.calls.filter((c) => c.hostPort === hostPort);
  }
}

/**
 * Answers per address: an override when one is set, otherwise whatever the engine says of the
 * container at that address (running and not silent: HTTP 200 and an open TCP port).
 */
export class FakeHealthProbe implements HealthProbe {
  readonly httpCalls: Array<{ host: string; port: number; path: string }> = [];
  readonly tcpCalls: Array<{ host: string; port: number }> = [];
  /** ip -> HTTP status (null: nothing answers). */
  readonly httpOverride = new Map<string, number | null>();
  readonly tcpOverride = new Map<string, boolean>();

  constructor(private readonly engine: FakeContainerEngine | null = null) {}

  async http(host: string, port: number, path: string, signal: AbortSignal): Promise<number | null> {
    if (signal.aborted) return null;
    this.httpCalls.push({ host, port, path });
    if (this.httpOverride.has(host)) return this.httpOverride.get(host)!;
    return this.serving(host) ? 200 : null;
  }

  async tcp(host: string, port: number, signal: AbortSignal): Promise<boolean> {
    if (signal.aborted) return false;
    this.tcpCalls.push({ host, port });
    if (this.tcpOverride.has(host)) return this.tcpOverride.get(host)!;
    return this.serving(host);
  }

  private serving(ip: string): boolean {
    if (!this.engine) return true;
    const container = [...this.engine.containers.values()].find((c) => c.running && c.ip === ip);
    return !!container && !container.silent;
  }
}

export interface RuntimeHarness {
  database: Database;
  services: UseCases;
  runner: DeployRunner;
  /** What deleting a service or project calls to remove its runtime. */
  teardown: ServiceTeardown;
  engine: FakeContainerEngine;
  git: FakeGitSource;
  forwarder: FakePortForwarder;
  health: FakeHealthProbe;
  /** Present with `gate: true`: cutovers then go through traffic slots. */
  gate: FakeTrafficGate | undefined;
  proxy: RecordingReverseProxy;
  journal: Journal;
  config: PlatformConfig;
  buildsDir: string;
  /** What the runner logged through its `log` option. */
  runnerLog: Array<{ message: string; extra?: Record<string, unknown> | undefined }>;
  close(): Promise<void>;
}

/**
 * createHarness's services on SQLite in memory, plus a DeployRunner over fakes of the runtime
 * ports, with deploy settings short enough for unit tests.
 */
/**
 * A DatabaseAdmin whose readiness check answers from a script: each call takes the next entry (an
 * Error is thrown, a string is the answer); the last entry repeats. Only checkReady is used by deployments.
 */
export class FakeDatabaseAdmin implements DatabaseAdmin {
  readonly checks: DatabaseEndpoint[] = [];
  constructor(private readonly script: Array<string | Error>) {}
  async checkReady(db: DatabaseEndpoint, signal: AbortSignal): Promise<string> {
    signal.throwIfAborted();
    this.checks.push(db);
    const next = this.script[Math.min(this.checks.length, this.script.length) - 1]!;
    if (next instanceof Error) throw next;
    return next;
  }
  private unused(): never {
    throw new Error('not used by deployments');
  }
  listTables = async () => this.unused();
  readRows = async () => this.unused();
  query = async () => this.unused();
  insertRow = async () => this.unused();
  updateRow = async () => this.unused();
  deleteRow = async () => this.unused();
  async release(): Promise<void> {}
  async closeAll(): Promise<void> {}
}

/** A storage server's readiness check that answers from a script: a line, or an Error it throws. */
export class FakeStorageServer implements StorageServer {
  readonly checks: StorageServerTarget[] = [];
  constructor(private readonly script: Array<string | Error> = ['bucket answers HeadBucket']) {}
  async ensureBucket(target: StorageServerTarget, signal: AbortSignal): Promise<string> {
    signal.throwIfAborted();
    this.checks.push(target);
    const next = this.script[Math.min(this.checks.length, this.script.length) - 1]!;
    if (next instanceof Error) throw next;
    return next;
  }
}

/** Records every set of open slots it is given, in the journal too: `gate.sync <ip,ip>`. */
export class FakeTrafficGate implements TrafficGate {
  /** `open` holds the addresses; `slots` the addresses with their service ports. */
  readonly syncs: Array<{ subnet: string; open: string[]; slots: OpenSlot[] }> = [];
  constructor(private readonly journal: Journal) {}
  async sync(subnet: string, open: OpenSlot[]): Promise<void> {
    this.syncs.push({ subnet, open: open.map((slot) => slot.ip), slots: open.map((slot) => ({ ...slot })) });
    this.journal.add(`gate.sync ${open.map((slot) => slot.ip).join(',')}`);
  }
  async remove(): Promise<void> {}
  /** Other installs' rules on the "host", as installs() reports them; removeInstall deletes from here. */
  readonly installed = new Map<string, string[]>();
  readonly removedInstalls: string[] = [];
  /** Whether someone holds the responder's port. */
  portTaken = false;
  async installs(): Promise<GateInstall[]> {
    return [...this.installed].map(([id, subnets]) => ({ id, subnets: [...subnets] }));
  }
  idOf(instanceId: string): string {
    return instanceId.toUpperCase();
  }
  async removeInstall(id: string): Promise<void> {
    this.journal.add(`gate.removeInstall ${id}`);
    this.removedInstalls.push(id);
    this.installed.delete(id);
  }
  async portFree(): Promise<boolean> {
    return !this.portTaken;
  }
  get open(): string[] {
    return this.syncs.at(-1)?.open ?? [];
  }
}

export async function createRuntimeHarness(
  opts: {
    config?: Partial<PlatformConfig>;
    deploy?: Partial<DeployConfig>;
    clock?: Clock;
    gate?: boolean;
    databaseAdmin?: DatabaseAdmin;
    storageServer?: StorageServer;
    /** The cluster's path for stateless services (a fake): deployments take it while it says it is active. */
    swarm?: SwarmPath;
  } = {},
): Promise<RuntimeHarness> {
  const database = await openDatabase({ dataDir: ':memory:' });
  const buildsDir = await mkdtemp(path.join(tmpdir(), 'slipway-runner-'));
  const journal = new Journal();
  const engine = new FakeContainerEngine(journal);
  const git = new FakeGitSource(journal);
  const forwarder = new FakePortForwarder(journal);
  const health = new FakeHealthProbe(engine);
  const proxy = new RecordingReverseProxy();
  const gate = opts.gate ? new FakeTrafficGate(journal) : undefined;
  // The gate responder's image is there, as production pulls it once.
  if (gate) engine.addImage('busybox:1');
  const runnerLog: RuntimeHarness['runnerLog'] = [];
  const config: PlatformConfig = {
    ...DEFAULT_PLATFORM_CONFIG,
    streamPingMs: 200,
    ...opts.config,
    deploy: {
      ...DEFAULT_PLATFORM_CONFIG.deploy,
      buildsDir,
      gitBaseUrl: 'https://git.test',
      healthTimeoutMs: 500,
      workerSettleMs: 50,
      stopGraceSeconds: 0,
      ...opts.config?.deploy,
      ...opts.deploy,
    },
  };
  const services = createUseCases(
    {
      store: database.store,
      secrets: SecretBox.fromSecret('test-secret-key-test-secret-key-0123'),
      clock: opts.clock ?? { now: () => new Date() },
      logBus: new LogBus(),
      config,
    },
    {
      proxy,
      runtimeLogs: new ScriptedRuntimeLogs(),
      portProbe: new FakePortProbe(),
      databases: { admin: opts.databaseAdmin },
      runtime: {
        engine,
        git,
        forwarder,
        health,
        ...(gate ? { gate } : {}),
        ...(opts.databaseAdmin ? { databaseReadiness: opts.databaseAdmin } : {}),
        ...(opts.storageServer ? { storageServer: opts.storageServer } : {}),
        ...(opts.swarm ? { swarm: () => opts.swarm ?? null } : {}),
      },
      log: (message, extra) => runnerLog.push({ message, extra }),
    },
  );
  const runner = services.runner;
  const teardown = services.teardown;
  if (!runner || !teardown) throw new Error('createUseCases made no runner although runtime ports were given');
  let closed = false;
  return {
    database,
    services,
    runner,
    teardown,
    engine,
    git,
    forwarder,
    health,
    proxy,
    gate,
    journal,
    config,
    buildsDir,
    runnerLog,
    async close() {
      if (closed) return;
      closed = true;
      engine.releaseBuilds();
      await runner.stop();
      await database.close();
      await rm(buildsDir, { recursive: true, force: true });
    },
  };
}

export { until };

/**
 * What runner tests do with a harness: queue a deployment, wait until it ends, read it back.
 * `harness` is read at each call, so a test file may make a new harness per test.
 */
export function runnerSteps(harness: () => RuntimeHarness, actor: Actor, finishTimeoutMs: number) {
  const deployment = async (id: string): Promise<DeploymentRecord> => {
    const record = await harness().database.store.deployments.get(id);
    if (!record) throw new Error(`no deployment ${id}`);
    return record;
  };
  return {
    deployment,
    logs: async (id: string): Promise<string[]> => (await harness().database.store.deployments.listLogs(id)).map((l) => l.line),
    queue: async (serviceId: string): Promise<string> => (await harness().services.deployments.create(actor, serviceId)).id,
    finished: (id: string, timeoutMs = finishTimeoutMs): Promise<DeploymentRecord> =>
      until(
        async () => {
          const d = await deployment(id);
          return isTerminal(d.status) ? d : null;
        },
        timeoutMs,
        `deployment ${id} to finish`,
      ),
    container: (name: string | null): FakeContainer => {
      const found = name ? harness().engine.byName(name) : undefined;
      if (!found) throw new Error(`no container ${name}`);
      return found;
    },
  };
}
