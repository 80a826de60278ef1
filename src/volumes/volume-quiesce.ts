import type { ServiceRecord } from '../domain/types.js';
import type { ServiceDeps } from '../platform/deps.js';
import type { VolumeRuntime } from './volume-runtime.port.js';

/** A service held stopped while its volume is read or replaced; `resume` starts it again and says how long it was down. */
export interface Quiesced {
  stopped: number;
  resume(): Promise<number>;
}

/**
 * Stops a service's containers for a snapshot or a restore of its volume. The service reads `stopped`
 * meanwhile, so the runtime monitors do not take the stop for a crash; its status comes back with it.
 */
export async function quiesce(deps: ServiceDeps, runtime: VolumeRuntime, service: ServiceRecord): Promise<Quiesced> {
  const startedAt = Date.now();
  await deps.store.projects.updateService(service.id, { status: 'stopped', reachable: false });
  let ids: string[];
  try {
    ids = await runtime.stopContainers(service.id);
  } catch (error) {
    await deps.store.projects.updateService(service.id, { status: service.status, reachable: service.reachable });
    throw error;
  }
  let resumed = false;
  return {
    stopped: ids.length,
    async resume() {
      if (resumed) return 0;
      resumed = true;
      try {
        await runtime.startContainers(ids);
      } finally {
        await deps.store.projects.updateService(service.id, { status: service.status, reachable: service.reachable });
      }
      await runtime.repoint?.().catch(() => undefined);
      return Date.now() - startedAt;
    },
  };
}
