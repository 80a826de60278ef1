import type { Actor } from '../domain/access.js';
import { ConflictError, UpstreamError, ValidationError } from '../domain/errors.js';
import type { LineSink } from '../deployments/container-engine.port.js';
import type { ServiceDeps } from '../platform/deps.js';
import { generatePassword } from '../platform/secret-box.js';
import type { CertificateAuthority } from '../tls/certificate-authority.js';
import type { CertificateIssuer } from '../tls/certificate-issuer.port.js';
import type { RegistryView } from './cluster-views.js';
import type { ClusterSettings, RegistrySettings } from './cluster-settings.js';
import type { RegistryInput } from './cluster.inputs.js';
import type { ImageRegistry, RegistryContainerSpec, RegistryEndpoint } from './image-registry.port.js';
import { assertInstallAdmin, assertInstallWriter } from './server-access.js';

const REGISTRY_USER = 'slipway';
/** Within what TLS clients accept; made again when the advertised address changes. */
const REGISTRY_CERT_DAYS = 825;

/** A pushed image: what a node pulls (`address/repository@digest`). */
export interface PublishedImage {
  reference: string;
  digest: string;
}

/**
 * The cluster's image registry (issue 31): the platform's own `registry:2` on the manager (TLS from
 * the install's CA, one generated user whose password is sealed in the settings table), or an
 * external one. Builds are pushed there once the cluster has formed; nodes pull by digest with
 * credentials sent along with each service, so no node stores one. Images no rollback keeps
 * (ROLLBACK_KEEP) are garbage-collected.
 */
export class RegistryService {
  private ensuring: Promise<RegistryEndpoint> | null = null;
  /** Ready in this process: later callers (each build, the monitor) do not ask the engine again. */
  private ready: RegistryEndpoint | null = null;
  private collecting: Promise<number> | null = null;

  constructor(
    private readonly deps: ServiceDeps,
    private readonly settings: ClusterSettings,
    private readonly ca: CertificateAuthority,
    private readonly issuer: CertificateIssuer | null,
    private readonly registry: ImageRegistry | null,
    private readonly log: (message: string, extra?: Record<string, unknown>) => void = () => {},
  ) {}

  async view(actor: Actor): Promise<RegistryView> {
    assertInstallAdmin(actor, 'read the registry settings');
    const stored = await this.settings.registry();
    const endpoint = stored ? await this.endpointOf(stored) : null;
    const running =
      endpoint && this.registry
        ? await this.registry.check(endpoint).then(
            () => true,
            () => false,
          )
        : false;
    return { kind: stored?.kind ?? 'platform', address: stored?.address ?? null, username: stored?.username ?? null, running };
  }

  /**
   * Switches between the platform's registry and an external one. An external one is checked with its
   * credentials first (a 502 when it does not accept them); its password is sealed, never shown again.
   */
  async configure(actor: Actor, input: RegistryInput): Promise<RegistryView> {
    assertInstallWriter(actor, 'change the registry');
    this.ready = null;
    if (input.kind === 'external') {
      if (!input.address || !input.username || !input.password)
        throw new ValidationError(
          input.address ? (input.username ? 'password' : 'username') : 'address',
          'required for an external registry',
        );
      const endpoint: RegistryEndpoint = { address: input.address, username: input.username, password: input.password, caPem: null };
      if (this.registry) {
        await this.registry.check(endpoint, AbortSignal.timeout(this.deps.config.cluster.registry.checkTimeoutMs)).catch((error: Error) => {
          throw new UpstreamError(`The registry at ${input.address} did not accept the credentials: ${error.message}`);
        });
      }
      await this.settings.setRegistry({ kind: 'external', address: input.address, username: input.username, password: input.password });
    } else {
      const stored = await this.settings.registry();
      if (stored?.kind === 'external') await this.deps.store.settings.delete('cluster_registry');
      if (await this.settings.formed()) await this.ensure();
    }
    return this.view(actor);
  }

  /**
   * The registry, ready: the platform's own started on the manager (credentials and certificate made
   * the first time), or the external one as configured. One at a time in this process.
   */
  ensure(signal?: AbortSignal): Promise<RegistryEndpoint> {
    if (this.ready) return Promise.resolve(this.ready);
    this.ensuring ??= this.doEnsure(signal)
      .then((endpoint) => {
        this.ready = endpoint;
        return endpoint;
      })
      .finally(() => {
        this.ensuring = null;
      });
    return this.ensuring;
  }

  /** Where images go, once the cluster has a registry; null before. */
  async endpoint(): Promise<RegistryEndpoint | null> {
    const stored = await this.settings.registry();
    return stored ? this.endpointOf(stored) : null;
  }

