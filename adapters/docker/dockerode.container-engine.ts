import { callSignal } from '../../src/platform/call-signal.js';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type Docker from 'dockerode';
import tar from 'tar-fs';
import {
  LABELS,
  type BuildRequest,
  type ContainerEngine,
  type ContainerState,
  type DaemonRequest,
  type LineSink,
  type NetworkState,
  type RunRequest,
} from '../../src/deployments/container-engine.port.js';
import { DockerFrameParser } from './docker-log-frames.js';

const CALL_TIMEOUT_MS = 30_000;
const BUILD_TIMEOUT_MS = 30 * 60_000;

interface ProgressEvent {
  stream?: string;
  status?: string;
  id?: string;
  progress?: string;
  error?: string;
  errorDetail?: { message?: string };
}

/** The Docker Engine through dockerode; every call has a timeout and honours the caller's signal. */
export class DockerodeContainerEngine implements ContainerEngine {
  private readonly networkLocks = new Map<string, Promise<void>>();

  constructor(private readonly docker: Docker) {}

  async ping(signal?: AbortSignal): Promise<void> {
    await this.docker.ping({ abortSignal: timeout(signal) } as never);
  }

  async imageExists(ref: string): Promise<boolean> {
    try {
      await this.docker.getImage(ref).inspect({ abortSignal: timeout() } as never);
      return true;
    } catch (error) {
      if (statusOf(error) === 404) return false;
      throw error;
    }
  }

  async pullImage(ref: string, onLine: LineSink, signal: AbortSignal): Promise<void> {
    const call = callSignal(signal, BUILD_TIMEOUT_MS);
    try {
      const stream = (await this.docker.pull(ref, { abortSignal: call.signal })) as NodeJS.ReadableStream;
      const seen = new Set<string>();
      await this.follow(stream, signal, (event) => {
        // Layer progress bars repeat many times a second: keep each distinct status once.
        const line = [event.id, event.status].filter(Boolean).join(': ');
        if (line && !seen.has(line)) {
          seen.add(line);
          onLine(line, 'stdout');
        }
      });
    } finally {
      call.release();
    }
  }

  async buildImage(request: BuildRequest): Promise<void> {
    const context = tar.pack(request.contextDir, { ignore: (name) => name.split('/').includes('.git') });
    const call = callSignal(request.signal, BUILD_TIMEOUT_MS);
    try {
      const stream = (await this.docker.buildImage(
        context as unknown as NodeJS.ReadableStream,
        {
          t: request.tag,
          dockerfile: request.dockerfile,
          buildargs: request.buildArgs,
          rm: true,
          forcerm: true,
          abortSignal: call.signal,
        } as Docker.ImageBuildOptions,
      )) as NodeJS.ReadableStream;
      await this.follow(stream, request.signal, (event) => {
        if (event.stream) {
          for (const line of event.stream.split('\n')) if (line.trim()) request.onLine(line.replace(/\r$/, ''), 'stdout');
        } else if (event.status) {
          request.onLine([event.id, event.status].filter(Boolean).join(': '), 'stdout');
        }
      });
    } finally {
      call.release();
    }
  }

  /**
   * One check-and-create at a time per name: Docker's own duplicate check is not atomic, and two
   * first deployments of a project would make two networks of one name (then every run is ambiguous).
   */
  ensureNetwork(name: string, labels: Record<string, string>): Promise<void> {
    const previous = this.networkLocks.get(name) ?? Promise.resolve();
    const next = previous.catch(() => {}).then(() => this.createNetworkOnce(name, labels));
    this.networkLocks.set(name, next);
    return next.finally(() => {
      if (this.networkLocks.get(name) === next) this.networkLocks.delete(name);
    });
  }

  private async createNetworkOnce(name: string, labels: Record<string, string>): Promise<void> {
    if ((await this.networksNamed(name)).length > 0) return;
    try {
      await this.docker.createNetwork({
        Name: name,
        Driver: 'bridge',
        Labels: labels,
        CheckDuplicate: true,
        abortSignal: timeout(),
      } as never);
    } catch (error) {
      if (statusOf(error) !== 409) throw error;
    }
  }

