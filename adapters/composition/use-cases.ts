import { AccountService, DEFAULT_SESSION_TTL_MS } from '../../src/accounts/account.service.js';
import { ApiKeyService } from '../../src/accounts/api-key.service.js';
import type { Mailer, SmtpSettings } from '../../src/accounts/mailer.port.js';
import { PersonalTokenService } from '../../src/accounts/personal-token.service.js';
import { TwoFactorService } from '../../src/accounts/two-factor.service.js';
import { AiDiagnosticsService } from '../../src/ai/ai-diagnostics.service.js';
import type { AiProvider } from '../../src/ai/ai-provider.port.js';
import type { BackupFiles } from '../../src/backups/backup-files.port.js';
import { BackupDestinations } from '../../src/backups/backup-destinations.js';
import { BackupJobs } from '../../src/backups/backup-job.js';
import { BackupLog } from '../../src/backups/backup-log.js';
import { BackupQueue } from '../../src/backups/backup-queue.js';
import { BackupRestore } from '../../src/backups/backup-restore.js';
import { BackupScheduleService } from '../../src/backups/backup-schedule.service.js';
import { BackupScheduler } from '../../src/backups/backup-scheduler.js';
import { BackupSettingsService } from '../../src/backups/backup-settings.service.js';
import { BackupService } from '../../src/backups/backup.service.js';
import { DEFAULT_DRILL_LIMITS, DrillService, type DrillLimits, type DrillPorts } from '../../src/backups/drill.service.js';
import { PitrService } from '../../src/pitr/pitr.service.js';
import { baseBackupSource, DEFAULT_PITR_ARCHIVER_LIMITS, PitrArchiver, type PitrArchiverLimits } from '../../src/pitr/pitr-archiver.js';
import type { PointInTimeRecovery, WalSpool } from '../../src/pitr/wal-archive.port.js';
import { DEFAULT_PITR_RESTORE_LIMITS, PitrRestoreJobs, type PitrRestoreLimits } from '../../src/pitr/pitr-restore-runner.js';
import { createPitrTarget } from '../../src/pitr/pitr-target.js';
import { walDestinationOf } from '../../src/pitr/wal-destinations.js';
import type { DatabaseDump } from '../../src/backups/database-dump.port.js';
import type { ObjectStoreFactory } from '../../src/backups/object-store.port.js';
import { DatabaseAdminService, type DatabaseLocator, type DatabaseQueryLimits } from '../../src/databases/database-admin.service.js';
import type { DatabaseAdmin } from '../../src/databases/database-admin.port.js';
import { DatabaseCatalog } from '../../src/databases/database-catalog.service.js';
import { containerLocators } from '../../src/deployments/container-locators.js';
import { CurrentContainers } from '../../src/deployments/current-containers.js';
import { ContainerVolumeRuntime } from '../../src/volumes/container-volume-runtime.js';
import { VolumeBackupService } from '../../src/volumes/volume-backup.service.js';
import { volumeSource } from '../../src/volumes/volume-snapshot.source.js';
import type { VolumeRuntime } from '../../src/volumes/volume-runtime.port.js';
import { DeployRunner } from '../../src/deployments/deploy-runner.js';
import { DeploymentService } from '../../src/deployments/deployment.service.js';
import type { RuntimeDeps } from '../../src/deployments/runtime-deps.js';
import { RuntimeLogService } from '../../src/deployments/runtime-log.service.js';
import type { RuntimeLogSource } from '../../src/deployments/runtime-logs.port.js';
import { ServicePower } from '../../src/deployments/service-power.js';
import { ServiceTeardown } from '../../src/deployments/service-teardown.js';
import { TrafficSlots } from '../../src/deployments/traffic-slots.js';
import type { ServiceRecord } from '../../src/domain/types.js';
import { EnvService } from '../../src/env/env.service.js';
import { EnvironmentService } from '../../src/environments/environment.service.js';
import { HealthService } from '../../src/health/health.service.js';
import type { DataImporter } from '../../src/imports/data-importer.port.js';
import { DatabaseImportJobs, type ImportTargetLocator } from '../../src/imports/database-import-job.js';
import { DatabaseImportService } from '../../src/imports/database-import.service.js';
import { JobAborted } from '../../src/jobs/job-kind.js';
import { JobRunner } from '../../src/jobs/job-runner.js';
import type { ContainerStatsSource } from '../../src/metrics/container-stats.port.js';
import { MetricsSampler } from '../../src/metrics/metrics-sampler.js';
import { MetricsService } from '../../src/metrics/metrics.service.js';
import type { RequestLogSource } from '../../src/metrics/request-log.port.js';
import type { ServiceDeps } from '../../src/platform/deps.js';
import { HostPortAllocator } from '../../src/projects/host-port-allocator.js';
import type { PortProbe } from '../../src/projects/port-probe.port.js';
import { ProjectService } from '../../src/projects/project.service.js';
import { ServiceChanges } from '../../src/projects/service-changes.js';
import { ServiceCreation } from '../../src/projects/service-creation.js';
import { ServiceReader } from '../../src/projects/service-reader.js';
import { ServiceRemoval } from '../../src/projects/service-removal.js';
import { ServiceSuggestions } from '../../src/projects/service-suggestions.js';
import type { DnsProvider } from '../../src/routing/dns-provider.port.js';
import { DnsService } from '../../src/routing/dns.service.js';
import { DomainService } from '../../src/routing/domain.service.js';
import type { ReverseProxy } from '../../src/routing/reverse-proxy.port.js';
import { RoutingService } from '../../src/routing/routing.service.js';
import type { Services } from '../../src/services.js';
import { LiveConfig } from '../../src/settings/live-config.js';
import { SettingsService } from '../../src/settings/settings.service.js';
import { SystemService } from '../../src/settings/system.service.js';
import { assertStorageRemovable, StorageCatalog } from '../../src/storage/storage-catalog.service.js';
import { StorageObjectStores } from '../../src/storage/storage-object-stores.js';
import type { TerminalEngine } from '../../src/terminals/terminal-engine.port.js';
import { TerminalService, type TerminalLimits } from '../../src/terminals/terminal.service.js';
import type { CertificateIssuer } from '../../src/tls/certificate-issuer.port.js';
import { DatabaseTlsService } from '../../src/tls/database-tls.service.js';
import { CertificateAuthority } from '../../src/tls/certificate-authority.js';
import { createCluster, type ClusterOptions } from '../../src/cluster/cluster.js';
import { ServiceMoves } from '../../src/cluster/service-move.js';
import { DeploymentDatabaseMover } from '../../src/cluster/database-move.js';
import type { SwarmPath } from '../../src/deployments/swarm-path.port.js';
import { ControlPlane, type ProcessIdentity } from '../../src/jobs/control-plane.js';
import { DatabaseCopy, type DiskUsage } from '../../src/backups/database-copy.js';
import { CommitStatusReporter } from '../../src/git-hooks/commit-status.reporter.js';
import { DeliveryReceiver } from '../../src/git-hooks/delivery-receiver.js';
import type { CommitStatusApi, GitProvider, GitRemote, ImageRegistry } from '../../src/git-hooks/git-provider.port.js';
import { PushDeployer } from '../../src/git-hooks/push-deployer.js';
import { TriggerPoller } from '../../src/git-hooks/trigger-poller.js';
import { WebhookService } from '../../src/git-hooks/webhook.service.js';
import type { PreviewNetworks } from '../../src/previews/preview-networks.port.js';
import { PreviewService } from '../../src/previews/preview.service.js';
import { EventPublisher } from '../../src/events/event-publisher.js';
import { createEventServices, type EventPorts } from './events.js';
import { liveHealth, liveServices } from '../../src/monitoring/live-services.js';
import { UNCONFIGURED_BACKUP_FILES } from '../backups/unconfigured.backup-files.js';
import { UNCONFIGURED_OBJECT_STORES } from '../object-store/unconfigured.object-store.js';

