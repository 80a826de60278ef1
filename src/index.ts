import type { ServiceRecord } from './domain/types.js';
import { ApiKeyService } from './accounts/api-key.service.js';
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
import { DatabaseCatalog } from './databases/database-catalog.service.js';
import { SystemService } from './settings/system.service.js';

export interface ServicesOptions {
  /** Called after services (of a deleted project, or one deleted service) are gone from the database. */
  onServicesRemoved?: (services: ServiceRecord[]) => Promise<void>;
  /** Docker, git, host ports and health checks: with them, queued deployments run. */
  runtime?: RuntimeDeps;
  /** The DNS providers this installation can talk to. */
  dnsProviders?: DnsProvider[];
  log?: (message: string, extra?: Record<string, unknown>) => void;
  /** Database administration without a runtime (router tests), or other limits than the defaults. */
  databases?: { admin?: DatabaseAdmin; locator?: DatabaseLocator; limits?: DatabaseQueryLimits };
}

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
  // Without a runtime nothing runs, so there are no containers to wait for before routes load.
  const routing = new RoutingService(deps, { upstreamsKnown: !options.runtime }, options.log);
  const env = new EnvService(deps);
  const deployments = new DeploymentService(deps);
  const runtime = options.runtime;
  const slots = runtime?.gate && routing.enabled ? new TrafficSlots(runtime.engine, runtime.gate, deps.config) : null;
  if (slots) routing.useSlotPool((inUse) => (slots.ready ? slots.pool(inUse) : null));
  const runner = runtime ? new DeployRunner(deps, runtime, deployments, env, routing, slots, options.log) : null;
  const teardown = runtime && runner ? new ServiceTeardown(deps, runtime, routing, slots, (ids) => runner.stopDeploymentsOf(ids)) : null;
  const current = runtime ? new CurrentContainers(deps, runtime.engine) : null;
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
  // A deleted database's pools close at once, not when they fall idle.
  const removal = new ServiceRemoval(
    deps,
    routing,
    runner && teardown
      ? {
          stopDeploymentsOf: (ids) => runner.stopDeploymentsOf(ids),
          removeService: (s) => teardown.removeService(s),
          removeProjectNetwork: (id) => teardown.removeProjectNetwork(id),
        }
      : null,
    {
      ...options,
      onServicesRemoved: async (removed) => {
        await databases.release(removed.map((s) => s.id));
        await options.onServicesRemoved?.(removed);
      },
    },
  );
  const projects = new ProjectService(deps, removal);
  const services = new ServiceCatalog(deps, env, projects, routing, removal);
  const domains = new DomainService(deps, routing);
  const settings = new SettingsService(deps, live, () => routing.reload());
  const system = new SystemService(settings, {
    deployments: !!runtime,
    reverseProxy: routing.enabled,
    dns: (options.dnsProviders ?? []).length > 0,
  });
  const databaseCatalog = new DatabaseCatalog(
    deps,
    services,
    deployments,
    databases,
    runtime && current ? { engine: runtime.engine, current } : null,
  );
  return {
    system,
    databaseCatalog,
    apiKeys: new ApiKeyService(deps),
    projects,
    services,
    env,
    domains,
    settings,
    dns: new DnsService(deps, domains, settings, options.dnsProviders ?? []),
    deployments,
    runtimeLogs: new RuntimeLogService(deps),
    routing,
    runner,
    databases,
    teardown,
    health: new HealthService(deps, options.runtime?.engine ?? null, routing),
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
export * from './platform/views.js';
export * from './databases/database-views.js';
export type { DeploymentStreamEvent } from './deployments/deployment.service.js';
export type { RuntimeStreamEvent } from './deployments/runtime-log.service.js';
export * from './platform/input-schemas.js';
export {
  createServiceInput,
  updateServiceInput,
  projectInput,
  projectPatchInput,
  type CreateServiceInput,
  type UpdateServiceInput,
  type ProjectInput,
} from './projects/project.inputs.js';
export { settingsInput, type SettingsInput } from './settings/settings.inputs.js';
export { DEPLOYMENT_STATUSES } from './domain/deployment-state.js';
export { DATABASE_ENGINES } from './domain/database-engines.js';
export type { RuntimeDeps } from './deployments/runtime-deps.js';