  async ensureSlotNetwork(name: string, labels: Record<string, string>, candidates: string[]): Promise<string> {
    const previous = this.networkLocks.get(name) ?? Promise.resolve();
    const next = previous.catch(() => {}).then(() => this.createSlotNetworkOnce(name, labels, candidates));
    // Settled either way: a refused network is the caller's to report, never an unhandled rejection (which ends the process).
    this.networkLocks.set(
      name,
      next.then(
        () => {},
        () => {},
      ),
    );
    return next;
  }

  private async createSlotNetworkOnce(name: string, labels: Record<string, string>, candidates: string[]): Promise<string> {
    const existing = (await this.networksNamed(name))[0];
    if (existing) {
      const found = existing.IPAM?.Config?.[0]?.Subnet;
      if (!found) throw new Error(`network ${name} exists without a subnet of its own; remove it (docker network rm ${name})`);
      return found;
    }
    let lastError: unknown = null;
    for (const candidate of candidates) {
      try {
        await this.docker.createNetwork({
          Name: name,
          Driver: 'bridge',
          Labels: labels,
          CheckDuplicate: true,
          IPAM: { Driver: 'default', Config: [{ Subnet: candidate }] },
          Options: { 'com.docker.network.bridge.enable_icc': 'false' },
          abortSignal: timeout(),
        } as never);
        return candidate;
      } catch (error) {
        lastError = error;
        if (statusOf(error) === 409 && (await this.networksNamed(name)).length > 0)
          return this.createSlotNetworkOnce(name, labels, candidates);
        if (!/overlap/i.test((error as Error).message)) throw error;
      }
    }
    throw new Error(
      `no free subnet for the slot network ${name}: ${(lastError as Error | null)?.message ?? 'every candidate is named by live packet-filter rules'} (set SLOT_SUBNET)`,
    );
  }

  async listNetworks(label: { key: string; value?: string }): Promise<NetworkState[]> {
    const found: Docker.NetworkInspectInfo[] = await this.docker.listNetworks({
      filters: { label: [label.value === undefined ? label.key : `${label.key}=${label.value}`] },
      abortSignal: timeout(),
    } as Docker.NetworkListOptions);
    return found.map((n) => ({ name: n.Name, labels: n.Labels ?? {}, subnet: n.IPAM?.Config?.[0]?.Subnet ?? null }));
  }

  /** Exact-name matches: Docker's name filter also matches substrings. */
  private async networksNamed(name: string): Promise<Docker.NetworkInspectInfo[]> {
    const found: Docker.NetworkInspectInfo[] = await this.docker.listNetworks({
      filters: { name: [name] },
      abortSignal: timeout(),
    } as Docker.NetworkListOptions);
    return found.filter((n) => n.Name === name);
  }

  /**
   * `published`: the container's port published on that address with a port the engine picks (how the platform
   * reaches a database on another server). `beforeStart`: a step on the created container before it starts.
   */
  async runContainer(
    request: RunRequest,
    extra: { published?: { port: number; hostIp: string }; beforeStart?: (containerId: string) => Promise<void> } = {},
  ): Promise<ContainerState> {
    const published = extra.published;
    const container = await this.docker.createContainer({
      name: request.name,
      Image: request.image,
      Env: Object.entries(request.env).map(([k, v]) => `${k}=${v}`),
      ...(request.cmd ? { Cmd: request.cmd } : {}),
      Labels: request.labels,
      Tty: false,
      ...(published ? { ExposedPorts: { [`${published.port}/tcp`]: {} } } : {}),
      HostConfig: {
        Init: true,
        RestartPolicy: { Name: 'no' },
        NetworkMode: request.network,
        ...(published ? { PortBindings: { [`${published.port}/tcp`]: [{ HostIp: published.hostIp, HostPort: '' }] } } : {}),
        Mounts: request.volumes.map((v) => volumeMount(v, request.labels)),
        LogConfig: { Type: 'json-file', Config: { 'max-size': '10m', 'max-file': '3' } },
        ...hostLimits(request.limits),
      },
      NetworkingConfig: { EndpointsConfig: { [request.network]: { Aliases: request.aliases } } },
      abortSignal: timeout(request.signal),
    } as Docker.ContainerCreateOptions);
    // A second network can only be joined after creation (API < 1.44), and before start the address is not yet in use.
    if (request.slot) {
      await this.docker.getNetwork(request.slot.network).connect({
        Container: container.id,
        EndpointConfig: { IPAMConfig: { IPv4Address: request.slot.ip } },
        abortSignal: timeout(request.signal),
      } as never);
    }
    if (request.files?.length) await this.putOwnedFiles(container, request.files, request.signal);
    if (extra.beforeStart) await extra.beforeStart(container.id);
    await container.start({ abortSignal: timeout(request.signal) } as never);
    const state = await this.inspect(container.id);
    if (!state) throw new Error(`container ${request.name} vanished right after it started`);
    return state;
  }