  /**
   * Pushes a deployment's image and records its digest: what the service's tasks pull. Null on a single
   * server (nothing to push: the image is local).
   */
  async publish(
    deployment: { id: string; serviceId: string },
    localImage: string,
    onLine: LineSink,
    signal?: AbortSignal,
  ): Promise<PublishedImage | null> {
    if (!(await this.settings.formed()) || !this.registry) return null;
    const known = await this.deps.store.servers.image(deployment.id);
    const endpoint = await this.ensure(signal);
    if (known) return { reference: `${endpoint.address}/${known.repository}@${known.digest}`, digest: known.digest };
    const repository = repositoryOf(deployment.serviceId);
    const started = Date.now();
    const digest = await this.registry.push(endpoint, localImage, repository, deployment.id, onLine, signal);
    await this.deps.store.servers.recordImage({
      deploymentId: deployment.id,
      serviceId: deployment.serviceId,
      repository,
      digest,
      pushedAt: this.deps.clock.now(),
    });
    onLine(`Pushed to the cluster's registry as ${repository}@${digest} in ${Date.now() - started} ms`, 'stdout');
    return { reference: `${endpoint.address}/${repository}@${digest}`, digest };
  }

  /** The image a deployment pushed, by digest, for a rollback or a task started again; null when none was. */
  async reference(deploymentId: string): Promise<string | null> {
    const image = await this.deps.store.servers.image(deploymentId);
    const endpoint = image ? await this.endpoint() : null;
    return image && endpoint ? `${endpoint.address}/${image.repository}@${image.digest}` : null;
  }

  /**
   * Deletes the manifests of images no rollback keeps (beyond the newest ROLLBACK_KEEP live deployments
   * of their service, and of services that are gone), then collects their blobs. Answers how many went.
   */
  collect(signal?: AbortSignal): Promise<number> {
    this.collecting ??= this.doCollect(signal).finally(() => {
      this.collecting = null;
    });
    return this.collecting;
  }

  private async doCollect(signal?: AbortSignal): Promise<number> {
    const stored = await this.settings.registry();
    if (!stored || !this.registry) return 0;
    const endpoint = await this.endpointOf(stored);
    const images = await this.deps.store.servers.images();
    const byService = new Map<string, string[]>();
    for (const image of images) byService.set(image.serviceId, [...(byService.get(image.serviceId) ?? []), image.deploymentId]);
    const keep = new Set<string>();
    for (const serviceId of byService.keys()) {
      for (const d of await this.deps.store.deployments.listLive(serviceId, this.deps.config.deploy.rollbackKeep)) keep.add(d.id);
      // A deployment under way (pushed, not live yet) keeps its image too.
      for (const d of await this.deps.store.deployments.list(serviceId, 20))
        if (d.status === 'running' || d.status === 'queued') keep.add(d.id);
    }
    const gone = images.filter((image) => !keep.has(image.deploymentId));
    for (const image of gone) await this.registry.deleteManifest(endpoint, image.repository, image.digest, signal);
    await this.deps.store.servers.forgetImages(gone.map((image) => image.deploymentId));
    if (gone.length > 0 && stored.kind === 'platform') {
      const lines = await this.registry.collectGarbage(await this.specOf(stored), signal);
      this.log('registry garbage collected', { manifests: gone.length, output: lines.slice(-3) });
    }
    return gone.length;
  }

  private async doEnsure(signal?: AbortSignal): Promise<RegistryEndpoint> {
    if (!this.registry) throw new ConflictError('This platform has no registry adapter');
    const stored = await this.settings.registry();
    if (stored?.kind === 'external') return this.endpointOf(stored);
    const address = `${this.deps.config.cluster.advertiseAddress}:${this.deps.config.cluster.registry.port}`;
    let settings = stored;
    if (!settings || settings.address !== address) {
      if (!this.issuer) throw new ConflictError('This platform cannot issue certificates (no openssl): the registry needs one');
      const authority = await this.ca.authority(signal);
      const host = this.deps.config.cluster.advertiseAddress;
      const certificate = await this.issuer.issueServer(
        authority,
        {
          commonName: host,
          dnsNames: /^[0-9.:]+$/.test(host) ? [] : [host],
          ipAddresses: /^[0-9.:]+$/.test(host) ? [host] : [],
          days: REGISTRY_CERT_DAYS,
        },
        signal,
      );
      settings = {
        kind: 'platform',
        username: REGISTRY_USER,
        // Kept when only the address changed: nodes hold no copy, but a push in flight does.
        password: settings?.password ?? generatePassword(40),
        certPem: certificate.certPem,
        keyPem: certificate.keyPem,
        address,
      };
      await this.settings.setRegistry(settings);
    }
    await this.registry.ensureRunning(await this.specOf(settings), signal);
    return this.endpointOf(settings);
  }

  private async specOf(settings: RegistrySettings & { kind: 'platform' }): Promise<RegistryContainerSpec> {
    const caPem = (await this.ca.certificate()) ?? '';
    const [host, port] = splitAddress(settings.address);
    return {
      image: this.deps.config.cluster.registry.image,
      host,
      port,
      certPem: settings.certPem,
      keyPem: settings.keyPem,
      caPem,
      username: settings.username,
      password: settings.password,
    };
  }

  private async endpointOf(settings: RegistrySettings): Promise<RegistryEndpoint> {
    return {
      address: settings.address,
      username: settings.username,
      password: settings.password,
      caPem: settings.kind === 'platform' ? await this.ca.certificate() : null,
    };
  }
}

/** A service's images live under one repository; each deployment is a tag (and, for nodes, a digest). */
export function repositoryOf(serviceId: string): string {
  return `slipway/${serviceId}`;
}

function splitAddress(address: string): [string, number] {
  const at = address.lastIndexOf(':');
  return [address.slice(0, at), Number(address.slice(at + 1))];
}
