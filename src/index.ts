import type { ServiceRecord } from './domain/types.js';
import { ApiKeyService } from './accounts/api-key.service.js';
import { AccountService, DEFAULT_SESSION_TTL_MS } from './accounts/account.service.js';
import type { Mailer, SmtpSettings } from './accounts/mailer.port.js';
import { PersonalTokenService } from './accounts/personal-token.service.js';
import { TwoFactorService } from './accounts/two-factor.service.js';
import type { ServiceDeps } from './platform/deps.js';
import { DeploymentService } from './deployments/deployment.service.js';
import { DomainService } from './routing/domain.service.js';
import { EnvService } from './env/env.service.js';
import { ProjectService } from './projects/project.service.js';
import { RoutingService } from './routing/routing.service.js';
import { RuntimeLogService } from './deployments/runtime-log.service.js';
import { ServiceCatalog } from './projects/service-catalog.service.js';
import { ServiceRemoval } from './projects/service-removal.js';
import { DeployRunner } from './deployments/deploy-runner.js';
import { ServiceTeardown } from './deployments/service-teardown.js';
import { CurrentContainers } from './deployments/current-containers.js';
import { TrafficSlots } from './routing/traffic-slots.js';
import { DnsService } from './routing/dns.service.js';
import { SettingsService } from './settings/settings.service.js';
import { LiveConfig } from './settings/live-config.js';
import { HealthService } from './health/health.service.js';
import type { DnsProvider } from './routing/dns-provider.port.js';
import type { RuntimeDeps } from './deployments/runtime-deps.js';
import { DatabaseAdminService, type DatabaseLocator, type DatabaseQueryLimits } from './databases/database-admin.service.js';
import type { DatabaseAdmin } from './databases/database-admin.port.js';
import { JobRunner } from './jobs/job-runner.js';
import type { DataImporter } from './imports/data-importer.port.js';
import { DatabaseImportJobs, type ImportTargetLocator } from './imports/database-import-job.js';
import { DatabaseImportService } from './imports/database-import.service.js';
import { DatabaseTlsService } from './tls/database-tls.service.js';
import type { CertificateIssuer } from './tls/certificate-issuer.port.js';
import { LABELS } from './deployments/container-engine.port.js';

/** Imports running at once across the platform (each is one dump and one restore, or one key copy). */
const IMPORT_CONCURRENCY = 4;
import type { AiProvider } from './ai/ai-provider.port.js';
import { AiDiagnosticsService } from './ai/ai-diagnostics.service.js';
import { MetricsSampler } from './metrics/metrics-sampler.js';
import { MetricsService } from './metrics/metrics.service.js';
import type { ContainerStatsSource } from './metrics/container-stats.port.js';
import type { RequestLogSource } from './metrics/request-log.port.js';
import { TerminalService, type TerminalLimits } from './terminals/terminal.service.js';
import type { TerminalEngine } from './terminals/terminal-engine.port.js';
import { BackupService } from './backups/backup.service.js';
import { BackupJobs } from './backups/backup-job.js';
import { BackupScheduler } from './backups/backup-scheduler.js';
import { BackupScheduleService } from './backups/backup-schedule.service.js';
import type { BackupFiles } from './backups/backup-files.port.js';
import type { ObjectStoreFactory } from './backups/object-store.port.js';
import type { DatabaseDump } from './backups/database-dump.port.js';
import { JobAborted } from './jobs/job-kind.js';
import type { BackupRecord } from './backups/backup.records.js';
import { DEFAULT_DRILL_LIMITS, DrillService, type DrillLimits, type DrillPorts } from './backups/drill.service.js';
import { DatabaseCatalog } from './databases/database-catalog.service.js';
import { ServicePower } from './deployments/service-power.js';
import { assertStorageRemovable, StorageCatalog } from './storage/storage-catalog.service.js';
import { SystemService } from './settings/system.service.js';
import { EnvironmentService } from './environments/environment.service.js';

