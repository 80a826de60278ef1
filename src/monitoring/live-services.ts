import { databaseEngineOf } from '../domain/database-engines.js';
import { serviceRefOf } from '../domain/events.js';
import { type CurrentContainers, isWeb } from '../deployments/current-containers.js';
import type { RuntimeDeps } from '../deployments/runtime-deps.js';
import type { ServiceDeps } from '../platform/deps.js';
import type { LiveServiceLookup } from './crash-loop-detector.js';
import type { LiveHealthCheck } from './host-monitor.js';

const serviceRef = serviceRefOf;

/**
 * Which exits count, as the deployments table and Docker say it: a container of the service's live
 * deployment (not a rollout's candidate, not one retired after a newer went live), while no
 * deployment of the service runs (a database's previous server is stopped on purpose during one),
 * of a service not stopped through the API.
 */
export function liveServices(deps: ServiceDeps, current: CurrentContainers): LiveServiceLookup {
  return {
    async liveService(exit) {
      const service = await deps.store.projects.getService(exit.serviceId);
      if (!service || service.status === 'stopped' || !exit.deploymentId) return null;
      const live = (await deps.store.deployments.listLive(service.id, 1))[0];
      if (live?.id !== exit.deploymentId) return null;
      const underway = await deps.store.deployments.listByStatus(['queued', 'running']);
      if (underway.some((d) => d.serviceId === service.id && d.status === 'running')) return null;
      return { ...serviceRef(service), engine: databaseEngineOf(service) };
    },
    async running(serviceId) {
      const service = await deps.store.projects.getService(serviceId);
      return !!service && !!(await current.currentOf(service))?.running;
    },
  };
}

/** Each live web service's health check, on its current container's project-network address. */
export function liveHealth(deps: ServiceDeps, runtime: RuntimeDeps, current: CurrentContainers): LiveHealthCheck {
  return {
    async liveWebServices() {
      const picked = await current.pick(await current.ofInstance());
      if (picked.size === 0) return [];
      const services = new Map((await deps.store.projects.listAllServices()).map((s) => [s.id, s]));
      const out: Awaited<ReturnType<LiveHealthCheck['liveWebServices']>> = [];
      for (const [serviceId, container] of picked) {
        const service = services.get(serviceId);
        const ip = container.ip;
        if (!service || !ip || !isWeb(service) || service.status === 'stopped') continue;
        const path = deps.config.deploy.healthPath;
        out.push({
          ...serviceRef(service),
          async check(signal) {
            const status = await runtime.health.http(ip, service.internalPort, path, signal);
            if (status === null) return `no answer on ${path} (port ${service.internalPort})`;
            return status >= 500 ? `${path} answered ${status}` : null;
          },
        });
      }
      return out;
    },
  };
}
