import { containerLimitsOf } from '../domain/service-scale.js';
import { archiveMount } from '../domain/wal-spool.js';
import { ENGINE_SPECS, databaseEngineOf } from '../domain/database-engines.js';
import { STORAGE_SERVER, storageOf } from '../domain/storage-server.js';
import type { ServiceDeps } from '../platform/deps.js';
import { LABELS, type ContainerState } from './container-engine.port.js';
import { dockerVolumeName } from '../domain/volume-names.js';
import { DeploymentFailure, sleep, throwIfAborted, type DeploymentRecorder, type PipelineContext } from './pipeline-context.js';
import { replicaName, type resourceNames, type RuntimeDeps } from './runtime-deps.js';
import type { TlsMount } from '../tls/database-tls.service.js';

type Names = ReturnType<typeof resourceNames>;

/** A segment switch at least this often while there are writes: the window's end is never further behind. */
const PITR_ARCHIVE_TIMEOUT_SECONDS = 60;

/** A database's readiness check is a connection and a query (a storage instance's, an S3 call): asked at this pace, not the port probe's. */
const SERVER_CHECK_MS = 500;

/**
 * The waits between a new container's port probes: a server that listens a few ms after its start (most do)
 * is seen within those ms rather than one full interval later, which a cold deploy paid in full (250 ms of a
 * 1-second deploy); then every PROBE_INTERVAL_MS. Each probe is the same check, only sooner.
 */
const PROBE_RAMP_MS = [10, 20, 40, 80, 160] as const;
const PROBE_INTERVAL_MS = 250;

/** A server's own readiness check on the new container's address: resolves with what passed, rejects with why not. */
type ReadinessCheck = (host: string, signal: AbortSignal) => Promise<string>;

/**
 * The run half of a deployment: images from a registry, the new container started beside the live
 * one, and the wait until it serves. Nothing here touches the live container or the traffic.
 */
export class ContainerLaunch {
  /** Per deployment under way (its context): the check of its network (ensureNetwork). */
  private readonly networks = new WeakMap<PipelineContext, Promise<void>>();

  constructor(
    private readonly deps: ServiceDeps,
    private readonly runtime: RuntimeDeps,
    private readonly recorder: DeploymentRecorder,
  ) {}

  /** An image service or a database: the registry's image, tagged as this deployment's. */
  async fromRegistry(ctx: PipelineContext, ref: string, tag: string): Promise<string> {
    await this.ensureImage(ctx, ref);
    await this.runtime.engine.tagImage(ref, tag);
    ctx.created.image = tag;
    return tag;
  }

  /** Pulls `ref` unless the engine has it. */
  async ensureImage(ctx: PipelineContext, ref: string): Promise<void> {
    if (await this.runtime.engine.imageExists(ref)) {
      ctx.log.write(`Image ${ref} is present`);
      return;
    }
    ctx.log.write(`Pulling ${ref}`);
    try {
      await this.runtime.engine.pullImage(ref, ctx.log.write, ctx.signal);
    } catch (error) {
      throwIfAborted(ctx.signal);
      throw new DeploymentFailure(`Could not pull ${ref}: ${(error as Error).message}`);
    }
  }

  /**
   * A Postgres-compatible database's certificate, issued for this deployment. Without one the database
   * still starts, without TLS (GET tls says `active: false`): TLS is not worth a database that is down.
   */
  async tlsMount(ctx: PipelineContext): Promise<TlsMount | null> {
    const tls = this.runtime.databaseTls;
    if (!tls) return null;
    try {
      const mount = await tls.mountFor(ctx.service, ctx.signal);
      if (mount) ctx.log.write('TLS: a server certificate signed by the platform CA is mounted; ssl=on');
      return mount;
    } catch (error) {
      throwIfAborted(ctx.signal);
      ctx.log.write(`TLS could not be set up, the database starts without it: ${(error as Error).message}`, 'stderr');
      return null;
    }
  }

  /**
   * The environment's network, checked (and made) once per deployment: the pipeline asks for it while the image
   * builds, so the start does not wait for Docker's network list after the build; the replicas reuse the answer.
   */
  ensureNetwork(ctx: PipelineContext, names: Names): Promise<void> {
    let ready = this.networks.get(ctx);
    if (!ready) {
      const { service } = ctx;
      ready = this.runtime.engine.ensureNetwork(names.network, {
        [LABELS.managed]: 'true',
        [LABELS.instance]: this.deps.config.instanceId,
        [LABELS.project]: service.projectId,
        [LABELS.environment]: service.environmentId,
      });
      this.networks.set(ctx, ready);
    }
    return ready;
  }