export interface ServicesOptions {
  /** Called after services (of a deleted project, or one deleted service) are gone from the database. */
  onServicesRemoved?: (services: ServiceRecord[]) => Promise<void>;
  /** Docker, git, host ports and health checks: with them, queued deployments run. */
  runtime?: RuntimeDeps;
  /** The DNS providers this installation can talk to. */
  dnsProviders?: DnsProvider[];
  /** The AI wire formats this installation can talk to (one adapter per kind). */
  aiProviders?: AiProvider[];
  /** Reads running containers' resource use; with it, the metrics sampler runs (start/stop by the caller). */
  containerStats?: ContainerStatsSource;
  /** The proxy's access data: requests and 5xx per service in the metrics (none without it). */
  requestLog?: RequestLogSource;
  log?: (message: string, extra?: Record<string, unknown>) => void;
  /** Database administration without a runtime (router tests), or other limits than the defaults. */
  databases?: { admin?: DatabaseAdmin; locator?: DatabaseLocator; limits?: DatabaseQueryLimits };
  /** Data imports: how they copy, and where a target runs (tests give fakes; the runtime gives containers). */
  imports?: { importer?: DataImporter; locator?: ImportTargetLocator };
  /** Makes the database TLS certificates: without it, databases start without TLS. */
  tls?: { issuer?: CertificateIssuer };
  /** Sessions and password-reset mail. */
  accounts?: { mailer?: Mailer | null; mailerFor?: (smtp: SmtpSettings) => Mailer; sessionTtlMs?: number; appUrl?: () => string };
  /** Container terminals: they need the runtime too. */
  terminals?: { engine?: TerminalEngine; limits?: TerminalLimits };
  /** Where backups are written and what dumps them; without files, backups fail saying so. */
  backups?: {
    files?: BackupFiles;
    objectStores?: ObjectStoreFactory;
    dump?: DatabaseDump;
    /** The container a database runs in (router tests); else the runtime's current container. */
    locate?: (service: ServiceRecord) => Promise<{ containerId: string } | null>;
    /** A reconcile pass after a restore (router tests); else the deploy runner's. */
    repoint?: () => Promise<void>;
    /** Restore drills: the scratch databases they restore into, the disk's fill, where their outcomes go. */
    drills?: Partial<DrillPorts> & { limits?: Partial<DrillLimits> };
  };
}

const NO_FILES: BackupFiles = {
  pathOf: (serviceId, name) => `${serviceId}/${name}`,
  create: () => Promise.reject(new Error('This platform has no backups directory')),
  commit: () => Promise.resolve(),
  read: () => {
    throw new Error('This platform has no backups directory');
  },
  size: () => Promise.resolve(null),
  remove: () => Promise.resolve(),
};
const NO_OBJECT_STORES: ObjectStoreFactory = () => {
  throw new Error('This platform has no object-store client');
};

