import { ConflictError } from '../domain/errors.js';
import type { ServiceDeps } from '../platform/deps.js';
import type { CertificateAuthority } from '../tls/certificate-authority.js';
import type { CertificateIssuer } from '../tls/certificate-issuer.port.js';
import type { ClusterRuntime } from './cluster-runtime.port.js';
import type { ClusterSettings, FormedCluster } from './cluster-settings.js';
import type { NodeCredentials } from './node-engines.port.js';
import type { RegistryService } from './registry.service.js';

/** The platform's client certificate towards the nodes' engines. */
const CLIENT_CERT_DAYS = 825;

/**
 * The single server becoming a cluster, when the second server joins and never before: Swarm mode on
 * the local engine (`swarm init`, advertising SWARM_ADVERTISE_ADDR), the local server linked to its
 * node, the platform's client certificate for the nodes' engines, and the registry started. Until
 * then the install runs plain containers exactly as before (docs/cluster.md).
 */
export class ClusterFormation {
  private forming: Promise<FormedCluster> | null = null;
  private credentials: Promise<NodeCredentials> | null = null;

  constructor(
    private readonly deps: ServiceDeps,
    private readonly runtime: ClusterRuntime,
    private readonly settings: ClusterSettings,
    private readonly ca: CertificateAuthority,
    private readonly issuer: CertificateIssuer | null,
    private readonly registry: RegistryService,
    private readonly log: (message: string, extra?: Record<string, unknown>) => void = () => {},
  ) {}

  private readonly formedHooks: Array<() => Promise<unknown>> = [];

  /** Runs once the cluster has formed (in this process), after the settings say so: a failure is logged. */
  onFormed(hook: () => Promise<unknown>): void {
    this.formedHooks.push(hook);
  }

  formed(): Promise<FormedCluster | null> {
    return this.settings.formed();
  }

  /** Forms the cluster when it has not formed yet; one attempt at a time in this process. */
  ensure(signal?: AbortSignal): Promise<FormedCluster> {
    this.forming ??= this.form(signal).finally(() => {
      this.forming = null;
    });
    return this.forming;
  }

  /** The platform's client identity for the nodes' engines, made once (its key sealed in the settings). */
  clientCredentials(signal?: AbortSignal): Promise<NodeCredentials> {
    this.credentials ??= this.makeCredentials(signal).catch((error: unknown) => {
      this.credentials = null;
      throw error;
    });
    return this.credentials;
  }

  /** Starts the registry in the background (a join does not wait for it); a failure is logged and tried again by the monitor. */
  startRegistry(): void {
    void this.registry.ensure().catch((error: Error) => this.log('the cluster registry could not be started', { error: error.message }));
  }

  private async form(signal?: AbortSignal): Promise<FormedCluster> {
    const known = await this.settings.formed();
    if (known) return known;
    if (!this.issuer) throw new ConflictError('This platform cannot issue certificates (no openssl): servers cannot join');
    const advertiseAddress = this.deps.config.cluster.advertiseAddress;
    let info = await this.runtime.info(signal);
    if (info.swarm !== 'active') {
      this.log('forming the cluster: swarm init on the local engine', { advertiseAddress });
      try {
        await this.runtime.initSwarm(advertiseAddress, signal);
      } catch (error) {
        // Another process may have formed it in between: only a swarm that is still not there is a failure.
        info = await this.runtime.info(signal);
        if (info.swarm !== 'active') throw error;
      }
      info = await this.runtime.info(signal);
    }
    if (!info.nodeId) throw new Error('The local engine is in a swarm but names no node id');
    await this.clientCredentials(signal);
    const local = await this.deps.store.servers.local();
    const now = this.deps.clock.now();
    if (local) {
      await this.deps.store.servers.update(local.id, {
        swarmNodeId: info.nodeId,
        address: advertiseAddress,
        joinedAt: local.joinedAt ?? now,
        updatedAt: now,
      });
    }
    const formed: FormedCluster = { formedAt: now.toISOString(), managerNodeId: info.nodeId, advertiseAddress };
    await this.settings.setFormed(formed);
    this.startRegistry();
    for (const hook of this.formedHooks)
      void hook().catch((error: Error) => this.log('a step after forming the cluster failed', { error: error.message }));
    return formed;
  }

  private async makeCredentials(signal?: AbortSignal): Promise<NodeCredentials> {
    const authority = await this.ca.authority(signal);
    const stored = await this.settings.clientCredentials();
    if (stored) return { caPem: authority.certPem, ...stored };
    if (!this.issuer) throw new ConflictError('This platform cannot issue certificates (no openssl)');
    const issued = await this.issuer.issueClient(authority, `slipway-platform-${this.deps.config.instanceId}`, CLIENT_CERT_DAYS, signal);
    await this.settings.setClientCredentials(issued);
    return { caPem: authority.certPem, ...issued };
  }
}
