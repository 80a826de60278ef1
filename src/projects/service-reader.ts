import type { ServiceRecord } from '../domain/types.js';
import { assertProjectVisible, type Actor } from '../domain/access.js';
import type { ServiceDeps } from '../platform/deps.js';
import { serviceFor } from '../platform/lookup.js';
import { hostnameScopes } from '../platform/hostname-scopes.js';
import { groupBy } from '../platform/group-by.js';
import { SERVICE_TABLES, VersionedCache } from '../platform/versioned-cache.js';
import type { EnvService } from '../env/env.service.js';
import type { EnvVarView } from '../env/env-views.js';
import { presentDomain, type DomainView } from '../routing/routing-views.js';
import { presentDeployment, type DeploymentView } from '../deployments/deployment-views.js';
import { presentService, type ServiceView } from './project-views.js';
import { hostnameScopeOf } from './service-placement.js';
import { holderOf, holdersOf } from '../cluster/service-holders.js';

export interface ServiceOverview {
  service: ServiceView;
  deployments: DeploymentView[];
  env: EnvVarView[];
  domains: DomainView[];
  publicIp: string;
  /** The deployment serving now (the newest that went live), or null before the first. */
  liveDeploymentId: string | null;
}

const OVERVIEW_DEPLOYMENTS = 50;

/** Services as the API shows them: one, a list (two queries whatever their number), and a service's overview. */
export class ServiceReader {
  private readonly overviewCache = new VersionedCache<string, { projectId: string; overview: ServiceOverview }>(() =>
    this.deps.store.versionOf(SERVICE_TABLES),
  );

  constructor(
    private readonly deps: ServiceDeps,
    private readonly env: EnvService,
  ) {}

  async overview(actor: Actor, serviceId: string): Promise<ServiceOverview> {
    const cached = this.overviewCache.get(serviceId);
    if (cached) {
      assertProjectVisible(actor, cached.projectId, 'Service', serviceId);
      return cached.overview;
    }
    const version = this.deps.store.versionOf(SERVICE_TABLES);
    const service = await serviceFor(this.deps.store, actor, serviceId);
    const [scope, domains, deployments, env, live, polls, holder] = await Promise.all([
      hostnameScopeOf(this.deps.store, service),
      this.deps.store.domains.list([service.id]),
      this.deps.store.deployments.list(service.id, OVERVIEW_DEPLOYMENTS),
      this.env.listForService(service),
      this.deps.store.deployments.listLive(service.id, 1),
      this.deps.store.gitHooks.pollsOf([service.id]),
      holderOf(this.deps.store, service),
    ]);
    const overview = {
      service: presentService(
        service,
        { hostnameScope: scope, domains, secrets: this.deps.secrets, poll: polls[0] ?? null, holder },
        this.deps.config,
      ),
      deployments: deployments.map(presentDeployment),
      env,
      domains: domains.map(presentDomain),
      publicIp: this.deps.config.publicIp,
      liveDeploymentId: live[0]?.id ?? null,
    };
    this.overviewCache.set(service.id, { projectId: service.projectId, overview }, version);
    return overview;
  }

  /** One service as the overview shows it. */
  async get(actor: Actor, serviceId: string): Promise<ServiceView> {
    return (await this.overview(actor, serviceId)).service;
  }

  async view(serviceId: string): Promise<ServiceView> {
    const service = (await this.deps.store.projects.getService(serviceId))!;
    const [scope, domains, polls, holder] = await Promise.all([
      hostnameScopeOf(this.deps.store, service),
      this.deps.store.domains.list([service.id]),
      this.deps.store.gitHooks.pollsOf([service.id]),
      holderOf(this.deps.store, service),
    ]);
    return presentService(
      service,
      { hostnameScope: scope, domains, secrets: this.deps.secrets, poll: polls[0] ?? null, holder },
      this.deps.config,
    );
  }

  /** Services as listed, two queries for the domains and hostname scopes whatever their number. */
  async views(services: ServiceRecord[]): Promise<ServiceView[]> {
    if (services.length === 0) return [];
    const [scopes, domains, polls, holders] = await Promise.all([
      hostnameScopes(this.deps.store, [...new Set(services.map((s) => s.projectId))]),
      this.deps.store.domains.list(services.map((s) => s.id)),
      this.deps.store.gitHooks.pollsOf(services.filter((s) => s.pollIntervalSeconds !== null).map((s) => s.id)),
      holdersOf(this.deps.store, services),
    ]);
    const domainsOf = groupBy(domains, (d) => d.serviceId);
    const pollOf = new Map(polls.map((p) => [p.serviceId, p]));
    return services.map((s) =>
      presentService(
        s,
        {
          hostnameScope: scopes.get(s.environmentId) ?? '',
          domains: domainsOf.get(s.id) ?? [],
          secrets: this.deps.secrets,
          poll: pollOf.get(s.id) ?? null,
          holder: holders.get(s.id) ?? null,
        },
        this.deps.config,
      ),
    );
  }
}