/** The use cases, wired to their ports: everything the routers need, nothing they should not see. */
export function createServices(startupDeps: ServiceDeps, options: ServicesOptions = {}) {
  // Every use case reads the configuration through this getter: the stored settings, applied by
  // SettingsService, replace the snapshot it returns; the caller's config object is never written to.
  const live = new LiveConfig(startupDeps.config);
  const deps: ServiceDeps = {
    ...startupDeps,
    get config() {
      return live.current();
    },
  };
  const current = options.runtime ? new CurrentContainers(deps, options.runtime.engine) : null;
  // Without a runtime nothing runs, so there are no containers to wait for before routes load.
  const routing = new RoutingService(deps, { upstreamsKnown: !options.runtime }, options.log);
  const env = new EnvService(deps);
  // One TLS service: it makes the install's CA once, whoever asks first (a deployment or GET tls).
  const tls = new DatabaseTlsService(deps, options.tls?.issuer ?? null, {
    tlsActive: async (service) => {
      const container = current ? await current.currentOf(service) : null;
      return container ? container.labels[LABELS.tls] === 'on' : null;
    },
  });
  const runtime: RuntimeDeps | undefined = options.runtime && { ...options.runtime, databaseTls: tls };
  const deployments = new DeploymentService(deps, runtime?.engine ?? null);
  const slots = runtime?.gate && routing.enabled ? new TrafficSlots(runtime.engine, runtime.gate, deps.config, { log: options.log }) : null;
  const runner = runtime ? new DeployRunner(deps, runtime, deployments, env, routing, slots, options.log) : null;
  const teardown = runtime && runner ? new ServiceTeardown(deps, runtime, routing, slots, (ids) => runner.stopDeploymentsOf(ids)) : null;
  const runnerLocator: DatabaseLocator | null = current
    ? {
        locate: async (service) => {
          const ip = (await current.currentOf(service))?.ip;
          return ip ? { host: ip } : null;
        },
      }
    : null;
  const databases = new DatabaseAdminService(
    deps,
    env,
    options.databases?.admin ?? options.runtime?.databaseAdmin ?? null,
    options.databases?.locator ?? runnerLocator,
    options.databases?.limits ?? { timeoutMs: deps.config.databases.queryTimeoutMs, rowCap: deps.config.databases.queryRowCap },
  );
  const importLocator: ImportTargetLocator | null =
    options.imports?.locator ??
    (current
      ? {
          locate: async (service) => {
            const container = await current.currentOf(service);
            return container?.ip ? { containerId: container.id, host: container.ip } : null;
          },
        }
      : null);
  const importJobs = new DatabaseImportJobs(deps, env, options.imports?.importer ?? null, importLocator, () => ({
    connectTimeoutMs: deps.config.databases.importConnectTimeoutMs,
    timeoutMs: deps.config.databases.importTimeoutMs,
  }));
  const imports = new DatabaseImportService(
    deps,
    importJobs,
    new JobRunner(importJobs, { concurrency: () => IMPORT_CONCURRENCY, log: options.log }),
    importLocator,
  );
  // Backups are made below, after the settings they read the object store from.
  let backupService: BackupService | null = null;
  let backupJobs: JobRunner<BackupRecord> | null = null;
  // A deleted database's pools close at once, not when they fall idle.
  const removal = new ServiceRemoval(
    deps,
    routing,
    runner && teardown
      ? {
          stopDeploymentsOf: (ids) => runner.stopDeploymentsOf(ids),
          removeService: (s) => teardown.removeService(s),
          removeNetwork: (id) => teardown.removeNetwork(id),
        }
      : null,
    {
      ...options,
      // A storage instance holding backups of a database that stays is not deleted.
      assertRemovable: (removed) => assertStorageRemovable(deps.store, removed),
      // Imports end (and write their last lines) before their rows go.
      beforeServicesRemoved: (removed) => imports.release(removed.map((s) => s.id)),
      onServicesRemoved: async (removed) => {
        await databases.release(removed.map((s) => s.id));
        // Their backups under way stop first, so none writes a file after its service's are removed.
        await backupJobs?.abortKeys(
          removed.map((s) => s.id),
          new JobAborted('The service was deleted'),
        );
        await backupService?.removeOfServices(removed.map((s) => s.id));
        await options.onServicesRemoved?.(removed);
      },
    },
  );
  const projects = new ProjectService(deps, removal);
  const services = new ServiceCatalog(deps, env, projects, routing, removal);
  const environments = new EnvironmentService(deps, services, removal, routing);
  const domains = new DomainService(deps, routing);
  const settings = new SettingsService(deps, live, () => routing.reload());
  const sampler = options.containerStats
    ? new MetricsSampler(
        deps,
        options.containerStats,
        {
          intervalMs: deps.config.metrics.intervalMs,
          retentionMs: deps.config.metrics.retentionHours * 3_600_000,
          ...(options.requestLog ? { requests: { source: options.requestLog, hostnames: () => routing.hostnames() } } : {}),
        },
        options.log,
      )
    : null;
  const metrics = new MetricsService(
    deps,
    (id) => sampler?.currentOf(id) ?? null,
    sampler?.intervalMs ?? 0,
    (id) => sampler?.pendingOf(id) ?? null,
  );
  const apiKeys = new ApiKeyService(deps);
  // The user behind a session or token, for the account's own operations; set once accounts exists.
  const userOf: ConstructorParameters<typeof TwoFactorService>[1] = (actor) => accounts.userOf(actor);
  const twoFactor = new TwoFactorService(deps, userOf);
  const personalTokens = new PersonalTokenService(deps, userOf);
  const accounts = new AccountService(deps, apiKeys, personalTokens, twoFactor, {
    sessionTtlMs: options.accounts?.sessionTtlMs ?? DEFAULT_SESSION_TTL_MS,
    appUrl: options.accounts?.appUrl ?? (() => `${deps.config.publicScheme}://${deps.config.publicIp}`),
    mailer: options.accounts?.mailer ?? null,
    mailerFor: options.accounts?.mailerFor,
    smtpSettings: () => settings.smtp(),
    registrationOpen: () => settings.registrationOpen(),
    log: options.log,
  });
  const power = new ServicePower(deps, deployments, runtime && current ? { engine: runtime.engine, current } : null);
  const storage = new StorageCatalog(deps, services, power);
  const backups = new BackupService(deps, env, {
    dump: options.backups?.dump ?? null,
    files: options.backups?.files ?? NO_FILES,
    objectStores: options.backups?.objectStores ?? NO_OBJECT_STORES,
    locate:
      options.backups?.locate ??
      (async (service) => {
        const container = current ? await current.currentOf(service) : null;
        return container ? { containerId: container.id, host: container.ip } : null;
      }),
    objectStoreConfig: (storageId) => (storageId ? storage.objectStoreConfig(storageId) : settings.objectStore()),
    repoint: options.backups?.repoint ?? (runner ? () => runner.passNow() : undefined),
  });
  backupService = backups;
  const backupRunner = new JobRunner(new BackupJobs(deps, backups, env), {
    concurrency: () => deps.config.backups.concurrency,
    log: options.log,
  });
  backupJobs = backupRunner;
  backups.onCreated(() => backupRunner.wake());
  const backupScheduler = new BackupScheduler(deps, backups, options.log);
  const drillOptions = options.backups?.drills;
  const drillAdmin = options.databases?.admin ?? options.runtime?.databaseAdmin ?? null;
  const drills = new DrillService(
    deps,
    backups,
    env,
    {
      scratch: drillOptions?.scratch ?? null,
      volumes: drillOptions?.volumes ?? null,
      ready: drillOptions?.ready ?? (drillAdmin ? (endpoint, signal) => drillAdmin.checkReady(endpoint, signal) : null),
      disk: drillOptions?.disk ?? (async () => null),
      publish:
        drillOptions?.publish ??
        (async (event) =>
          options.log?.(`restore ${event.type}`, { backupId: event.backupId, serviceId: event.serviceId, reason: event.reason })),
    },
    { ...DEFAULT_DRILL_LIMITS, ...drillOptions?.limits },
    options.log,
  );
  const system = new SystemService(
    settings,
    {
      deployments: !!runtime,
      reverseProxy: routing.enabled,
      dns: (options.dnsProviders ?? []).length > 0,
    },
    async () => (await deps.store.accounts.countUsers()) > 0,
  );
  const databaseCatalog = new DatabaseCatalog(deps, services, power, databases);
  return {
    system,
    databaseCatalog,
    storage,
    apiKeys,
    accounts,
    twoFactor,
    personalTokens,
    projects,
    environments,
    services,
    env,
    domains,
    settings,
    dns: new DnsService(deps, domains, settings, options.dnsProviders ?? []),
    ai: new AiDiagnosticsService(deps, env, settings, options.aiProviders ?? [], (id) => metrics.latest(id)),
    metrics,
    sampler,
    deployments,
    runtimeLogs: new RuntimeLogService(deps),
    routing,
    runner,
    databases,
    imports,
    tls,
    backups,
    backupRunner,
    backupScheduler,
    drills,
    backupSchedules: new BackupScheduleService(deps, backups),
    teardown,
    health: new HealthService(deps, options.runtime?.engine ?? null, routing),
    terminals: new TerminalService(
      deps,
      runtime && current && options.terminals?.engine ? { engine: runtime.engine, current, terminal: options.terminals.engine } : null,
      options.terminals?.limits,
    ),
  };
}