/** Imports running at once across the platform (each is one dump and one restore, or one key copy). */
const IMPORT_CONCURRENCY = 4;

/**
 * The ports the use cases call, with what implements them: the adapters the configuration names
 * (root.ts), or fakes in the tests' harnesses. A port left out is a capability this platform lacks.
 */
export interface UseCasePorts {
  proxy: ReverseProxy;
  runtimeLogs: RuntimeLogSource;
  portProbe: PortProbe;
  /** Docker, git, host ports and health checks: with them, queued deployments run. */
  runtime?: RuntimeDeps | undefined;
  /** The DNS providers this installation can talk to. */
  dnsProviders?: DnsProvider[] | undefined;
  /** The AI wire formats this installation can talk to (one adapter per kind). */
  aiProviders?: AiProvider[] | undefined;
  /** Reads running containers' resource use; with it, the metrics sampler runs (started by the caller). */
  containerStats?: ContainerStatsSource | undefined;
  /** The proxy's access data: requests and 5xx per service in the metrics (none without it). */
  requestLog?: RequestLogSource | undefined;
  /** Database administration (one adapter per engine family), where a database runs (router tests), other limits. */
  databases?: { admin?: DatabaseAdmin | undefined; locator?: DatabaseLocator; limits?: DatabaseQueryLimits } | undefined;
  /** Data imports: how they copy, and where a target runs (tests give fakes; the runtime gives containers). */
  imports?: { importer?: DataImporter | undefined; locator?: ImportTargetLocator } | undefined;
  /** Makes the database TLS certificates: without it, databases start without TLS. */
  tls?: { issuer?: CertificateIssuer | undefined } | undefined;
  /** Sessions and password-reset mail. */
  accounts?:
    | { mailer?: Mailer | null; mailerFor?: (smtp: SmtpSettings) => Mailer; sessionTtlMs?: number; appUrl?: () => string }
    | undefined;
  /** Servers and the cluster (src/cluster): the manager's runtime, the nodes' engines, the registry. */
  cluster?: ClusterOptions | undefined;
  /** This process among those sharing the database (default: this process itself). */
  process?: ProcessIdentity | undefined;
  /** Container terminals: they need the runtime too. */
  terminals?: { engine?: TerminalEngine | undefined; limits?: TerminalLimits } | undefined;
  /** Where backups are written and what dumps them; without files, backups fail saying so. */
  backups?:
    | {
        files?: BackupFiles;
        objectStores?: ObjectStoreFactory;
        dump?: DatabaseDump | undefined;
        /** The container a database runs in (router tests); else the runtime's current container. */
        locate?: (service: ServiceRecord) => Promise<{ containerId: string; host?: string | null } | null>;
        /** A reconcile pass after a restore (router tests); else the deploy runner's. */
        repoint?: () => Promise<void>;
        /** Restore drills: the scratch databases they restore into, the disk's fill, where their outcomes go. */
        drills?: Partial<DrillPorts> & { limits?: Partial<DrillLimits> };
        /** Stops and starts a service's containers around a volume snapshot or restore (router tests); else the runtime's. */
        volumeRuntime?: VolumeRuntime;
        /** Point-in-time recovery: a PostgreSQL container's WAL spool and pg_basebackup; without it nothing is archived. */
        walSpool?: WalSpool;
        pitrArchiver?: Partial<PitrArchiverLimits>;
        /** PostgreSQL's point-in-time recovery in scratch containers; without it restores answer 422 not_supported. */
        pitrRecovery?: PointInTimeRecovery;
        pitrRestore?: Partial<PitrRestoreLimits>;
      }
    | undefined;
  /** Push to deploy, polling, commit statuses and previews: the git hosts' and registries' adapters. */
  hooks?: HookPorts | undefined;
  /** Notifiers per channel family, the target guard, container exits and the disk (adapters/notify, docker, host). */
  events?: Omit<EventPorts, 'mailer' | 'live' | 'health' | 'log'> | undefined;
  log?: ((message: string, extra?: Record<string, unknown>) => void) | undefined;
  /** Called after services (of a deleted project, or one deleted service) are gone from the database. */
  onServicesRemoved?: ((services: ServiceRecord[]) => Promise<void>) | undefined;
}