  /**
   * Files into a created container, owned by a user of its image: the numeric ids are read from the
   * image's own /etc/passwd (they differ between images: 999 in Debian's, 70 in Alpine's postgres),
   * since an archive carries numbers, not names. Files of one directory go in one archive.
   */
  private async putOwnedFiles(container: Docker.Container, files: NonNullable<RunRequest['files']>, signal: AbortSignal): Promise<void> {
    const passwd = await this.readFileOf(container, '/etc/passwd', signal);
    const owners = new Map<string, { uid: number; gid: number }>();
    for (const line of passwd.split('\n')) {
      const [name, , uid, gid] = line.split(':');
      if (name && uid && gid) owners.set(name, { uid: Number(uid), gid: Number(gid) });
    }
    const byDir = new Map<string, typeof files>();
    for (const file of files) byDir.set(path.posix.dirname(file.path), [...(byDir.get(path.posix.dirname(file.path)) ?? []), file]);
    for (const [dir, group] of byDir) {
      const owner = owners.get(group[0]!.owner);
      if (!owner) throw new Error(`the image has no user ${group[0]!.owner}`);
      const scratch = await mkdtemp(path.join(tmpdir(), 'slipway-files-'));
      try {
        const base = path.posix.basename(dir);
        await mkdir(path.join(scratch, base), { mode: 0o755 });
        for (const file of group)
          await writeFile(path.join(scratch, base, path.posix.basename(file.path)), file.content, { mode: file.mode });
        const modes = new Map(group.map((f) => [`${base}/${path.posix.basename(f.path)}`, f.mode]));
        const archive = tar.pack(scratch, {
          entries: [base, ...group.map((f) => `${base}/${path.posix.basename(f.path)}`)],
          map: (header) => ({
            ...header,
            uid: owner.uid,
            gid: owner.gid,
            mode: header.type === 'directory' ? 0o755 : (modes.get(header.name.replace(/\/$/, '')) ?? 0o600),
          }),
        });
        await container.putArchive(
          archive as unknown as NodeJS.ReadableStream,
          { path: path.posix.dirname(dir), abortSignal: timeout(signal) } as never,
        );
      } finally {
        await rm(scratch, { recursive: true, force: true });
      }
    }
  }

  /** One small text file of a (created or running) container, read from the archive Docker hands out. */
  private async readFileOf(container: Docker.Container, file: string, signal: AbortSignal): Promise<string> {
    const stream = (await container.getArchive({ path: file, abortSignal: timeout(signal) } as never)) as NodeJS.ReadableStream;
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(chunk as Buffer);
    const archive = Buffer.concat(chunks);
    // A tar of one regular file: a 512-byte header (size in octal at 124), then the content.
    const size = Number.parseInt(archive.subarray(124, 136).toString('ascii').replace(/\0.*$/, '').trim(), 8);
    return archive.subarray(512, 512 + size).toString('utf8');
  }