  /** Starts the container on its environment's network (and its slot) and resolves once it serves. */
  async start(
    ctx: PipelineContext,
    image: string,
    env: Record<string, string>,
    names: Names,
    tls: TlsMount | null = null,
    /** A replica after the first: its own name and label, no traffic slot, and the deployment's row keeps naming the first. */
    replica = 0,
  ): Promise<ContainerState> {
    const { service, log } = ctx;
    const name = replicaName(names.container, replica);
    const slot = replica === 0 ? ctx.slot : undefined;
    const engine = databaseEngineOf(service);
    const spec = engine ? ENGINE_SPECS[engine] : null;
    const storage = storageOf(service);
    const dataDir = spec?.dataDir ?? (storage ? STORAGE_SERVER.dataDir : null);
    await this.ensureNetwork(ctx, names);
    const engineCmd = spec?.command
      ? spec.command({ logicalReplication: service.source.kind === 'database' && service.source.logicalReplicationEnabled })
      : storage
        ? [...STORAGE_SERVER.command]
        : service.source.kind === 'image' && service.startCommand
          ? ['sh', '-c', service.startCommand]
          : null;
    // Point-in-time recovery on: the server archives each finished WAL segment into its spool volume.
    const pitr = engine === 'postgres' || engine === 'timescale' ? await this.deps.store.pitr.getSettings(service.id) : null;
    const archive = pitr?.enabled ? archiveMount(this.deps.config.resourcePrefix, service.id, PITR_ARCHIVE_TIMEOUT_SECONDS) : null;
    if (archive) log.write('Point-in-time recovery: archive_mode=on, WAL spooled for shipping');
    // TLS and archive arguments go after the engine's own (PostgreSQL images start `postgres` when given no command).
    const extra = [...(tls?.args ?? []), ...(archive?.args ?? [])];
    const cmd = extra.length > 0 ? [...(engineCmd ?? ['postgres']), ...extra] : engineCmd;
    const files = [...(tls?.files ?? []), ...(archive?.files ?? [])];
    // Named volumes outlive deployments too; every container of the service (replicas, a rollout's next one) mounts them.
    const named = (await this.deps.store.volumes.listOf(service.id)).map((v) => ({
      name: dockerVolumeName(this.deps.config.resourcePrefix, service.id, v.name),
      target: v.mountPath,
    }));
    log.write(`Starting container ${name}`);
    if (replica === 0) ctx.created.container = name;
    else ctx.created.replicas = [...(ctx.created.replicas ?? []), name];
    let container: ContainerState;
    try {
      container = await this.runtime.engine.runContainer({
        name,
        image,
        env: { PORT: String(service.internalPort), ...env },
        cmd,
        labels: {
          [LABELS.managed]: 'true',
          [LABELS.instance]: this.deps.config.instanceId,
          [LABELS.service]: service.id,
          [LABELS.deployment]: ctx.deployment.id,
          [LABELS.project]: service.projectId,
          [LABELS.environment]: service.environmentId,
          ...(slot ? { [LABELS.slot]: slot.ip } : {}),
          ...(replica > 0 ? { [LABELS.replica]: String(replica) } : {}),
          ...(tls ? { [LABELS.tls]: 'on' } : {}),
        },
        network: names.network,
        aliases: [service.slug],
        ...(slot ? { slot } : {}),
        // The volume outlives every deployment: only deleting the service removes it.
        // An in-place point-in-time restore may have swapped the database onto the volume it filled (pitr settings).
        volumes: [...(dataDir ? [{ name: pitr?.dataVolume ?? names.volume, target: dataDir }] : []), ...(archive?.volumes ?? []), ...named],
        ...(files.length > 0 ? { files } : {}),
        limits: containerLimitsOf(service),
        signal: ctx.signal,
        port: service.internalPort,
        log: (line) => log.write(line),
      });
    } catch (error) {
      throwIfAborted(ctx.signal);
      throw new DeploymentFailure(`The container did not start: ${(error as Error).message}`);
    }
    if (replica === 0) await this.recorder.recordContainer(ctx.deployment.id, { containerName: name, imageTag: image });
    const admin = this.runtime.databaseReadiness;
    if (engine && admin)
      return this.waitUntilReady(ctx, container, 'database', (host, signal) =>
        admin.checkReady({ serviceId: service.id, engine, host, port: service.internalPort, env }, signal),
      );
    const server = this.runtime.storageServer;
    if (storage && server) {
      const target = { port: service.internalPort, region: STORAGE_SERVER.region, bucket: storage.bucket, ...this.credentialsOf(storage) };
      return this.waitUntilReady(ctx, container, 'storage server', (host, signal) => server.ensureBucket({ ...target, host }, signal));
    }
    return this.waitUntilServing(ctx, container, spec !== null);
  }

