import { LABELS, type ContainerEngine } from '../deployments/container-engine.port.js';
import type { VolumeRuntime } from './volume-runtime.port.js';

/** VolumeRuntime over the container engine: the service's running containers (every replica) by its label. */
export class ContainerVolumeRuntime implements VolumeRuntime {
  constructor(
    private readonly engine: ContainerEngine,
    private readonly graceSeconds: number,
    readonly repoint?: () => Promise<void>,
  ) {}

  async stopContainers(serviceId: string): Promise<string[]> {
    const running = (await this.engine.listContainers({ key: LABELS.service, value: serviceId })).filter((c) => c.running);
    const stopped: string[] = [];
    try {
      for (const container of running) {
        await this.engine.stopContainer(container.id, this.graceSeconds);
        stopped.push(container.id);
      }
    } catch (error) {
      // Half stopped is not a state to leave a service in: those stopped start again.
      await this.startContainers(stopped).catch(() => undefined);
      throw error;
    }
    return stopped;
  }

  async startContainers(ids: string[]): Promise<void> {
    for (const id of ids) await this.engine.startContainer(id);
  }
}
