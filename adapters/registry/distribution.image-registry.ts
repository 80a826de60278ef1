import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import bcrypt from 'bcryptjs';
import type Docker from 'dockerode';
import tar from 'tar-fs';
import type { ImageRegistry, RegistryContainerSpec, RegistryEndpoint } from '../../src/cluster/image-registry.port.js';
import type { LineSink } from '../../src/deployments/container-engine.port.js';

const CALL_TIMEOUT_MS = 15_000;
const PUSH_TIMEOUT_MS = 30 * 60_000;
const READY_TIMEOUT_MS = 60_000;
const GC_TIMEOUT_MS = 10 * 60_000;
/** Where the files the registry reads go inside its container. */
const CERTS = '/certs';

export interface DistributionRegistryOptions {
  /** The manager engine's `certs.d` (DOCKER_CERTS_DIR, default /etc/docker/certs.d): its trust of the registry's CA for pushes. */
  certsDir: string;
  /** RESOURCE_PREFIX: the container is `<prefix>-registry`, its volume `<prefix>-registry-data`. */
  prefix: string;
  instanceId: string;
}

interface ProgressEvent {
  status?: string;
  id?: string;
  error?: string;
  errorDetail?: { message?: string };
  aux?: { Tag?: string; Digest?: string };
}

/**
 * The Distribution registry (`registry:2`) as the cluster's registry: the platform's own runs as a
 * plain container on the manager's engine (restart unless-stopped, its data in a volume), with TLS
 * from the install's CA and htpasswd authentication for one user (bcrypt, made here), published on
 * the manager's advertised address. Pushes go through the manager's engine (it trusts the CA through
 * its certs.d); manifests are deleted over the registry's HTTP API; blobs are collected by the
 * registry's own `garbage-collect`, with the registry stopped meanwhile (Distribution's rule: no
 * collection while pushes can happen).
 */
export class DistributionImageRegistry implements ImageRegistry {
  constructor(
    private readonly docker: Docker,
    private readonly options: DistributionRegistryOptions,
  ) {}

  private get container(): string {
    return `${this.options.prefix}-registry`;
  }

  private get volume(): string {
    return `${this.options.prefix}-registry-data`;
  }

  async ensureRunning(spec: RegistryContainerSpec, signal?: AbortSignal): Promise<void> {
    await this.trust(spec);
    // The container's label names its configuration: a changed certificate, password or image starts a new one.
    const digest = createHash('sha256')
      .update(JSON.stringify([spec.image, spec.host, spec.port, spec.certPem, spec.keyPem, spec.username, spec.password]))
      .digest('hex')
      .slice(0, 32);
    const existing = (await this.docker
      .getContainer(this.container)
      .inspect({ abortSignal: timeout(signal) } as object)
      .catch((error: { statusCode?: number }) => {
        if (error.statusCode === 404) return null;
        throw error;
      })) as { State?: { Running?: boolean }; Config?: { Labels?: Record<string, string> } } | null;
    if (existing?.Config?.Labels?.['slipway.registry-config'] === digest) {
      if (!existing.State?.Running) await this.start(signal);
      await this.waitReady(spec, signal);
      return;
    }
    if (existing) await this.docker.getContainer(this.container).remove({ force: true, abortSignal: timeout(signal) } as object);
    const container = await this.docker.createContainer({
      name: this.container,
      Image: spec.image,
      Env: [
        'REGISTRY_AUTH=htpasswd',
        'REGISTRY_AUTH_HTPASSWD_REALM=slipway',
        `REGISTRY_AUTH_HTPASSWD_PATH=${CERTS}/htpasswd`,
        `REGISTRY_HTTP_TLS_CERTIFICATE=${CERTS}/registry.crt`,
        `REGISTRY_HTTP_TLS_KEY=${CERTS}/registry.key`,
        'REGISTRY_STORAGE_DELETE_ENABLED=true',
      ],
      Labels: {
        'slipway.managed': 'true',
        'slipway.instance': this.options.instanceId,
        'slipway.role': 'registry',
        'slipway.registry-config': digest,
      },
      ExposedPorts: { '5000/tcp': {} },
      HostConfig: {
        RestartPolicy: { Name: 'unless-stopped' },
        PortBindings: { '5000/tcp': [{ HostIp: spec.host, HostPort: String(spec.port) }] },
        Mounts: [{ Type: 'volume', Source: this.volume, Target: '/var/lib/registry' }],
        LogConfig: { Type: 'json-file', Config: { 'max-size': '10m', 'max-file': '3' } },
      },
      abortSignal: timeout(signal),
    } as Docker.ContainerCreateOptions);
    await this.putFiles(
      container,
      {
        'registry.crt': spec.certPem,
        'registry.key': spec.keyPem,
        htpasswd: `${spec.username}:${await bcrypt.hash(spec.password, 10)}\n`,
      },
      signal,
    );
    await this.start(signal);
    await this.waitReady(spec, signal);
  }