  private credentialsOf(storage: NonNullable<ReturnType<typeof storageOf>>) {
    return { accessKeyId: storage.accessKeyId, secretAccessKey: this.deps.secrets.decrypt(storage.secretAccessKeyEncrypted) };
  }

  /**
   * A database's port accepts connections before it accepts queries (PostgreSQL's init restarts it,
   * MySQL starts a temporary server first): it is ready once the engine's own check answers; a
   * storage instance once its bucket answers an S3 call (made when missing). The container is
   * reached as the port probe reaches it, on the project network: the host port still forwards to
   * the previous container until the switch.
   */
  private async waitUntilReady(
    ctx: PipelineContext,
    container: ContainerState,
    what: string,
    check: ReadinessCheck,
  ): Promise<ContainerState> {
    const { service, log } = ctx;
    const timeoutMs = this.deps.config.deploy.healthTimeoutMs;
    const deadline = Date.now() + timeoutMs;
    log.write(`Waiting for the ${what} to answer its readiness check on port ${service.internalPort}`);
    let lastProblem = 'it did not answer';
    for (;;) {
      throwIfAborted(ctx.signal);
      const state = await this.stillRunning(ctx, container);
      if (state.ip) {
        try {
          // A check that hangs must not outlast the deadline.
          const signal = AbortSignal.any([ctx.signal, AbortSignal.timeout(Math.max(deadline - Date.now(), 1))]);
          const answer = await check(state.ip, signal);
          log.write(`${what[0]!.toUpperCase()}${what.slice(1)} ready: ${answer}`);
          if (ctx.created.downSince !== undefined)
            log.write(`The ${what} was unavailable for ${Date.now() - ctx.created.downSince} ms while its server was replaced`);
          return state;
        } catch (error) {
          throwIfAborted(ctx.signal);
          lastProblem = (error as Error).message;
        }
      }
      if (Date.now() >= deadline) {
        for (const line of await this.runtime.engine.tail(container.id, 30)) log.write(line, 'stderr');
        throw new DeploymentFailure(
          `The ${what} did not pass its readiness check within ${Math.round(timeoutMs / 1000)} s: ${lastProblem}`,
        );
      }
      await sleep(SERVER_CHECK_MS, ctx.signal);
    }
  }

  /** The container's state while it runs; a container that exited fails the deployment with its last lines. */
  private async stillRunning(ctx: PipelineContext, container: ContainerState): Promise<ContainerState> {
    const state = await this.runtime.engine.inspect(container.id);
    if (state?.running) return state;
    for (const line of await this.runtime.engine.tail(container.id, 30)) ctx.log.write(line, 'stderr');
    throw new DeploymentFailure(
      `The container exited${state?.exitCode !== null && state?.exitCode !== undefined ? ` with code ${state.exitCode}` : ''} before it served`,
    );
  }

  /** Web: any HTTP answer on the internal port; database without a DatabaseAdmin: a TCP connection; worker: still running after a moment. */
  private async waitUntilServing(ctx: PipelineContext, container: ContainerState, isDatabase: boolean): Promise<ContainerState> {
    const { service, log } = ctx;
    const deploy = this.deps.config.deploy;
    const worker = service.runtimeMode === 'worker' && !isDatabase;
    const deadline = Date.now() + (worker ? deploy.workerSettleMs : deploy.healthTimeoutMs);
    log.write(
      worker
        ? 'Waiting to see that the worker keeps running'
        : `Waiting for the container to answer on port ${service.internalPort}${isDatabase ? '' : ` (GET ${deploy.healthPath})`}`,
    );
    let current = container;
    for (let attempt = 0; ; attempt++) {
      throwIfAborted(ctx.signal);
      // The engine's own look right after the start is the first one: asking again at once tells nothing new.
      const state = attempt === 0 && container.running ? container : await this.stillRunning(ctx, container);
      current = state;
      if (worker) {
        if (Date.now() >= deadline) break;
      } else if (state.ip) {
        const ok = isDatabase
          ? await this.runtime.health.tcp(state.ip, service.internalPort, ctx.signal)
          : (await this.runtime.health.http(state.ip, service.internalPort, deploy.healthPath, ctx.signal)) !== null;
        if (ok) break;
      }
      if (Date.now() >= deadline) {
        for (const line of await this.runtime.engine.tail(container.id, 30)) log.write(line, 'stderr');
        throw new DeploymentFailure(
          `The container did not answer on port ${service.internalPort} within ${Math.round(deploy.healthTimeoutMs / 1000)} s; is internalPort right?`,
        );
      }
      await sleep(worker ? PROBE_INTERVAL_MS : (PROBE_RAMP_MS[attempt] ?? PROBE_INTERVAL_MS), ctx.signal);
    }
    log.write(worker ? 'The worker is running' : 'The container is serving');
    return current;
  }
}
