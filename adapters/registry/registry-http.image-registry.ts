import type { ImageRegistry } from '../../src/git-hooks/git-provider.port.js';

const TIMEOUT_MS = 15_000;
/** Every manifest kind a tag may name: the digest is of what the registry stores, as `docker pull` resolves it. */
const MANIFEST_TYPES = [
  'application/vnd.oci.image.index.v1+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
  'application/vnd.oci.image.manifest.v1+json',
  'application/vnd.docker.distribution.manifest.v2+json',
].join(', ');

export interface RegistryHttpOptions {
  /** Registries spoken to over plain HTTP (`host:port`); loopback addresses always are, as Docker does. */
  insecure?: readonly string[];
  timeoutMs?: number;
}

/** `nginx:1.27` -> registry-1.docker.io, `library/nginx`, `1.27`; `host:5000/team/app` -> that host, `team/app`, `latest`. */
export function parseImageRef(image: string): { host: string; name: string; reference: string } {
  let rest = image.trim();
  let reference = 'latest';
  const at = rest.indexOf('@');
  if (at >= 0) {
    reference = rest.slice(at + 1);
    rest = rest.slice(0, at);
  } else {
    const slash = rest.lastIndexOf('/');
    const colon = rest.lastIndexOf(':');
    if (colon > slash) {
      reference = rest.slice(colon + 1);
      rest = rest.slice(0, colon);
    }
  }
  const first = rest.split('/')[0]!;
  const hasHost = rest.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost');
  let host = hasHost ? first : 'registry-1.docker.io';
  let name = hasHost ? rest.slice(first.length + 1) : rest;
  if (host === 'docker.io' || host === 'index.docker.io') host = 'registry-1.docker.io';
  if (host === 'registry-1.docker.io' && !name.includes('/')) name = `library/${name}`;
  return { host, name, reference };
}

/**
 * A tag's digest through the Registry HTTP API v2: `HEAD /v2/<name>/manifests/<tag>`, read from
 * `Docker-Content-Digest`. A registry asking for a bearer token (Docker Hub, GHCR) names its token
 * service in `WWW-Authenticate`; an anonymous pull token is fetched from it and the call made again.
 */
export class RegistryHttpImageRegistry implements ImageRegistry {
  private readonly insecure: Set<string>;
  private readonly timeoutMs: number;

  constructor(options: RegistryHttpOptions = {}) {
    this.insecure = new Set(options.insecure ?? []);
    this.timeoutMs = options.timeoutMs ?? TIMEOUT_MS;
  }

  async digestOf(image: string, signal: AbortSignal): Promise<string> {
    const { host, name, reference } = parseImageRef(image);
    if (reference.startsWith('sha256:')) return reference;
    const loopback = /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])(:\d+)?$/.test(host);
    const base = `${loopback || this.insecure.has(host) ? 'http' : 'https'}://${host}`;
    const url = `${base}/v2/${name}/manifests/${encodeURIComponent(reference)}`;
    let response = await this.call(url, {}, signal);
    if (response.status === 401) {
      const token = await this.token(response.headers.get('www-authenticate'), signal);
      if (token) response = await this.call(url, { authorization: `Bearer ${token}` }, signal);
    }
    if (response.status === 404) throw new Error(`${image}: the registry has no such tag`);
    if (response.status === 401 || response.status === 403)
      throw new Error(`${image}: the registry refused an anonymous pull (HTTP ${response.status})`);
    if (!response.ok) throw new Error(`${image}: the registry answered HTTP ${response.status}`);
    const digest = response.headers.get('docker-content-digest');
    if (!digest || !/^sha256:[0-9a-f]{64}$/.test(digest)) throw new Error(`${image}: the registry sent no Docker-Content-Digest`);
    return digest;
  }

  private async call(url: string, headers: Record<string, string>, signal: AbortSignal): Promise<Response> {
    const timeout = AbortSignal.timeout(this.timeoutMs);
    try {
      return await fetch(url, {
        method: 'HEAD',
        headers: { accept: MANIFEST_TYPES, ...headers },
        signal: AbortSignal.any([signal, timeout]),
      });
    } catch (error) {
      if (signal.aborted) throw signal.reason ?? error;
      if (timeout.aborted) throw new Error(`${new URL(url).host} did not answer within ${this.timeoutMs} ms`);
      const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : (error as Error).message;
      throw new Error(`${new URL(url).host} could not be reached: ${cause}`);
    }
  }

  /** `Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/nginx:pull"`. */
  private async token(challenge: string | null, signal: AbortSignal): Promise<string | null> {
    if (!challenge?.toLowerCase().startsWith('bearer ')) return null;
    const params = Object.fromEntries([...challenge.slice(7).matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1]!, m[2]!]));
    if (!params.realm || !/^https?:\/\//.test(params.realm)) return null;
    const url = new URL(params.realm);
    if (params.service) url.searchParams.set('service', params.service);
    if (params.scope) url.searchParams.set('scope', params.scope);
    const timeout = AbortSignal.timeout(this.timeoutMs);
    const response = await fetch(url, { signal: AbortSignal.any([signal, timeout]) });
    if (!response.ok) return null;
    const body = (await response.json()) as { token?: unknown; access_token?: unknown };
    const token = body.token ?? body.access_token;
    return typeof token === 'string' ? token : null;
  }
}