  async check(endpoint: RegistryEndpoint, signal?: AbortSignal): Promise<void> {
    const res = await this.call(endpoint, 'GET', '/v2/', signal);
    if (res.status !== 200) throw new Error(`GET /v2/ answered ${res.status}${res.status === 401 ? ' (credentials refused)' : ''}`);
  }

  async push(
    endpoint: RegistryEndpoint,
    localImage: string,
    repository: string,
    tag: string,
    onLine: LineSink,
    signal?: AbortSignal,
  ): Promise<string> {
    const target = `${endpoint.address}/${repository}`;
    await this.docker.getImage(localImage).tag({ repo: target, tag, abortSignal: timeout(signal) } as Docker.ImageTagOptions);
    try {
      const stream = (await this.docker.getImage(`${target}:${tag}`).push({
        tag,
        authconfig: { username: endpoint.username, password: endpoint.password, serveraddress: endpoint.address },
        abortSignal: timeout(signal, PUSH_TIMEOUT_MS),
      } as object)) as NodeJS.ReadableStream;
      let digest: string | null = null;
      const seen = new Set<string>();
      await follow(stream, (event) => {
        if (event.error || event.errorDetail) throw new Error(event.errorDetail?.message ?? event.error);
        if (event.aux?.Digest) digest = event.aux.Digest;
        const line = [event.id, event.status].filter(Boolean).join(': ');
        if (line && !seen.has(line) && !/^[0-9a-f]{12}: (Pushing|Waiting|Preparing)$/.test(line)) {
          seen.add(line);
          onLine(line, 'stdout');
        }
      });
      if (!digest) throw new Error(`the push of ${target}:${tag} named no digest`);
      return digest;
    } finally {
      // The local image keeps its own tag; the registry's name for it is not needed here.
      await this.docker
        .getImage(`${target}:${tag}`)
        .remove({ noprune: true, abortSignal: timeout(signal) } as object)
        .catch(() => {});
    }
  }

  async deleteManifest(endpoint: RegistryEndpoint, repository: string, digest: string, signal?: AbortSignal): Promise<void> {
    const res = await this.call(endpoint, 'DELETE', `/v2/${repository}/manifests/${digest}`, signal);
    if (res.status !== 202 && res.status !== 404)
      throw new Error(`DELETE of ${repository}@${digest} answered ${res.status}: ${res.body.slice(0, 200)}`);
  }

  async collectGarbage(spec: RegistryContainerSpec, signal?: AbortSignal): Promise<string[]> {
    await this.docker
      .getContainer(this.container)
      .stop({ t: 10, abortSignal: timeout(signal, 30_000) } as object)
      .catch((error: { statusCode?: number }) => {
        if (error.statusCode !== 304) throw error;
      });
    try {
      const gc = await this.docker.createContainer({
        Image: spec.image,
        Cmd: ['garbage-collect', '--delete-untagged', '/etc/docker/registry/config.yml'],
        Labels: { 'slipway.managed': 'true', 'slipway.instance': this.options.instanceId, 'slipway.role': 'registry-gc' },
        HostConfig: { Mounts: [{ Type: 'volume', Source: this.volume, Target: '/var/lib/registry' }] },
        abortSignal: timeout(signal),
      } as Docker.ContainerCreateOptions);
      try {
        await gc.start({ abortSignal: timeout(signal) } as object);
        const result = (await gc.wait({ abortSignal: timeout(signal, GC_TIMEOUT_MS) } as object)) as { StatusCode?: number };
        const output = demux((await gc.logs({ stdout: true, stderr: true, abortSignal: timeout(signal) } as object)) as unknown as Buffer);
        const lines = output
          .split('\n')
          .map((l) => l.trim())
          .filter(Boolean);
        if (result.StatusCode !== 0)
          throw new Error(`registry garbage-collect exited with ${result.StatusCode}: ${lines.slice(-3).join(' | ')}`);
        return lines;
      } finally {
        await gc.remove({ force: true }).catch(() => {});
      }
    } finally {
      await this.start(signal);
      await this.waitReady(spec, signal);
    }
  }

