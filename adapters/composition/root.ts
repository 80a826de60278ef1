import path from 'node:path';
import { Docker } from '../docker/dockerode.js';
import { AnthropicProvider } from '../ai/anthropic.ai-provider.js';
import { OpenAiProvider } from '../ai/openai.ai-provider.js';
import { PostgresWalSpool } from '../databases/postgres.wal-archive.js';
import { PostgresPointInTimeRecovery } from '../databases/postgres.point-in-time-recovery.js';
import { DiskBackupFiles } from '../backups/disk.backup-files.js';
import { statfsDiskUsage } from '../backups/statfs.disk-usage.js';
import { DockerScratchDatabases } from '../databases/docker.scratch-databases.js';
import { DockerVolumeArchive } from '../databases/docker.volume-archive.js';
import { DockerExecDatabaseDump } from '../databases/docker-exec.database-dump.js';
import { EngineDatabaseAdmin } from '../databases/by-engine.database-admin.js';
import { lazyDatabaseAdmin } from '../databases/lazy.database-admin.js';
import { CloudflareDnsProvider } from '../dns/cloudflare.dns-provider.js';
import { DigitalOceanDnsProvider } from '../dns/digitalocean.dns-provider.js';
import { HetznerDnsProvider } from '../dns/hetzner.dns-provider.js';
import { DockerExecPostgresImporter } from '../docker/docker-exec.postgres-importer.js';
import { DockerContainerStatsSource } from '../docker/docker.container-stats-source.js';
import { DockerRuntimeLogSource } from '../docker/docker.runtime-log-source.js';
import { DockerodeContainerEngine } from '../docker/dockerode.container-engine.js';
import { ensureEngine, findProvisionScript, hostFacts, runProvisionScript } from '../docker/engine-setup.js';
import { DockerodeTerminalEngine } from '../docker/dockerode.terminal-engine.js';
import { DockerPreviewNetworks, dockerDiskUsage } from '../docker/docker.preview-networks.js';
import { BitbucketProvider, BitbucketStatusApi } from '../git/bitbucket.git-provider.js';
import { DockerHubProvider } from '../git/dockerhub.git-provider.js';
import { GitCliSource } from '../git/git-cli.git-source.js';
import { GiteaProvider, GiteaStatusApi } from '../git/gitea.git-provider.js';
import { GitHubProvider, GitHubStatusApi } from '../git/github.git-provider.js';
import { GitLabProvider, GitLabStatusApi } from '../git/gitlab.git-provider.js';
import { StandardWebhooksProvider } from '../git/standard-webhooks.git-provider.js';
import { RegistryHttpImageRegistry } from '../registry/registry-http.image-registry.js';
import { SmtpMailer } from '../mail/smtp.mailer.js';
import { IptablesTrafficGate } from '../net/iptables.traffic-gate.js';
import { NetHealthProbe } from '../net/net.health-probe.js';
import { NetPortProbe } from '../net/net.port-probe.js';
import { TcpPortForwarder } from '../net/tcp.port-forwarder.js';
import { S3ObjectStore } from '../object-store/s3.object-store.js';
import { S3StorageServer } from '../object-store/s3.storage-server.js';
import { CaddyContainer } from '../proxy/caddy-container.js';
import { CaddyRequestLogSource } from '../proxy/caddy.request-log-source.js';
import { CaddyReverseProxy } from '../proxy/caddy.reverse-proxy.js';
import { enableListenerHandover } from '../proxy/listener-handover.js';
import { UnconfiguredReverseProxy } from '../proxy/unconfigured.reverse-proxy.js';
import { OpensslCertificateIssuer } from '../tls/openssl.certificate-issuer.js';
import { SwarmClusterRuntime } from '../docker/swarm.cluster-runtime.js';
import { DockerSwarmServices } from '../docker/swarm.services.js';
import { MtlsRemoteEngines } from '../docker/mtls.remote-engines.js';
import { ReplicaEngines } from '../docker/replica-engines.js';
import { PlacedContainerEngine } from '../docker/placed.container-engine.js';
import { placedServer } from '../../src/cluster/stateful-placements.js';
import type { DockerOf } from '../databases/container-exec.js';
import { joinScriptLoader } from '../docker/join-script.js';
import { DistributionImageRegistry } from '../registry/distribution.image-registry.js';
import { DockerContainerExits } from '../docker/docker.container-exits.js';
import { StatfsDiskUsage } from '../host/statfs.disk-usage.js';
import { createNotifiers } from '../notify/notifiers.js';
import type { ContainerEngine } from '../../src/deployments/container-engine.port.js';
import { TrafficSlots } from '../../src/deployments/traffic-slots.js';
import type { DataImporter } from '../../src/imports/data-importer.port.js';
import { openDatabase, type Database } from '../../src/persistence/database.js';
import { offsetClock, systemClock } from '../../src/platform/clock.port.js';
import { LogBus } from '../../src/platform/log-bus.js';
import { SecretBox } from '../../src/platform/secret-box.js';
import type { ReverseProxy } from '../../src/routing/reverse-proxy.port.js';
import type { AppConfig } from './config.js';
import { createUseCases, type HookPorts, type UseCasePorts, type UseCases } from './use-cases.js';

