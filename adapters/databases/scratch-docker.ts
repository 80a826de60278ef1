import type Docker from 'dockerode';

const CALL_TIMEOUT_MS = 60_000;
const PULL_TIMEOUT_MS = 30 * 60_000;

/** Labels of scratch containers, networks and volumes: never the deployments' (their reconcile would take them for strays). */
export const SCRATCH_LABELS = {
  /** What made it: `drill`, `pitr`, `volume`. */
  kind: 'slipway.scratch',
  /** Which installation made it. */
  instance: 'slipway.scratch-instance',
} as const;

export interface ScratchContainerSpec {
  name: string;
  image: string;
  /** Replaces the image's entrypoint (a helper runs `sleep` whatever the image starts). */
  entrypoint?: string[];
  cmd?: string[];
  env?: Record<string, string>;
  network: string;
  mounts: Array<{ volume: string; target: string; readOnly?: boolean }>;
  user?: string;
}

const timeout = (signal?: AbortSignal, ms = CALL_TIMEOUT_MS) =>
  signal ? AbortSignal.any([signal, AbortSignal.timeout(ms)]) : AbortSignal.timeout(ms);
const statusOf = (error: unknown) => (error as { statusCode?: number }).statusCode;

/**
 * Containers that exist for one piece of work (a drill's database, a recovery's server, a helper that
 * tars a volume): on a network of their own (bridge, no published port, no alias, no domain), labelled
 * as scratch for this installation, and removed with their network when the work ends; `sweep` removes
 * what a stopped platform left.
 */
export class ScratchDocker {
  constructor(
    readonly docker: Docker,
    private readonly instanceId: string,
    private readonly kind: string,
  ) {}

  private get labels(): Record<string, string> {
    return { [SCRATCH_LABELS.kind]: this.kind, [SCRATCH_LABELS.instance]: this.instanceId };
  }

  /** A bridge network for one piece of work; reachable from the host (its checks), not from other networks. */
  async network(name: string, signal?: AbortSignal): Promise<void> {
    try {
      await this.docker.createNetwork({
        Name: name,
        Driver: 'bridge',
        CheckDuplicate: true,
        Labels: this.labels,
        Options: { 'com.docker.network.bridge.enable_icc': 'true' },
        abortSignal: timeout(signal),
      } as never);
    } catch (error) {
      if (statusOf(error) !== 409) throw error;
    }
  }

  /** Pulls the image unless the engine has it. */
  async ensureImage(image: string, signal?: AbortSignal, log?: (line: string) => void): Promise<void> {
    try {
      await this.docker.getImage(image).inspect({ abortSignal: timeout(signal) } as never);
      return;
    } catch (error) {
      if (statusOf(error) !== 404) throw error;
    }
    log?.(`Pulling ${image}`);
    const stream = (await this.docker.pull(image, { abortSignal: timeout(signal, PULL_TIMEOUT_MS) })) as NodeJS.ReadableStream;
    await new Promise<void>((resolve, reject) =>
      this.docker.modem.followProgress(stream, (error: Error | null) => (error ? reject(error) : resolve())),
    );
  }

  /** Creates and starts a container; resolves with its id and its address on its network. */
  async start(spec: ScratchContainerSpec, signal?: AbortSignal): Promise<{ id: string; ip: string | null }> {
    const container = await this.docker.createContainer({
      name: spec.name,
      Image: spec.image,
      ...(spec.entrypoint ? { Entrypoint: spec.entrypoint } : {}),
      ...(spec.cmd ? { Cmd: spec.cmd } : {}),
      ...(spec.user ? { User: spec.user } : {}),
      Env: Object.entries(spec.env ?? {}).map(([k, v]) => `${k}=${v}`),
      Labels: this.labels,
      Tty: false,
      HostConfig: {
        Init: true,
        RestartPolicy: { Name: 'no' },
        NetworkMode: spec.network,
        Mounts: spec.mounts.map((m) => ({ Type: 'volume', Source: m.volume, Target: m.target, ReadOnly: !!m.readOnly })),
        LogConfig: { Type: 'json-file', Config: { 'max-size': '10m', 'max-file': '1' } },
      },
      abortSignal: timeout(signal),
    } as Docker.ContainerCreateOptions);
    await container.start({ abortSignal: timeout(signal) } as never);
    return { id: container.id, ip: await this.ipOf(container.id, spec.network) };
  }