  /** The manager's engine trusts the registry's CA (read at each push: no restart). */
  private async trust(spec: RegistryContainerSpec): Promise<void> {
    const dir = path.join(this.options.certsDir, `${spec.host}:${spec.port}`);
    const file = path.join(dir, 'ca.crt');
    if ((await readFile(file, 'utf8').catch(() => null)) === spec.caPem) return;
    await mkdir(dir, { recursive: true });
    await writeFile(file, spec.caPem, { mode: 0o644 });
  }

  private async start(signal?: AbortSignal): Promise<void> {
    await this.docker
      .getContainer(this.container)
      .start({ abortSignal: timeout(signal) } as object)
      .catch((error: { statusCode?: number }) => {
        if (error.statusCode !== 304) throw error;
      });
  }

  private async waitReady(spec: RegistryContainerSpec, signal?: AbortSignal): Promise<void> {
    const endpoint: RegistryEndpoint = {
      address: `${spec.host}:${spec.port}`,
      username: spec.username,
      password: spec.password,
      caPem: spec.caPem,
    };
    const deadline = Date.now() + READY_TIMEOUT_MS;
    let last = '';
    while (Date.now() < deadline) {
      signal?.throwIfAborted();
      try {
        await this.check(endpoint, signal);
        return;
      } catch (error) {
        last = (error as Error).message;
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`the registry at ${endpoint.address} did not answer within ${READY_TIMEOUT_MS / 1000} s (${last})`);
  }

  /** Files into the created container's /certs, packed from a private temporary directory. */
  private async putFiles(container: Docker.Container, files: Record<string, string>, signal?: AbortSignal): Promise<void> {
    const dir = await mkdtemp(path.join(tmpdir(), 'slipway-registry-'));
    try {
      await mkdir(path.join(dir, 'certs'), { mode: 0o755 });
      for (const [name, content] of Object.entries(files)) await writeFile(path.join(dir, 'certs', name), content, { mode: 0o644 });
      await container.putArchive(tar.pack(dir) as unknown as NodeJS.ReadableStream, { path: '/', abortSignal: timeout(signal) } as object);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  private call(endpoint: RegistryEndpoint, method: string, urlPath: string, signal?: AbortSignal) {
    return new Promise<{ status: number; body: string }>((resolve, reject) => {
      const at = endpoint.address.lastIndexOf(':');
      const host = at > 0 ? endpoint.address.slice(0, at) : endpoint.address;
      const port = at > 0 ? Number(endpoint.address.slice(at + 1)) : 443;
      const req = request(
        {
          host,
          port,
          method,
          path: urlPath,
          ...(endpoint.caPem ? { ca: endpoint.caPem } : {}),
          headers: {
            authorization: `Basic ${Buffer.from(`${endpoint.username}:${endpoint.password}`).toString('base64')}`,
            accept: 'application/vnd.docker.distribution.manifest.v2+json, application/vnd.oci.image.manifest.v1+json',
          },
          signal: timeout(signal),
        },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => {
            if (body.length < 65_536) body += chunk;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end();
    });
  }
}

/** A container's log without a TTY: frames of an 8-byte header (stream, 3 zeros, big-endian length) and the bytes. */
function demux(raw: Buffer): string {
  const parts: Buffer[] = [];
  for (let at = 0; at + 8 <= raw.length; ) {
    const size = raw.readUInt32BE(at + 4);
    parts.push(raw.subarray(at + 8, at + 8 + size));
    at += 8 + size;
  }
  return Buffer.concat(parts).toString('utf8');
}

function follow(stream: NodeJS.ReadableStream, onEvent: (event: ProgressEvent) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    let buffer = '';
    let failed = false;
    const handle = (line: string) => {
      if (!line.trim() || failed) return;
      try {
        onEvent(JSON.parse(line) as ProgressEvent);
      } catch (error) {
        failed = true;
        reject(error);
      }
    };
    stream.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('utf8');
      const lines = buffer.split('\n');
      buffer = lines.pop() ?? '';
      for (const line of lines) handle(line);
    });
    stream.on('end', () => {
      handle(buffer);
      if (!failed) resolve();
    });
    stream.on('error', reject);
  });
}

function timeout(signal?: AbortSignal, ms = CALL_TIMEOUT_MS): AbortSignal {
  return signal ? AbortSignal.any([signal, AbortSignal.timeout(ms)]) : AbortSignal.timeout(ms);
}