type Log = (message: string, extra?: Record<string, unknown>) => void;

export interface ComposeOptions {
  log?: Log;
  /**
   * Operator commands (`npm run cli`): the database and the use cases, with nothing that runs
   * containers, routes, sends mail or calls a vendor.
   */
  operatorOnly?: boolean;
  /** Where password-reset links point when APP_URL is not set: this API's own address, once it listens. */
  ownUrl?: () => string;
  /** The port this API listens on, once it does (a joining server's URL: SWARM_ADVERTISE_ADDR and this port). */
  ownPort?: () => number;
}

/** The platform built from its configuration: the database, the use cases, and the work that runs beside the doors. */
export interface Platform {
  database: Database;
  useCases: UseCases;
  /** Before the doors open: the stored settings applied, and the first start's API key made (its token, to be shown once). */
  prepare(): Promise<{ initialApiKey: string | null }>;
  /** Deployments, routes, metrics, imports and backups start working. */
  start(): void;
  /** Their work ends (the proxy keeps serving the loaded routes), and the runtime's connections close. */
  stop(): Promise<void>;
  /** Last: the mailer and the database. */
  close(): Promise<void>;
}

/**
 * The composition root: the one place that knows every adapter. It builds the ports this
 * configuration names and hands them to the use cases (use-cases.ts); the server (adapters/http) and
 * the operator commands (adapters/cli) start from here, the tests' harnesses from createUseCases.
 */