export type Services = ReturnType<typeof createServices>;

export type { Actor } from './domain/access.js';
export type { ServiceDeps } from './platform/deps.js';
export type { PlatformConfig } from './settings/platform-config.js';
export { DEFAULT_PLATFORM_CONFIG } from './settings/platform-config.js';
export { DomainError } from './domain/errors.js';
export { ERROR_CODES, type ErrorCode } from './domain/errors.js';
export { ACCESS_LEVELS, BUILD_METHODS, RUNTIME_MODES } from './domain/types.js';
export { SCOPES, PROCEDURE_SCOPES, SCOPE_DESCRIPTIONS, ROLES, type Scope, type ProcedureScope, type Role } from './domain/scopes.js';
export { assertProcedureScope, hasScope } from './domain/access.js';
export * from './accounts/account-views.js';
export type { Mailer, MailMessage, SmtpSettings } from './accounts/mailer.port.js';
export * from './platform/views.js';
export * from './databases/database-views.js';
export * from './imports/import-views.js';
export * from './tls/tls-views.js';
export * from './backups/backup-views.js';
export * from './backups/backup-schedule-views.js';
export * from './storage/storage-views.js';
export type { StorageServer, StorageServerTarget } from './storage/storage-server.port.js';
export { BACKUP_STORAGES } from './backups/backup.records.js';
export type { BackupFormat } from './backups/backup.records.js';
export type { BackupFiles } from './backups/backup-files.port.js';
export type { ObjectStore, ObjectStoreConfig, ObjectStoreFactory } from './backups/object-store.port.js';
export type { CountTarget, DatabaseDump, DumpTarget, EngineCounts, RunningDump } from './backups/database-dump.port.js';
export type { DeploymentStreamEvent } from './deployments/deployment.service.js';
export type { RuntimeStreamEvent } from './deployments/runtime-log.service.js';
export * from './platform/input-schemas.js';
export {
  createServiceBody,
  createServiceInput,
  updateServiceInput,
  projectInput,
  projectPatchInput,
  type CreateServiceInput,
  type UpdateServiceInput,
  type ProjectInput,
} from './projects/project.inputs.js';
export { settingsInput, type SettingsInput } from './settings/settings.inputs.js';
export { environmentInput, environmentPatchInput, type EnvironmentInput } from './environments/environment.inputs.js';
export * from './environments/environment-views.js';
export { aiRequestInput, type AiRequestInput } from './ai/ai.inputs.js';
export { DEPLOYMENT_STATUSES } from './domain/deployment-state.js';
export { DATABASE_ENGINES } from './domain/database-engines.js';
export type { RuntimeDeps } from './deployments/runtime-deps.js';
export { DEFAULT_TERMINAL_LIMITS, type TerminalLimits } from './terminals/terminal.service.js';
// Data safety (docs/backups.md): point-in-time recovery, restore drills, volume backups.
export { WAL_FILE_NAME, WAL_SPOOL_DIR, ARCHIVE_COMMAND, archiveMount, type ArchiveMount } from './pitr/wal-spool.js';
export type {
  ArchivedFile,
  PointInTimeRecovery,
  RecoveryRequest,
  RecoveryResult,
  SpooledFile,
  WalSpool,
} from './pitr/wal-archive.port.js';
export type { VolumeArchive, VolumeStats } from './volumes/volume-archive.port.js';
export type { ScratchDatabase, ScratchDatabaseSpec, ScratchDatabases } from './backups/scratch-database.port.js';
export type { DrillEvent, DrillLimits, DrillPorts } from './backups/drill.service.js';