  async runDaemon(request: DaemonRequest): Promise<ContainerState> {
    const container = await this.docker.createContainer({
      name: request.name,
      Image: request.image,
      Cmd: request.cmd,
      Env: Object.entries(request.env).map(([k, v]) => `${k}=${v}`),
      Labels: request.labels,
      Tty: false,
      HostConfig: {
        Init: true,
        RestartPolicy: { Name: 'unless-stopped' },
        NetworkMode: 'host',
        Mounts: [
          ...request.volumes.map((v) => volumeMount(v, request.labels)),
          ...(request.binds ?? []).map((b) => ({ Type: 'bind', Source: b.source, Target: b.target, ReadOnly: b.readOnly })),
        ],
        LogConfig: { Type: 'json-file', Config: { 'max-size': '10m', 'max-file': '3' } },
      },
      abortSignal: timeout(request.signal),
    } as Docker.ContainerCreateOptions);
    for (const file of request.files) await this.putFile(container, file, request.signal);
    await container.start({ abortSignal: timeout(request.signal) } as never);
    const state = await this.inspect(container.id);
    if (!state) throw new Error(`container ${request.name} vanished right after it started`);
    return state;
  }

  /** One file into a created container: packed alone, so no directory entry changes the image's modes. */
  private async putFile(container: Docker.Container, file: { path: string; content: string }, signal: AbortSignal): Promise<void> {
    const dir = await mkdtemp(path.join(tmpdir(), 'slipway-file-'));
    try {
      const name = path.posix.basename(file.path);
      await writeFile(path.join(dir, name), file.content, { mode: 0o644 });
      const archive = tar.pack(dir, { entries: [name] });
      await container.putArchive(
        archive as unknown as NodeJS.ReadableStream,
        { path: path.posix.dirname(file.path), abortSignal: timeout(signal) } as never,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  async startContainer(idOrName: string): Promise<void> {
    try {
      await this.docker.getContainer(idOrName).start({ abortSignal: timeout() } as never);
    } catch (error) {
      if (statusOf(error) !== 304) throw error;
    }
  }

  /**
   * Reads the container's own TCP tables through its main process (procfs shows each network
   * namespace there), so it works for images without any tools in them.
   */
  async countConnections(idOrName: string, port: number): Promise<number | null> {
    try {
      const info: Docker.ContainerInspectInfo = await this.docker
        .getContainer(idOrName)
        .inspect({ abortSignal: timeout() } as Docker.ContainerInspectOptions);
      if (!info.State.Running || !info.State.Pid) return 0;
      let count = 0;
      for (const table of ['tcp', 'tcp6']) {
        const text = await readFile(`/proc/${info.State.Pid}/net/${table}`, 'utf8').catch(() => null);
        if (text === null) return null;
        count += countEstablished(text, port);
      }
      return count;
    } catch (error) {
      if (statusOf(error) === 404) return 0;
      return null;
    }
  }

  async keepRunning(idOrName: string): Promise<void> {
    await this.docker.getContainer(idOrName).update({ RestartPolicy: { Name: 'unless-stopped' }, abortSignal: timeout() } as never);
  }

  async inspect(idOrName: string): Promise<ContainerState | null> {
    try {
      const info: Docker.ContainerInspectInfo = await this.docker
        .getContainer(idOrName)
        .inspect({ abortSignal: timeout() } as Docker.ContainerInspectOptions);
      const networks = Object.values(info.NetworkSettings?.Networks ?? {});
      return {
        id: info.Id,
        name: info.Name.replace(/^\//, ''),
        running: info.State.Running && !info.State.Restarting,
        exitCode: info.State.Running ? null : info.State.ExitCode,
        ip: info.State.Running ? projectIp(networks, info.Config.Labels ?? {}) : null,
        labels: info.Config.Labels ?? {},
        image: info.Config.Image,
      };
    } catch (error) {
      if (statusOf(error) === 404) return null;
      throw error;
    }
  }

  async tail(idOrName: string, lines: number): Promise<string[]> {
    try {
      const buffer = (await this.docker
        .getContainer(idOrName)
        .logs({ stdout: true, stderr: true, tail: lines, follow: false, abortSignal: timeout() } as never)) as unknown as Buffer;
      return new DockerFrameParser()
        .push(buffer)
        .flatMap((frame) => frame.text.split('\n'))
        .filter((line) => line.length > 0);
    } catch (error) {
      if (statusOf(error) === 404) return [];
      throw error;
    }
  }

  async stopContainer(idOrName: string, graceSeconds: number): Promise<void> {
    try {
      await this.docker
        .getContainer(idOrName)
        .stop({ t: graceSeconds, abortSignal: timeout(undefined, (graceSeconds + 30) * 1000) } as never);
    } catch (error) {
      // 304: it was not running; 404: it is gone. Either way it is not running now.
      if (statusOf(error) !== 304 && statusOf(error) !== 404) throw error;
    }
  }

  async stopAndRemove(idOrName: string, graceSeconds: number): Promise<void> {
    const container = this.docker.getContainer(idOrName);
    try {
      await container.stop({ t: graceSeconds, abortSignal: timeout(undefined, (graceSeconds + 30) * 1000) } as never);
    } catch (error) {
      const status = statusOf(error);
      if (status === 404) return;
      if (status !== 304) throw error;
    }
    try {
      // `v` takes the anonymous volumes an image's VOLUME made for this container alone (no later container mounts
      // them: each redeploy left one behind); the named volumes the platform mounts are never removed by it.
      await container.remove({ force: true, v: true, abortSignal: timeout() } as never);
    } catch (error) {
      if (statusOf(error) !== 404 && statusOf(error) !== 409) throw error;
    }
  }

  async connectNetwork(idOrName: string, network: string, aliases: string[]): Promise<void> {
    try {
      await this.docker
        .getNetwork(network)
        .connect({ Container: idOrName, EndpointConfig: { Aliases: aliases }, abortSignal: timeout() } as never);
    } catch (error) {
      // Joined already: what was asked for.
      if (!/already exists|is already connected/i.test((error as Error).message)) throw error;
    }
  }

  async listContainers(label: { key: string; value?: string }): Promise<ContainerState[]> {
    const filter = label.value === undefined ? label.key : `${label.key}=${label.value}`;
    const list: Docker.ContainerInfo[] = await this.docker.listContainers({
      all: true,
      filters: { label: [filter] },
      abortSignal: timeout(),
    } as Docker.ContainerListOptions);
    return list.map((c) => ({
      id: c.Id,
      name: (c.Names[0] ?? '').replace(/^\//, ''),
      running: c.State === 'running',
      restarting: c.State === 'restarting',
      exitCode: null,
      ip: c.State === 'running' ? projectIp(Object.values(c.NetworkSettings?.Networks ?? {}), c.Labels ?? {}) : null,
      labels: c.Labels ?? {},
      image: c.Image,
    }));
  }

  async removeImage(ref: string): Promise<void> {
    try {
      await this.docker.getImage(ref).remove({ force: true, abortSignal: timeout() } as never);
    } catch (error) {
      if (statusOf(error) !== 404 && statusOf(error) !== 409) throw error;
    }
  }

  async tagImage(source: string, target: string): Promise<void> {
    const [repo, tag] = splitTag(target);
    await this.docker.getImage(source).tag({ repo, tag, abortSignal: timeout() } as never);
  }

  async listImageTags(prefix: string): Promise<string[]> {
    const images: Docker.ImageInfo[] = await this.docker.listImages({ abortSignal: timeout() } as Docker.ListImagesOptions);
    return images.flatMap((image) => image.RepoTags ?? []).filter((tag) => tag.startsWith(prefix));
  }

  async listVolumes(prefix: string): Promise<string[]> {
    const { Volumes }: { Volumes?: Array<{ Name: string }> } = await this.docker.listVolumes({
      filters: JSON.stringify({ name: [prefix] }),
      abortSignal: timeout(),
    } as object);
    // Docker's name filter matches anywhere in the name: only those that start with the prefix are ours.
    return (Volumes ?? []).map((v) => v.Name).filter((name) => name.startsWith(prefix));
  }

  async removeVolume(name: string): Promise<void> {
    try {
      await this.docker.getVolume(name).remove({ abortSignal: timeout() } as never);
    } catch (error) {
      if (statusOf(error) !== 404) throw error;
    }
  }

  /** By id, every network of the name: duplicates an older version made would otherwise make the name ambiguous. */
  async removeNetwork(name: string): Promise<void> {
    for (const network of await this.networksNamed(name)) {
      try {
        await this.docker.getNetwork(network.Id).remove({ abortSignal: timeout() } as never);
      } catch (error) {
        if (statusOf(error) !== 404 && statusOf(error) !== 409 && statusOf(error) !== 403) throw error;
      }
    }
  }

  /** Reads a progress stream to its end; an `error` item rejects (a failed build does not). */
  private follow(stream: NodeJS.ReadableStream, signal: AbortSignal, onEvent: (event: ProgressEvent) => void): Promise<void> {
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        (stream as NodeJS.ReadableStream & { destroy?: () => void }).destroy?.();
        reject(new Error('aborted'));
      };
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      let failure: string | null = null;
      this.docker.modem.followProgress(
        stream,
        (error: Error | null) => {
          signal.removeEventListener('abort', onAbort);
          if (signal.aborted) return;
          if (error) reject(error);
          else if (failure) reject(new Error(failure));
          else resolve();
        },
        (event: ProgressEvent) => {
          if (event.error || event.errorDetail) failure = event.errorDetail?.message ?? event.error ?? 'unknown error';
          else onEvent(event);
        },
      );
    });
  }
}

const ESTABLISHED = '01';

/** Lines of /proc/net/tcp: `sl local_address rem_address st ...`, addresses as `HEXIP:HEXPORT`. */
export function countEstablished(table: string, port: number): number {
  let count = 0;
  for (const line of table.split('\n').slice(1)) {
    const fields = line.trim().split(/\s+/);
    const local = fields[1];
    if (!local || fields[3] !== ESTABLISHED) continue;
    if (parseInt(local.slice(local.lastIndexOf(':') + 1), 16) === port) count++;
  }
  return count;
}

function timeout(signal?: AbortSignal, ms = CALL_TIMEOUT_MS): AbortSignal {
  return signal ? AbortSignal.any([signal, AbortSignal.timeout(ms)]) : AbortSignal.timeout(ms);
}

/** `name:tag` (a registry port is not a tag); no tag means latest. */
function splitTag(ref: string): [string, string] {
  const slash = ref.lastIndexOf('/');
  const colon = ref.lastIndexOf(':');
  return colon > slash ? [ref.slice(0, colon), ref.slice(colon + 1)] : [ref, 'latest'];
}

function statusOf(error: unknown): number | undefined {
  return (error as { statusCode?: number }).statusCode;
}

/** The address other services and the platform use: the slot address is the proxy's alone. */
function projectIp(networks: Array<{ IPAddress?: string }>, labels: Record<string, string>): string | null {
  return networks.find((n) => n.IPAddress && n.IPAddress !== labels[LABELS.slot])?.IPAddress ?? null;
}

/** The service's resources in Docker's terms; none given, none set (Docker's defaults: no limit). */
function hostLimits(limits: RunRequest['limits']): Record<string, number> {
  if (!limits) return {};
  return {
    ...(limits.nanoCpus !== undefined ? { NanoCpus: limits.nanoCpus } : {}),
    ...(limits.memoryBytes !== undefined ? { Memory: limits.memoryBytes } : {}),
    ...(limits.memoryReservationBytes !== undefined ? { MemoryReservation: limits.memoryReservationBytes } : {}),
    ...(limits.cpuShares !== undefined ? { CpuShares: limits.cpuShares } : {}),
  };
}

/** Labels a volume keeps from the container that first mounts it: it outlives deployments, so only whose it is. */
const VOLUME_LABELS = [LABELS.managed, LABELS.instance, LABELS.project, LABELS.service] as const;

/**
 * A named volume mount. Docker creates a missing volume on first mount and gives it these labels then
 * (an existing volume keeps its own), so `docker volume ls --filter label=slipway.service=…` finds a
 * service's volumes and an install's, as it does their containers.
 */
function volumeMount(volume: { name: string; target: string }, labels: Record<string, string>) {
  const kept = Object.fromEntries(VOLUME_LABELS.filter((key) => labels[key] !== undefined).map((key) => [key, labels[key]!]));
  return { Type: 'volume', Source: volume.name, Target: volume.target, VolumeOptions: { Labels: kept } };
}