export async function composePlatform(config: AppConfig, options: ComposeOptions = {}): Promise<Platform> {
  const log = options.log ?? (() => {});
  const database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  const mailer =
    !options.operatorOnly && config.accounts.smtpUrl ? new SmtpMailer(config.accounts.smtpUrl, config.accounts.mailFrom) : null;
  const ports: UseCasePorts & { replicaEngines?: ReplicaEngines; placedEngine?: PlacedContainerEngine } = options.operatorOnly
    ? operatorPorts()
    : await runtimePorts(config, log, options.ownUrl ?? (() => ''), options.ownPort ?? (() => config.port));
  const databaseAdmin = ports.databases?.admin;
  const useCases = createUseCases(
    {
      store: database.store,
      secrets: SecretBox.fromSecret(config.secretKey),
      clock: offsetClock(systemClock, config.clockOffsetMs),
      logBus: new LogBus(),
      config: config.platform,
    },
    {
      ...ports,
      log,
      accounts: {
        mailer,
        mailerFor: (smtp) => new SmtpMailer(smtp.url, smtp.from),
        sessionTtlMs: config.accounts.sessionTtlMs,
        appUrl: () => config.accounts.appUrl ?? options.ownUrl?.() ?? '',
      },
      terminals: { engine: ports.terminals?.engine, limits: config.terminals },
    },
  );
  // Logs, metrics and terminals reach a service's tasks on any node once the cluster's pieces exist (docs/cluster.md).
  if (ports.replicaEngines && useCases.replicaLocator && useCases.nodeEngines) {
    const replicaEngines = ports.replicaEngines;
    // Databases run on the server holding their volume: their containers' calls go to its engine (docs/cluster.md).
    const placed = ports.placedEngine;
    if (placed && useCases.statefulPlacements) {
      placed.bind(useCases.statefulPlacements, (nodeId) => replicaEngines.dockerOf(nodeId));
      // The databases deployed before the cluster formed join their overlay networks then (and at each start, if one was missed).
      const join = () =>
        placed.joinOverlays().then((joined) => {
          if (joined) log('databases joined their overlay networks', { joined });
        });
      useCases.clusterFormation?.onFormed(join);
      void join().catch((error: Error) => log('databases could not join their overlay networks', { error: error.message }));
    }
    replicaEngines.bind(useCases.replicaLocator, useCases.nodeEngines, ports.placedEngine ?? null);
  }

  return {
    database,
    useCases,
    async prepare() {
      await useCases.settings.load();
      // This process among those on the database: its claims of running jobs and its heartbeat.
      await useCases.controlPlane.start();
      if (config.bootstrapApiKey) {
        await useCases.apiKeys.bootstrap(config.bootstrapApiKey);
        return { initialApiKey: null };
      }
      if (!database.fresh || (await database.store.apiKeys.count()) > 0) return { initialApiKey: null };
      // Without it, a first start leaves no way in over HTTP. Only its id and prefix are logged.
      const { apiKey, token } = await useCases.apiKeys.mint('initial', 'write', null);
      log('initial API key created (all projects, write); its token is printed once, outside the log records', {
        id: apiKey.id,
        prefix: apiKey.prefix,
      });
      return { initialApiKey: token };
    },
    start() {
      // Deployments start once the API answers; a Docker engine that is down only delays them. Routes
      // load once the runner knows which containers serve: a table before that would send all to 503.
      // With several platform processes on one database, one of them runs them (and the runtime they
      // keep: host ports, routes, slots, metrics, the servers' monitor, push's loops); the others take over when it is gone.
      void useCases.controlPlane.lead(
        'runtime',
        async () => {
          await useCases.runner?.start();
          useCases.routing.start();
          useCases.sampler?.start();
          useCases.serverMonitor?.start();
          useCases.statuses.start();
          useCases.poller.start();
          useCases.previews.start();
        },
        async () => {
          await Promise.all([useCases.statuses.stop(), useCases.poller.stop(), useCases.previews.stop()]);
          await useCases.serverMonitor?.stop();
          await useCases.sampler?.stop();
          await useCases.routing.stop();
          await useCases.runner?.stop();
        },
      );
      // The host is the first server; the cluster's monitor has nothing to do until a second one joins.
      void useCases.servers.ensureLocal().catch((error: Error) => log('the local server could not be recorded', { error: error.message }));
      // Imports a previous process left running are failed (with the reason) before new ones are claimed.
      void useCases.imports
        .startRunner()
        .catch((error: Error) => log('imports left running could not be settled', { error: error.message }));
      startBackups(useCases, log);
      // The event loops run in one process too (their own lease: the runtime's leader may be busy deploying).
      void useCases.controlPlane.lead(
        'events',
        async () => useCases.eventLoops.start(),
        () => useCases.eventLoops.stop(),
      );
    },
    async stop() {
      await useCases.serverMonitor?.stop();
      useCases.nodeEngines?.closeAll();
      await useCases.sampler?.stop();
      await Promise.all([useCases.statuses.stop(), useCases.poller.stop(), useCases.previews.stop()]);
      await useCases.backupScheduler.stop();
      await useCases.pitrArchiver?.stop();
      await useCases.pitrRestores?.stop();
      await useCases.drills.stop();
      await useCases.backupRunner.stop();
      await useCases.runner?.stop();
      await useCases.imports.stop();
      // Deliveries under way finish (each within its timeout); what is left is sent after the restart.
      await useCases.eventLoops.stop();
      // Its duties and registration go last: another process takes over at once.
      await useCases.controlPlane.stop();
      // The proxy keeps serving the loaded routes while the platform is down.
      await useCases.routing.stop();
      await ports.runtime?.forwarder.closeAll();
      await ports.placedEngine?.closeTunnels();
      await databaseAdmin?.closeAll();
    },
    async close() {
      mailer?.close();
      await database.close();
    },
  };
}

