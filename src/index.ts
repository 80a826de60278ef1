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
import { DeployRunner } from './deployments/deploy-runner.js';
import { ServiceTeardown } from './deployments/service-teardown.js';
import { TrafficSlots } from './routing/traffic-slots.js';
import { DnsService } from './routing/dns.service.js';
import { SettingsService } from './settings/settings.service.js';
import { HealthService } from './health/health.service.js';
import type { DnsProvider } from './routing/dns-provider.port.js';
import type { RuntimeDeps } from './deployments/runtime-deps.js';

export interface ServicesOptions {
  /** Called after services (of a deleted project, or one deleted service) are gone from the database. */
  onServicesRemoved?: (services: ServiceRecord[]) => Promise<void>;
  /** Docker, git, host ports and health checks: with them, queued deployments run. */
  runtime?: RuntimeDeps;
  /** The DNS providers this installation can talk to. */
  dnsProviders?: DnsProvider[];
  log?: (message: string, extra?: Record<string, unknown>) => void;
}

/** The use cases, wired to their ports: everything the routers need, nothing they should not see. */
export function createServices(deps: ServiceDeps, options: ServicesOptions = {}) {
  // Without a runtime nothing runs, so there are no containers to wait for before routes load.
  const routing = new RoutingService(deps, { upstreamsKnown: !options.runtime }, options.log);
  const env = new EnvService(deps);
  const deployments = new DeploymentService(deps);
  const runtime = options.runtime;
  const slots = runtime?.gate && routing.enabled ? new TrafficSlots(runtime.engine, runtime.gate, deps.config) : null;
  const runner = runtime ? new DeployRunner(deps, runtime, deployments, env, routing, slots, options.log) : null;
  const teardown = runtime && runner ? new ServiceTeardown(deps, runtime, routing, slots, (ids) => runner.stopDeploymentsOf(ids)) : null;
  const removal = {
    before: async (removed: ServiceRecord[]) => {
      if (runner) await runner.stopDeploymentsOf(removed.map((s) => s.id));
    },
    // The records are gone by now: a runtime leftover is logged (and collected later), never a failed delete.
    after: async (removed: ServiceRecord[]) => {
      if (teardown) {
        for (const service of removed) await teardown.removeService(service).catch((error: Error) => options.log?.('service cleanup incomplete', { serviceId: service.id, error: error.message }));
        for (const projectId of new Set(removed.map((s) => s.projectId))) {
          await teardown.removeProjectNetwork(projectId).catch((error: Error) => options.log?.('project network not removed', { projectId, error: error.message }));
        }
      }
      await options.onServicesRemoved?.(removed);
    },
  };
  const projects = new ProjectService(deps, routing, removal);
  const services = new ServiceCatalog(deps, env, projects, routing, removal);
  const domains = new DomainService(deps, routing);
  const settings = new SettingsService(deps, () => routing.reload());
  return {
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
export type { ErrorCode } from './domain/errors.js';
export * from './platform/views.js';
export type { DeploymentStreamEvent } from './deployments/deployment.service.js';
export type { RuntimeStreamEvent } from './deployments/runtime-log.service.js';
export type { CreateServiceInput, UpdateServiceInput } from './projects/service-catalog.service.js';
export type { SettingsInput } from './settings/settings.service.js';
export { DEPLOYMENT_STATUSES } from './domain/deployment-state.js';
export { DATABASE_ENGINES } from './domain/database-engines.js';
export type { RuntimeDeps } from './deployments/runtime-deps.js';
