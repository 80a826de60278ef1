import { ConflictError, NotFoundError } from '../domain/errors.js';
import { databaseEngineOf } from '../domain/database-engines.js';
import { newId } from '../domain/ids.js';
import type { DomainRecord, ServiceRecord } from '../domain/types.js';
import { normalizeHostname } from '../domain/validation.js';
import { assertWrite, canSeeProject, type Actor } from '../domain/access.js';
import type { ServiceDeps } from '../platform/deps.js';
import { projectFor, serviceFor } from '../platform/lookup.js';
import type { RoutingService } from './routing.service.js';
import { presentDomain } from './routing-views.js';
import type { DomainView, ProxyResultView } from './routing-views.js';

/** Hostnames of services. Every change is saved first, then the proxy is reloaded and its result reported. */
export class DomainService {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly routing: RoutingService,
  ) {}

  async create(actor: Actor, serviceId: string, hostnameInput: string): Promise<{ domain: DomainView; proxy: ProxyResultView }> {
    assertWrite(actor);
    const service = await serviceFor(this.deps.store, actor, serviceId);
    assertRoutable(service);
    const hostname = normalizeHostname(hostnameInput);
    await this.assertHostnameFree(hostname, service.id);
    const now = this.deps.clock.now();
    const domain: DomainRecord = { id: newId(), serviceId: service.id, hostname, status: 'active', createdAt: now, updatedAt: now };
    await this.deps.store.transaction(async (tx) => {
      await tx.domains.insert(domain);
      await tx.projects.updateService(service.id, { preferredDomain: service.preferredDomain ?? hostname, updatedAt: now });
    });
    return { domain: presentDomain(domain), proxy: await this.routing.reload() };
  }

  async update(actor: Actor, serviceId: string, domainId: string, hostnameInput: string): Promise<ProxyResultView> {
    assertWrite(actor);
    const { service, domain } = await this.load(actor, serviceId, domainId);
    const hostname = normalizeHostname(hostnameInput);
    if (hostname !== domain.hostname) {
      await this.assertHostnameFree(hostname, service.id);
      const now = this.deps.clock.now();
      await this.deps.store.transaction(async (tx) => {
        await tx.domains.update(domain.id, { hostname, updatedAt: now });
        if (service.preferredDomain === domain.hostname)
          await tx.projects.updateService(service.id, { preferredDomain: hostname, updatedAt: now });
      });
    }
    return this.routing.reload();
  }

  async delete(actor: Actor, serviceId: string, domainId: string): Promise<ProxyResultView> {
    assertWrite(actor);
    const { service, domain } = await this.load(actor, serviceId, domainId);
    const now = this.deps.clock.now();
    await this.deps.store.transaction(async (tx) => {
      await tx.domains.delete(domain.id);
      if (service.preferredDomain === domain.hostname) {
        const next = (await tx.domains.list([service.id]))[0]?.hostname ?? null;
        await tx.projects.updateService(service.id, { preferredDomain: next, updatedAt: now });
      }
    });
    return this.routing.reload();
  }

  /** The domains of every service of a project. */
  async listForProject(actor: Actor, projectId: string): Promise<DomainView[]> {
    const project = await projectFor(this.deps.store, actor, projectId);
    const services = await this.deps.store.projects.listServices([project.id]);
    return (await this.deps.store.domains.list(services.map((s) => s.id))).map(presentDomain);
  }

  /** Adds a domain to a service named in the body, which must belong to the project of the path. */
  async createInProject(
    actor: Actor,
    projectId: string,
    serviceId: string,
    hostname: string,
  ): Promise<{ domain: DomainView; proxy: ProxyResultView }> {
    assertWrite(actor);
    const project = await projectFor(this.deps.store, actor, projectId);
    const service = await this.deps.store.projects.getService(serviceId);
    if (!service || service.projectId !== project.id) throw new NotFoundError('Service', serviceId);
    return this.create(actor, service.id, hostname);
  }

  /** Removes a domain named by id alone. */
  async deleteById(actor: Actor, domainId: string): Promise<ProxyResultView> {
    assertWrite(actor);
    const domain = await this.deps.store.domains.get(domainId);
    const service = domain ? await this.deps.store.projects.getService(domain.serviceId) : null;
    if (!domain || !service || !canSeeProject(actor, service.projectId)) throw new NotFoundError('Domain', domainId);
    return this.delete(actor, service.id, domain.id);
  }

  async get(actor: Actor, serviceId: string, domainId: string): Promise<{ service: ServiceRecord; domain: DomainRecord }> {
    return this.load(actor, serviceId, domainId);
  }

  private async load(actor: Actor, serviceId: string, domainId: string): Promise<{ service: ServiceRecord; domain: DomainRecord }> {
    const service = await serviceFor(this.deps.store, actor, serviceId);
    const domain = await this.deps.store.domains.get(domainId);
    if (!domain || domain.serviceId !== service.id) throw new NotFoundError('Domain', domainId);
    return { service, domain };
  }

  private async assertHostnameFree(hostname: string, serviceId: string): Promise<void> {
    if (await this.deps.store.domains.getByHostname(hostname)) {
      throw new ConflictError(`The hostname ${hostname} is already in use`, { field: 'hostname' });
    }
    // Another service's generated hostname is taken too; a service may name its own.
    const generated = (await this.routing.table()).routes.find((r) => r.hostname === hostname && r.serviceId !== serviceId);
    if (generated) throw new ConflictError(`The hostname ${hostname} is the generated hostname of another service`, { field: 'hostname' });
  }
}

function assertRoutable(service: ServiceRecord): void {
  if (service.runtimeMode === 'worker') throw new ConflictError('Workers do not accept custom domains', { field: 'hostname' });
  if (databaseEngineOf(service)) {
    throw new ConflictError('Database services are reached through databasePublicHostname, not custom domains', { field: 'hostname' });
  }
}