const ENGINE_PING_TIMEOUT_MS = 3_000;

/** `npm start` on a host without a Docker engine provisions one (scripts/provision/docker.sh) before anything else. */
export function ensureContainerEngine(config: AppConfig, log: Log, say: (line: string) => void): ReturnType<typeof ensureEngine> {
  const engine = new DockerodeContainerEngine(new Docker({ socketPath: config.dockerSocket }));
  return ensureEngine(config.dockerSocket, {
    ping: () => engine.ping(AbortSignal.timeout(ENGINE_PING_TIMEOUT_MS)),
    ...hostFacts(),
    provisionScript: findProvisionScript(),
    provision: runProvisionScript,
    log,
    say,
  });
}

/** Behind Caddy, before anything starts: why the traffic gate cannot work here (its port taken), or null; leftovers of gone installs are swept. */
export async function trafficGatePreflight(config: AppConfig, log: Log): Promise<string | null> {
  if (config.proxy.kind === 'none') return null;
  const engine = new DockerodeContainerEngine(new Docker({ socketPath: config.dockerSocket }));
  const gate = new IptablesTrafficGate({ instanceId: config.platform.instanceId, gatePort: config.proxy.gatePort });
  return new TrafficSlots(engine, gate, config.platform, { log }).preflight();
}