/** The adapters push to deploy, polling and previews talk through. */
export interface HookPorts {
  /** Asked in order (Forgejo before Gitea before GitHub: each sends the next one's headers too). */
  providers?: GitProvider[];
  statusApis?: CommitStatusApi[];
  remote?: GitRemote | null;
  registry?: ImageRegistry | null;
  /** The disk database volumes live on, for the previews' copy limit; null: not checked. */
  disk?: DiskUsage;
  /** Joins a parent's database to a preview's network (previews.databases `shared`). */
  networks?: PreviewNetworks | null;
  /** Where senders reach the API (PUBLIC_URL, else the API's own address once it listens). */
  baseUrl?: () => string;
}

/**
 * The use cases, each built once from the ports and from the use cases it calls, in an order that
 * needs no late binding. What the doors may call is `Services` (src/services.ts); the rest (the
 * runners, loops and the routing table) is started and stopped by the platform (root.ts).
 */
export function createUseCases(startupDeps: Omit<ServiceDeps, 'events'>, ports: UseCasePorts) {
  const log = ports.log;
  // Every use case reads the configuration through this getter: the stored settings, applied by
  // SettingsService, replace the snapshot it returns; the caller's config object is never written to.
  const live = new LiveConfig(startupDeps.config);
  // The one publisher: every capability publishes through it, in its change's transaction.
  const publisher = new EventPublisher(startupDeps);
  const deps: ServiceDeps = {
    ...startupDeps,
    events: publisher,
    get config() {
      return live.current();
    },
  };

  // Shared ground: the processes on the database, routing, variables, settings, host ports.
  // Several platform processes on one database: claims of running jobs and the runtime's one leader.
  const controlPlane = new ControlPlane(deps.store, () => deps.config.controlPlane, ports.process, log);
  const current = ports.runtime ? new CurrentContainers(deps, ports.runtime.engine) : null;
  const locate = current ? containerLocators(current) : null;
  // Without a runtime nothing runs, so there are no containers to wait for before routes load.
  const routing = new RoutingService(deps, ports.proxy, { upstreamsKnown: !ports.runtime }, log);
  const env = new EnvService(deps);
  const settings = new SettingsService(deps, live, () => routing.reload());
  const hostPorts = new HostPortAllocator(deps, ports.portProbe);

  // Deployments: one TLS service makes the install's CA once, whoever asks first (a deployment or GET tls).
  // One CA for the install: database certificates, the cluster's registry and nodes' engines.
  const ca = new CertificateAuthority(deps, ports.tls?.issuer ?? null);
  const tls = new DatabaseTlsService(deps, ports.tls?.issuer ?? null, current, ca);
  // The cluster's path for stateless services is made with the cluster further down; deployments ask for it when they run.
  let swarmPath: SwarmPath | null = null;
  // A path the runtime ports bring (tests' fakes) is kept.
  const runtime: RuntimeDeps | undefined = ports.runtime && {
    ...ports.runtime,
    databaseTls: tls,
    swarm: ports.runtime.swarm ?? (() => swarmPath),
  };
  const deployments = new DeploymentService(deps, runtime?.engine ?? null);
  const slots = runtime?.gate && routing.enabled ? new TrafficSlots(runtime.engine, runtime.gate, deps.config, { log }) : null;
  const runner = runtime ? new DeployRunner(deps, runtime, deployments, env, routing, slots, log, controlPlane.claims('deployment')) : null;
  const teardown = runtime && runner ? new ServiceTeardown(deps, runtime, routing, slots, (ids) => runner.stopDeploymentsOf(ids)) : null;
  const power = new ServicePower(deps, deployments, runtime && current ? { engine: runtime.engine, current } : null);

  // Databases: administration and imports.
  const databases = new DatabaseAdminService(
    deps,
    env,
    ports.databases?.admin ?? null,
    ports.databases?.locator ?? locate?.database ?? null,
    ports.databases?.limits ?? { timeoutMs: deps.config.databases.queryTimeoutMs, rowCap: deps.config.databases.queryRowCap },
  );
  const importLocator = ports.imports?.locator ?? locate?.importTarget ?? null;
  const importJobs = new DatabaseImportJobs(deps, env, ports.imports?.importer ?? null, importLocator, () => ({
    connectTimeoutMs: deps.config.databases.importConnectTimeoutMs,
    timeoutMs: deps.config.databases.importTimeoutMs,
  }));
  const imports = new DatabaseImportService(
    deps,
    importJobs,
    new JobRunner(importJobs, { concurrency: () => IMPORT_CONCURRENCY, log, claims: controlPlane.claims('import') }),
    importLocator,
  );

  // Backups: to disk and to object stores (a storage instance's, or the platform settings').
  const dump = ports.backups?.dump ?? null;
  const backupRuntime = {
    locate: ports.backups?.locate ?? locate?.backupTarget.locate ?? (async () => null),
    repoint: ports.backups?.repoint ?? (runner ? () => runner.passNow() : undefined),
  };
  const objectStores = new StorageObjectStores(deps, settings);
  const backupLog = new BackupLog(deps);
  const destinations = new BackupDestinations(deps, {
    files: ports.backups?.files ?? UNCONFIGURED_BACKUP_FILES,
    objectStores: ports.backups?.objectStores ?? UNCONFIGURED_OBJECT_STORES,
    configs: objectStores,
  });
  const backupSettings = new BackupSettingsService(deps, dump, destinations);
  const backupQueue = new BackupQueue(deps, dump, backupSettings, backupLog);
  // Volume backups: the same jobs, destinations and drills; the bytes come from the volume archive.
  const volumeArchive = ports.backups?.drills?.volumes ?? null;
  const volumeRuntime =
    ports.backups?.volumeRuntime ??
    (runtime
      ? new ContainerVolumeRuntime(runtime.engine, deps.config.deploy.stopGraceSeconds, runner ? () => runner.passNow() : undefined)
      : null);
  const walSpool = ports.backups?.walSpool ?? null;
  const backupSources = {
    volume: volumeSource(deps, volumeArchive, volumeRuntime),
    base: baseBackupSource(walSpool, backupRuntime.locate),
  };
  const backupRunner = new JobRunner(new BackupJobs(deps, env, dump, destinations, backupLog, backupRuntime, backupSources), {
    concurrency: () => deps.config.backups.concurrency,
    log,
    claims: controlPlane.claims('backup'),
  });
  backupQueue.onQueued(() => backupRunner.wake());
  const backupRestore = new BackupRestore(deps, env, dump, destinations, backupLog, backupRuntime);
  const drillPorts = ports.backups?.drills;
  const drillAdmin = ports.databases?.admin ?? null;
  const drills = new DrillService(
    deps,
    dump,
    backupLog,
    backupRestore,
    env,
    {
      scratch: drillPorts?.scratch ?? null,
      volumes: drillPorts?.volumes ?? null,
      ready: drillPorts?.ready ?? (drillAdmin ? (endpoint, signal) => drillAdmin.checkReady(endpoint, signal) : null),
      disk: drillPorts?.disk ?? (async () => null),
      // The outcome is an event of the outbox (DrillService publishes it through deps.events); this is for other listeners.
      publish: drillPorts?.publish ?? (async () => undefined),
    },
    { ...DEFAULT_DRILL_LIMITS, ...drillPorts?.limits },
    log,
  );
  // WAL shipping and base backups run where a container engine runs (docs/backups.md, Point-in-time recovery).
  const pitrArchiver = walSpool
    ? new PitrArchiver(
        deps,
        {
          spool: walSpool,
          destinationOf: walDestinationOf(destinations, deps.config.backups.objectStoreTimeoutMs),
          locate: backupRuntime.locate,
          envOf: async (service) => (await env.resolvedFor(service)).env,
          removeBase: (backup, signal) => destinations.removeEverywhere(backup, signal),
        },
        backupQueue,
        { ...DEFAULT_PITR_ARCHIVER_LIMITS, intervalMs: deps.config.backups.pitrIntervalMs, ...ports.backups?.pitrArchiver },
        log,
      )
    : null;

  // Projects and their services: removal last of the ground, since it ends what every capability keeps of a service.
  const removal = new ServiceRemoval(deps, routing, teardown, {
    // A storage instance holding backups of a database that stays is not deleted.
    assertRemovable: (removed) => assertStorageRemovable(deps.store, removed),
    // Imports end (and write their last lines) before their rows go.
    beforeServicesRemoved: (removed) => imports.release(removed.map((s) => s.id)),
    onServicesRemoved: async (removed) => {
      const ids = removed.map((s) => s.id);
      // A deleted database's pools close at once, not when they fall idle.
      await databases.release(ids);
      // Their backups under way stop first, so none writes a file after its service's are removed.
      await backupRunner.abortKeys(ids, new JobAborted('The service was deleted'));
      await destinations.removeOfServices(ids);
      // A preview goes with the service it previews (previews is built below; this runs on a removal, long after).
      await previews.removeOfServices(removed);
      await ports.onServicesRemoved?.(removed);
    },
    log,
  });
  const projects = new ProjectService(deps, removal);
  const backupService = new BackupService(deps, backupQueue, backupSettings, destinations);
  const serviceReader = new ServiceReader(deps, env);
  // The servers' room for reservations, read through the cluster's servers (made further down).
  const capacity = () => cluster.servers.capacity();
  const serviceCreation = new ServiceCreation(deps, env, hostPorts, capacity);
  // Point-in-time restores run where PostgreSQL's recovery can (a container engine): into a new service beside the original.
  const pitrRecovery = ports.backups?.pitrRecovery ?? null;
  const pitrRestores = pitrRecovery
    ? new PitrRestoreJobs(
        deps,
        {
          recovery: pitrRecovery,
          backups: backupRestore,
          destinations,
          env,
          deploy: async (service, firstLine) => (await deployments.enqueueFilled(service, firstLine)).id,
          log: (restoreId, line, stream) => log?.('point-in-time restore', { restoreId, stream, line }),
        },
        { ...DEFAULT_PITR_RESTORE_LIMITS, ...ports.backups?.pitrRestore },
        log,
      )
    : null;
  const pitr = new PitrService(
    deps,
    destinations,
    pitrRestores
      ? {
          wake: () => pitrRestores.wake(),
          createTarget: (actor, original, at) => createPitrTarget(deps, env, serviceCreation, actor, original, at),
        }
      : null,
    undefined,
    pitrArchiver !== null,
  );

  // Metrics: the sampler ticks only once started; without stats, the service answers without samples.
  const sampler = ports.containerStats
    ? new MetricsSampler(
        deps,
        ports.containerStats,
        {
          intervalMs: deps.config.metrics.intervalMs,
          retentionMs: deps.config.metrics.retentionHours * 3_600_000,
          ...(ports.requestLog ? { requests: { source: ports.requestLog, hostnames: () => routing.hostnames() } } : {}),
        },
        log,
      )
    : null;
  const metrics = new MetricsService(
    deps,
    (id) => sampler?.currentOf(id) ?? null,
    sampler?.intervalMs ?? 0,
    (id) => sampler?.pendingOf(id) ?? null,
  );

  // Accounts.
  const apiKeys = new ApiKeyService(deps);
  const twoFactor = new TwoFactorService(deps);
  const personalTokens = new PersonalTokenService(deps);
  const accounts = new AccountService(deps, apiKeys, personalTokens, twoFactor, {
    sessionTtlMs: ports.accounts?.sessionTtlMs ?? DEFAULT_SESSION_TTL_MS,
    appUrl: ports.accounts?.appUrl ?? (() => `${deps.config.publicScheme}://${deps.config.publicIp}`),
    mailer: ports.accounts?.mailer ?? null,
    mailerFor: ports.accounts?.mailerFor,
    smtpSettings: () => settings.smtp(),
    registrationOpen: () => settings.registrationOpen(),
    log,
  });

  // Events: notifications, the event stream, the audit log, and the monitors that raise runtime events.
  const events = createEventServices(deps, publisher, {
    ...ports.events,
    log,
    alone: () => controlPlane.alone,
    // Email channels send through the settings' SMTP server, else SMTP_URL's.
    mailer: async () => {
      const mailerFor = ports.accounts?.mailerFor;
      const smtp = mailerFor ? await settings.smtp() : null;
      if (smtp && mailerFor) {
        const mailer = mailerFor(smtp);
        return { mailer, release: () => mailer.close?.() };
      }
      const fallback = ports.accounts?.mailer;
      return fallback ? { mailer: fallback, release: () => {} } : null;
    },
    ...(runtime && current ? { live: liveServices(deps, current), health: liveHealth(deps, runtime, current) } : {}),
  });

  const domains = new DomainService(deps, routing);
  const environments = new EnvironmentService(deps, serviceReader, removal, routing, hostPorts);

  // Push to deploy, branch and digest polling, commit statuses and pull-request previews.
  const hookPorts = ports.hooks ?? {};
  const hookBaseUrl = () => deps.config.hooks.publicUrl ?? hookPorts.baseUrl?.() ?? `${deps.config.publicScheme}://${deps.config.publicIp}`;
  const webhooks = new WebhookService(deps, hookBaseUrl);
  const statuses = new CommitStatusReporter(
    deps,
    hookPorts.statusApis ?? [],
    { deploymentUrl: (d) => `${hookBaseUrl().replace(/\/+$/, '')}/api/deployments/${d.id}` },
    (deploymentId, line) => deployments.appendLog(deploymentId, 'stdout', line),
    log,
  );
  const poller = new TriggerPoller(deps, deployments, hookPorts.remote ?? null, hookPorts.registry ?? null, log);
  const deliveries = new DeliveryReceiver(
    deps,
    hookPorts.providers ?? [],
    webhooks,
    new PushDeployer(deps, deployments, statuses),
    poller,
    log,
    events.audit,
  );
  const previews = new PreviewService(
    deps,
    environments,
    deployments,
    statuses,
    {
      copy: new DatabaseCopy(deps, env, dump, backupRestore, backupRuntime),
      limits: {
        maxBytes: deps.config.hooks.previewCopyMaxBytes,
        maxUsedRatio: deps.config.hooks.previewDiskMaxUsedRatio,
        disk: hookPorts.disk ?? (async () => null),
      },
    },
    hookPorts.networks ?? null,
    log,
  );
  deliveries.handlePullRequests(previews);

  // Servers and the cluster (docs/cluster.md): the host is the first server.
  const cluster = createCluster(deps, {
    engine: ports.runtime?.engine ?? null,
    ca,
    issuer: ports.tls?.issuer ?? null,
    options: {
      // A server that goes down or comes back is an install event like any other: notified, streamed, kept.
      events: {
        serverDown: (server) =>
          publisher.publishQuietly('server.down', { serverId: server.id, name: server.name, address: server.address }, log),
        serverUp: (server) =>
          publisher.publishQuietly('server.up', { serverId: server.id, name: server.name, address: server.address }, log),
      },
      reroute: runner ? () => runner.passNow() : undefined,
      ...ports.cluster,
    },
    log: log ?? (() => {}),
  });
  swarmPath = cluster.swarm;
  // A follower's writes do not move this process's store version: while others are alive, the leader re-reads its routing table.
  controlPlane.onBeat(async () => {
    if (controlPlane.hasPeers) routing.invalidate();
  });
  deployments.usePeers(() => controlPlane.hasPeers);
  const useCases = {
    // What the doors call (Services).
    system: new SystemService(
      settings,
      {
        deployments: !!runtime,
        reverseProxy: routing.enabled,
        dns: (ports.dnsProviders ?? []).length > 0,
      },
      async () => (await deps.store.accounts.countUsers()) > 0,
    ),
    apiKeys,
    accounts,
    twoFactor,
    personalTokens,
    projects,
    environments,
    serviceCreation,
    serviceReader,
    serviceChanges: new ServiceChanges(deps, serviceReader, projects, routing, capacity, runner ? () => runner.passNow() : undefined),
    suggestions: new ServiceSuggestions(deps),
    removal,
    env,
    domains,
    dns: new DnsService(deps, domains, settings, ports.dnsProviders ?? []),
    settings,
    deployments,
    runtimeLogs: new RuntimeLogService(deps, ports.runtimeLogs),
    databases,
    databaseCatalog: new DatabaseCatalog(deps, serviceCreation, serviceReader, removal, power, databases),
    storage: new StorageCatalog(deps, serviceCreation, serviceReader, removal, power),
    imports,
    tls,
    backups: backupService,
    volumeBackups: new VolumeBackupService(
      deps,
      backupQueue,
      backupService,
      backupRestore,
      drills,
      backupLog,
      volumeArchive,
      volumeRuntime,
    ),
    backupSettings,
    backupRestore,
    drills,
    pitr,
    pitrArchiver,
    pitrRestores,
    backupSchedules: new BackupScheduleService(deps, backupQueue, backupSettings),
    ai: new AiDiagnosticsService(deps, env, settings, ports.runtimeLogs, ports.aiProviders ?? [], (id) => metrics.latest(id)),
    metrics,
    health: new HealthService(deps, ports.runtime?.engine ?? null, ports.proxy, routing, events.notifications),
    webhooks,
    deliveries,
    previews,
    terminals: new TerminalService(
      deps,
      current && ports.terminals?.engine ? { current, terminal: ports.terminals.engine, replicas: cluster.replicas } : null,
      ports.terminals?.limits,
    ),
    servers: cluster.servers,
    serverJoins: cluster.join,
    registry: cluster.registry,
    // Moving a database between servers: a deployment on the target that copies its volume there (docs/cluster.md).
    serviceMoves: new ServiceMoves(
      deps,
      runtime && ports.cluster?.leftVolumes
        ? new DeploymentDatabaseMover(deps, deployments, ports.cluster.leftVolumes, log ?? (() => {}))
        : null,
    ),
    statefulPlacements: cluster.placements,
    notifications: events.notifications,
    eventStream: events.eventStream,
    audit: events.audit,
    // What runs beside the doors: the platform starts and stops it (root.ts).
    controlPlane,
    serverMonitor: cluster.monitor,
    clusterFormation: cluster.formation,
    nodeEngines: cluster.engines,
    replicaLocator: cluster.replicas,
    routing,
    runner,
    teardown,
    sampler,
    backupRunner,
    backupScheduler: new BackupScheduler(deps, backupQueue, destinations, log, events.audit),
    /** The event dispatcher, deliveries and monitors (started and stopped with the platform). */
    eventLoops: events,
    objectStores,
    statuses,
    poller,
  };
  return useCases satisfies Services;
}

export type UseCases = ReturnType<typeof createUseCases>;
