import type Docker from 'dockerode';
import type { ScratchDatabase, ScratchDatabaseSpec, ScratchDatabases } from '../../src/index.js';
import { ScratchDocker } from './scratch-docker.js';

/** Drill databases as scratch containers (`<prefix>-drill-<id>`: container, network and volume of that name). */
export class DockerScratchDatabases implements ScratchDatabases {
  private readonly scratch: ScratchDocker;
  private readonly ids = new Map<string, string>();

  constructor(
    docker: Docker,
    instanceId: string,
    private readonly prefix: string,
  ) {
    this.scratch = new ScratchDocker(docker, instanceId, 'drill');
  }

  private name(id: string): string {
    return `${this.prefix}-drill-${id}`;
  }

  async start(spec: ScratchDatabaseSpec, signal: AbortSignal, log: (line: string) => void): Promise<ScratchDatabase> {
    const name = this.name(spec.id);
    await this.scratch.ensureImage(spec.image, signal, log);
    await this.scratch.network(name, signal);
    const { id, ip } = await this.scratch.start(
      {
        name,
        image: spec.image,
        ...(spec.cmd ? { cmd: spec.cmd } : {}),
        env: spec.env,
        network: name,
        mounts: [{ volume: name, target: spec.dataDir }],
      },
      signal,
    );
    this.ids.set(spec.id, id);
    if (!ip) throw new Error(`the scratch database ${name} has no address on its network`);
    log(`Scratch database ${name} started (${spec.image}) on its private network at ${ip}, no port published`);
    return { containerId: id, host: ip };
  }

  async alive(id: string): Promise<{ running: boolean; lastLines: string[] }> {
    const name = this.name(id);
    const state = await this.scratch.state(name);
    return { running: state.running, lastLines: state.running ? [] : await this.scratch.tail(name, 20) };
  }

  async remove(id: string): Promise<void> {
    const name = this.name(id);
    await this.scratch.remove(name);
    await this.scratch.removeNetwork(name);
    await this.scratch.removeVolume(name);
    this.ids.delete(id);
  }

  async sweep(): Promise<string[]> {
    const removed = await this.scratch.sweep();
    // Their volumes carry the containers' names.
    for (const name of removed) if (name.startsWith(`${this.prefix}-drill-`)) await this.scratch.removeVolume(name).catch(() => undefined);
    return removed;
  }
}