/** The adapters of every port, as the configuration names them. */
async function runtimePorts(
  config: AppConfig,
  log: Log,
  ownUrl: () => string,
  ownPort: () => number,
): Promise<UseCasePorts & { replicaEngines?: ReplicaEngines; placedEngine?: PlacedContainerEngine }> {
  if (config.proxy.kind !== 'none') await enableListenerHandover(log);
  const docker = new Docker({ socketPath: config.dockerSocket });
  // Where a service's tasks run on the cluster and which engine reaches each; bound once the use cases exist.
  const replicaEngines = new ReplicaEngines(docker);
  const swarmServices = new DockerSwarmServices(docker);
  const engine = new DockerodeContainerEngine(docker);
  // Deployments' containers: a database's go to the engine of the server holding its volume (bound below, in composePlatform).
  const placedEngine = new PlacedContainerEngine(
    engine,
    docker,
    config.platform.resourcePrefix,
    config.platform.instanceId,
    (host) => new TcpPortForwarder(host, host),
  );
  const dockerOfContainer = (containerId: string) => placedEngine.dockerOfContainer(containerId);
  const databaseAdmin = engineDatabaseAdmin();
  const git = new GitCliSource();
  return {
    proxy: reverseProxy(config, engine, log),
    replicaEngines,
    placedEngine,
    runtimeLogs: new DockerRuntimeLogSource(docker, replicaEngines),
    portProbe: new NetPortProbe(),
    runtime: {
      engine: placedEngine,
      git,
      forwarder: new TcpPortForwarder(),
      health: new NetHealthProbe(),
      databaseReadiness: databaseAdmin,
      storageServer: new S3StorageServer(),
      // A replica that dies leaves the routes at once, not at the next reconcile pass.
      exits: new DockerContainerExits(docker, config.platform.instanceId),
      // Behind Caddy, cutovers move traffic through the packet filter instead of reloading it.
      ...(config.proxy.kind !== 'none'
        ? { gate: new IptablesTrafficGate({ instanceId: config.platform.instanceId, gatePort: config.proxy.gatePort }) }
        : {}),
    },
    databases: { admin: databaseAdmin },
    imports: { importer: dataImporter(dockerOfContainer) },
    tls: { issuer: new OpensslCertificateIssuer() },
    backups: {
      files: new DiskBackupFiles(config.platform.backups.dir),
      objectStores: (store) => new S3ObjectStore(store),
      dump: new DockerExecDatabaseDump(dockerOfContainer),
      drills: {
        scratch: new DockerScratchDatabases(docker, config.platform.instanceId, config.platform.resourcePrefix),
        // Volume tars and their drills run GNU tar in a helper of the Debian image the Go runtime uses (a setting).
        volumes: new DockerVolumeArchive(
          docker,
          config.platform.instanceId,
          config.platform.resourcePrefix,
          () => config.platform.deploy.analyzerImages.goRuntime,
          (volume) => placedEngine.volumeHost(volume),
        ),
        disk: statfsDiskUsage(config.platform.backups.dir),
      },
      walSpool: new PostgresWalSpool(docker),
      pitrRecovery: new PostgresPointInTimeRecovery(docker, config.platform.instanceId, config.platform.resourcePrefix),
    },
    dnsProviders: [
      new CloudflareDnsProvider({ baseUrl: config.dnsApiUrls.cloudflare }),
      new DigitalOceanDnsProvider({ baseUrl: config.dnsApiUrls.digitalocean }),
      new HetznerDnsProvider({ baseUrl: config.dnsApiUrls.hetzner }),
    ],
    aiProviders: [new OpenAiProvider(), new AnthropicProvider()],
    containerStats: new DockerContainerStatsSource(docker, config.platform.instanceId, replicaEngines),
    ...(config.proxy.kind === 'none' ? {} : { requestLog: new CaddyRequestLogSource(path.join(config.proxy.accessLogDir, 'access.log')) }),
    terminals: { engine: new DockerodeTerminalEngine(docker, replicaEngines, dockerOfContainer) },
    // Servers and the cluster: the local engine is the manager (docs/cluster.md).
    cluster: {
      runtime: new SwarmClusterRuntime(docker, config.platform.instanceId),
      swarmServices,
      swarmTasks: swarmServices,
      remoteEngines: new MtlsRemoteEngines(),
      registry: new DistributionImageRegistry(docker, {
        certsDir: config.dockerCertsDir,
        prefix: config.platform.resourcePrefix,
        instanceId: config.platform.instanceId,
      }),
      joinScript: joinScriptLoader(),
      joinUrl: () => config.platform.cluster.joinUrl ?? `http://${config.platform.cluster.advertiseAddress}:${ownPort()}`,
      leftVolumes: {
        removeOn: (server, serviceId) => placedEngine.removeVolumesOn(placedServer(server), serviceId),
      },
    },
    events: {
      ...createNotifiers({
        allowPrivate: () => config.platform.events.allowPrivateTargets,
        telegramApiUrl: () => config.platform.events.telegramApiUrl,
      }),
      exits: new DockerContainerExits(docker, config.platform.instanceId),
      disk: new StatfsDiskUsage(),
    },
    hooks: hookPorts(config, docker, git, ownUrl),
  };
}

/**
 * Push to deploy's adapters: the senders in the order their headers are told apart (Forgejo and Gitea
 * send GitHub's event header too, so they come before GitHub; Docker Hub, known by its body, last),
 * each host's commit status API, `git ls-remote` for branch polling, the Registry HTTP API for digests,
 * the disk the database volumes live on, and Docker networks for previews sharing a parent's database.
 */
function hookPorts(config: AppConfig, docker: Docker, git: GitCliSource, ownUrl: () => string): HookPorts {
  return {
    providers: [
      new GiteaProvider('forgejo'),
      new GiteaProvider('gitea'),
      new GitLabProvider(),
      new BitbucketProvider(),
      new GitHubProvider(),
      new StandardWebhooksProvider(),
      new DockerHubProvider(),
    ],
    statusApis: [
      new GitHubStatusApi(),
      new GitLabStatusApi(),
      new GiteaStatusApi('gitea'),
      new GiteaStatusApi('forgejo'),
      new BitbucketStatusApi(),
    ],
    remote: git,
    registry: new RegistryHttpImageRegistry(),
    disk: dockerDiskUsage(docker, config.dataDir),
    networks: new DockerPreviewNetworks(docker, { instanceId: config.platform.instanceId, prefix: config.platform.resourcePrefix }),
    baseUrl: () => config.publicUrl ?? ownUrl(),
  };
}

