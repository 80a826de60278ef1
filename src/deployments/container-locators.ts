import type { ServiceRecord } from '../domain/types.js';
import type { CurrentContainers } from './current-containers.js';

/**
 * A service's current container as the other capabilities look for it: a database's address for its
 * administration, an import's target, the container a backup dumps from or a restore writes to.
 */
export function containerLocators(current: CurrentContainers) {
  return {
    database: {
      async locate(service: ServiceRecord): Promise<{ host: string } | null> {
        const ip = (await current.currentOf(service))?.ip;
        return ip ? { host: ip } : null;
      },
    },
    importTarget: {
      async locate(service: ServiceRecord): Promise<{ containerId: string; host: string } | null> {
        const container = await current.currentOf(service);
        return container?.ip ? { containerId: container.id, host: container.ip } : null;
      },
    },
    backupTarget: {
      async locate(service: ServiceRecord): Promise<{ containerId: string; host: string | null } | null> {
        const container = await current.currentOf(service);
        return container ? { containerId: container.id, host: container.ip ?? null } : null;
      },
    },
  };
}