  async ipOf(id: string, network: string): Promise<string | null> {
    const info = (await this.docker
      .getContainer(id)
      .inspect({ abortSignal: timeout() } as never)) as unknown as Docker.ContainerInspectInfo;
    return info.NetworkSettings.Networks[network]?.IPAddress || null;
  }

  /** Whether it runs, and how it ended. */
  async state(id: string): Promise<{ running: boolean; exitCode: number | null }> {
    const info = (await this.docker
      .getContainer(id)
      .inspect({ abortSignal: timeout() } as never)) as unknown as Docker.ContainerInspectInfo;
    return { running: info.State.Running, exitCode: info.State.Running ? null : info.State.ExitCode };
  }

  /** Its last lines of output (both streams, as text). */
  async tail(id: string, lines = 40): Promise<string[]> {
    const raw = (await this.docker.getContainer(id).logs({
      stdout: true,
      stderr: true,
      tail: lines,
      follow: false,
      abortSignal: timeout(),
    } as never)) as unknown as Buffer;
    return demuxText(raw)
      .split('\n')
      .filter((line) => line.trim());
  }

  /** Stops within `graceSeconds` (the image's stop signal: a clean shutdown). */
  async stop(id: string, graceSeconds: number): Promise<void> {
    try {
      await this.docker.getContainer(id).stop({ t: graceSeconds, abortSignal: timeout(undefined, (graceSeconds + 60) * 1000) } as never);
    } catch (error) {
      if (statusOf(error) !== 304 && statusOf(error) !== 404) throw error;
    }
  }

  async remove(idOrName: string): Promise<void> {
    try {
      await this.docker.getContainer(idOrName).remove({ force: true, abortSignal: timeout() } as never);
    } catch (error) {
      if (statusOf(error) !== 404) throw error;
    }
  }

  async removeNetwork(name: string): Promise<void> {
    try {
      await this.docker.getNetwork(name).remove({ abortSignal: timeout() } as never);
    } catch (error) {
      if (statusOf(error) !== 404) throw error;
    }
  }

  async removeVolume(name: string): Promise<void> {
    try {
      await this.docker.getVolume(name).remove({ abortSignal: timeout() } as never);
    } catch (error) {
      if (statusOf(error) !== 404) throw error;
    }
  }

  /** Containers, then networks, of this kind and installation: what a stopped platform left. */
  async sweep(): Promise<string[]> {
    const filters = { label: [`${SCRATCH_LABELS.kind}=${this.kind}`, `${SCRATCH_LABELS.instance}=${this.instanceId}`] };
    const removed: string[] = [];
    const containers = (await this.docker.listContainers({
      all: true,
      filters,
      abortSignal: timeout(),
    } as never)) as unknown as Docker.ContainerInfo[];
    for (const c of containers) {
      await this.remove(c.Id);
      removed.push(c.Names[0]?.replace(/^\//, '') ?? c.Id);
    }
    const networks = (await this.docker.listNetworks({
      filters,
      abortSignal: timeout(),
    } as never)) as unknown as Docker.NetworkInspectInfo[];
    for (const n of networks) {
      await this.removeNetwork(n.Id);
      removed.push(n.Name);
    }
    return removed;
  }
}

/** Docker's multiplexed log frames (8-byte headers) as text; plain text when the stream is not framed. */
function demuxText(raw: Buffer): string {
  const parts: Buffer[] = [];
  let offset = 0;
  while (offset + 8 <= raw.length) {
    const kind = raw[offset]!;
    if (kind > 2 || raw[offset + 1] !== 0) return raw.toString('utf8');
    const size = raw.readUInt32BE(offset + 4);
    parts.push(raw.subarray(offset + 8, offset + 8 + size));
    offset += 8 + size;
  }
  return Buffer.concat(parts).toString('utf8');
}
