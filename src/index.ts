import type { ServiceRecord } from './domain/types.js';
import { ApiKeyService } from './services/api-key.service.js';
import type { ServiceDeps } from './services/deps.js';
import { DeploymentService } from './services/deployment.service.js';
import { DomainService } from './services/domain.service.js';
import { EnvService } from './services/env.service.js';
import { ProjectService } from './services/project.service.js';
import { RoutingService } from './services/routing.service.js';
import { RuntimeLogService } from './services/runtime-log.service.js';
import { ServiceCatalog } from './services/service-catalog.service.js';
import { DeployRunner } from './services/deploy-runner.js';
import { DnsService } from './services/dns.service.js';
import { SettingsService } from './services/settings.service.js';
import { HealthService } from './services/health.service.js';
import type { DnsProvider } from './ports/dns-provider.port.js';
import type { RuntimeDeps } from './services/runtime-deps.js';

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
  const runner = options.runtime ? new DeployRunner(deps, options.runtime, deployments, env, routing, options.log) : null;
  const removal = {
    before: async (removed: ServiceRecord[]) => {
      if (runner) await runner.stopDeploymentsOf(removed.map((s) => s.id));
    },
    // The records are gone by now: a runtime leftover is logged (and collected later), never a failed delete.
    after: async (removed: ServiceRecord[]) => {
      if (runner) {
        for (const service of removed) await runner.removeService(service).catch((error: Error) => options.log?.('service cleanup incomplete', { serviceId: service.id, error: error.message }));
        for (const projectId of new Set(removed.map((s) => s.projectId))) {
          await runner.removeProjectNetwork(projectId).catch((error: Error) => options.log?.('project network not removed', { projectId, error: error.message }));
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
    health: new HealthService(deps, options.runtime?.engine ?? null, routing),
  };
}

export type Services = ReturnType<typeof createServices>;

export type { Actor } from './services/access.js';
export type { ServiceDeps } from './services/deps.js';
export type { PlatformConfig } from './services/platform-config.js';
export { DEFAULT_PLATFORM_CONFIG } from './services/platform-config.js';
export { DomainError } from './domain/errors.js';
export type { ErrorCode } from './domain/errors.js';
export * from './services/views.js';
export type { DeploymentStreamEvent } from './services/deployment.service.js';
export type { RuntimeStreamEvent } from './services/runtime-log.service.js';
export type { CreateServiceInput, UpdateServiceInput } from './services/service-catalog.service.js';
export type { SettingsInput } from './services/settings.service.js';
export { DEPLOYMENT_STATUSES } from './domain/deployment-state.js';
export { DATABASE_ENGINES } from './domain/database-engines.js';
export type { RuntimeDeps } from './services/runtime-deps.js';
