import type { ProxyResult, RouteTarget } from '../ports/reverse-proxy.port.js';
import type { ServiceDeps } from './deps.js';

/**
 * Builds the whole routing table from the database and hands it to the reverse proxy.
 * Always the whole table: a reload after any change converges, whatever was lost before.
 */
export class RoutingService {
  constructor(private readonly deps: ServiceDeps) {}

  async routes(): Promise<RouteTarget[]> {
    const domains = await this.deps.store.listDomains(null);
    const services = new Map((await this.deps.store.listAllServices()).map((s) => [s.id, s]));
    const routes: RouteTarget[] = [];
    for (const domain of domains) {
      const service = services.get(domain.serviceId);
      if (!service || service.runtimeMode === 'worker') continue;
      routes.push({ hostname: domain.hostname, serviceId: service.id, upstream: `127.0.0.1:${service.hostPort}` });
    }
    return routes;
  }

  /** Never throws: a proxy that is down must not lose the user's saved change. */
  async reload(): Promise<ProxyResult> {
    try {
      return await this.deps.proxy.apply(await this.routes(), AbortSignal.timeout(10_000));
    } catch (error) {
      return { ok: false, detail: `proxy reload failed: ${error instanceof Error ? error.message : String(error)}` };
    }
  }
}