/** For operator commands: the store is all they use. */
function operatorPorts(): UseCasePorts {
  return {
    proxy: new UnconfiguredReverseProxy(),
    runtimeLogs: { follow: async function* () {} },
    portProbe: new NetPortProbe(),
  };
}

/** One adapter per engine family, each loaded on first use; PostgreSQL's serves TimescaleDB too. */
export function engineDatabaseAdmin(): EngineDatabaseAdmin {
  const postgres = lazyDatabaseAdmin(async () => new (await import('../databases/postgres.database-admin.js')).PostgresDatabaseAdmin());
  return new EngineDatabaseAdmin({
    postgres,
    timescale: postgres,
    mysql: lazyDatabaseAdmin(async () => new (await import('../databases/mysql.database-admin.js')).MysqlDatabaseAdmin()),
    redis: lazyDatabaseAdmin(async () => new (await import('../databases/redis.database-admin.js')).RedisDatabaseAdmin()),
    mongodb: lazyDatabaseAdmin(async () => new (await import('../databases/mongodb.database-admin.js')).MongoDatabaseAdmin()),
    clickhouse: lazyDatabaseAdmin(async () => new (await import('../databases/clickhouse.database-admin.js')).ClickHouseDatabaseAdmin()),
  });
}

/** PostgreSQL imports run in the service's container; Redis imports from here (the Redis adapter loads on first use). */
function dataImporter(docker: DockerOf): DataImporter {
  const postgres = new DockerExecPostgresImporter(docker);
  return {
    importPostgres: (source, target, work) => postgres.importPostgres(source, target, work),
    importRedis: async (source, target, work) =>
      new (await import('../databases/redis-url.data-importer.js')).RedisUrlImporter().importRedis(source, target, work),
  };
}

function reverseProxy(config: AppConfig, engine: ContainerEngine, log: Log): ReverseProxy {
  const proxy = config.proxy;
  if (proxy.kind === 'none') return new UnconfiguredReverseProxy();
  if (proxy.kind === 'external') return new CaddyReverseProxy(proxy);
  const container = new CaddyContainer(engine, {
    prefix: config.platform.resourcePrefix,
    image: proxy.image,
    adminPort: proxy.adminPort,
    routesDir: proxy.routesDir,
    accessLogDir: proxy.accessLogDir,
    log,
  });
  return new CaddyReverseProxy({
    ...proxy,
    adminUrl: container.adminUrl,
    host: container,
    caddyRoutesDir: container.routesMount,
    caddyAccessLogDir: container.logsMount,
  });
}

/**
 * Backups run once what a previous process left running is settled (failed, with the reason); the
 * recovery is tried again every 5 s while the database does not answer.
 */
function startBackups(useCases: UseCases, log: Log): void {
  useCases.backupRunner.start();
  const recover = () => {
    if (useCases.backupRunner.stopping) return;
    useCases.backupRunner.recover().then(
      () => {
        useCases.backupScheduler.start();
        useCases.pitrArchiver?.start();
        // Point-in-time restores left running: their scratch containers go (they hold the volumes), then they end
        // failed with the original as it was (a cut-off in-place swap put back); then queued ones run.
        void Promise.resolve(useCases.pitrRestores?.resume()).catch((error: Error) =>
          log('point-in-time restore recovery failed', { error: error.message }),
        );
        // Drills left running end failed, their scratch containers go; then queued and scheduled ones run.
        useCases.drills
          .recover()
          .catch((error: Error) => log('drill recovery failed', { error: error.message }))
          .finally(() => useCases.drills.start());
      },
      (error: Error) => {
        log('backup recovery failed; trying again', { error: error.message });
        setTimeout(recover, 5_000).unref();
      },
    );
  };
  recover();
}
