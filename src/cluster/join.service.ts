import { isIP } from 'node:net';
import { InvalidCredentialsError, ValidationError } from '../domain/errors.js';
import type { ServiceDeps } from '../platform/deps.js';
import type { CertificateAuthority } from '../tls/certificate-authority.js';
import type { CertificateIssuer } from '../tls/certificate-issuer.port.js';
import type { ClusterFormation } from './cluster-formation.js';
import type { ClusterRuntime } from './cluster-runtime.port.js';
import type { JoinBundle } from './cluster-views.js';
import type { JoinServerInput } from './cluster.inputs.js';
import type { ClusterSettings } from './cluster-settings.js';
import { tokenHash } from './server.service.js';

/** A node engine's server certificate (renewal: docs/cluster.md). */
const NODE_CERT_DAYS = 825;
const SWARM_PORT = 2377;

/**
 * A new server's side of joining (the join script calls it): one exchange of the single-use token for
 * what the node needs, namely the install's CA, a certificate for the key the node made (server auth
 * only, naming its address), Swarm's worker token and the manager's address. The cluster forms here
 * when this is the second server. A wrong, used or expired token is refused with 401.
 */
export class JoinService {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly runtime: ClusterRuntime | null,
    private readonly formation: ClusterFormation | null,
    private readonly ca: CertificateAuthority,
    private readonly issuer: CertificateIssuer | null,
    private readonly settings: ClusterSettings,
    private readonly joinScript: () => Promise<string>,
    private readonly log: (message: string, extra?: Record<string, unknown>) => void = () => {},
  ) {}

  /** GET /api/servers/join.sh: public (it holds no secret); the command checks its digest before running it. */
  script(): Promise<string> {
    return this.joinScript();
  }

  async exchange(input: JoinServerInput): Promise<JoinBundle> {
    const server = /^slwj_[A-Za-z0-9_-]{43}$/.test(input.token) ? await this.deps.store.servers.byTokenHash(tokenHash(input.token)) : null;
    if (!server || server.local) throw new InvalidCredentialsError('This join token is not valid');
    if (server.joinUsedAt) throw new InvalidCredentialsError('This join token was already used; add the server again for a new one');
    const now = this.deps.clock.now();
    if (!server.joinExpiresAt || server.joinExpiresAt <= now)
      throw new InvalidCredentialsError(
        `This join token expired at ${server.joinExpiresAt?.toISOString()}; add the server again for a new one`,
      );
    if (isIP(input.address) === 0) throw new ValidationError('address', 'address: an IP address');
    const csrPem = Buffer.from(input.csrBase64, 'base64').toString('utf8');
    if (!csrPem.startsWith('-----BEGIN CERTIFICATE REQUEST-----'))
      throw new ValidationError('csrBase64', 'csrBase64: a PEM certificate request');
    if (!this.runtime || !this.formation || !this.issuer) throw new InvalidCredentialsError('This platform cannot form a cluster');
    // Formed before the token is spent: a failure here leaves the token usable for another try.
    const formed = await this.formation.ensure();
    const authority = await this.ca.authority();
    let certPem: string;
    try {
      certPem = await this.issuer.signRequest(authority, {
        csrPem,
        commonName: server.name,
        dnsNames: [],
        ipAddresses: [input.address],
        days: NODE_CERT_DAYS,
        usage: 'server',
      });
    } catch (error) {
      throw new ValidationError('csrBase64', `csrBase64: not a valid certificate request (${(error as Error).message})`);
    }
    const swarmJoinToken = await this.runtime.workerJoinToken();
    if (!(await this.deps.store.servers.useToken(server.id, server.joinTokenHash!, now)))
      throw new InvalidCredentialsError('This join token was already used; add the server again for a new one');
    await this.deps.store.servers.releaseAddress(input.address, server.id);
    await this.deps.store.servers.update(server.id, {
      address: input.address,
      hostname: input.hostname,
      engineVersion: input.engineVersion || null,
      updatedAt: now,
    });
    // The platform's registry (started as the cluster forms) has the install's CA; an external one, a public one.
    const registry = await this.settings.registry();
    const registryAddress =
      registry?.kind === 'external' ? null : `${this.deps.config.cluster.advertiseAddress}:${this.deps.config.cluster.registry.port}`;
    this.log('server joining', { serverId: server.id, name: server.name, address: input.address, hostname: input.hostname });
    return {
      serverId: server.id,
      name: server.name,
      caCertificateBase64: Buffer.from(authority.certPem).toString('base64'),
      certificateBase64: Buffer.from(certPem).toString('base64'),
      swarmJoinToken,
      managerAddress: `${formed.advertiseAddress}:${SWARM_PORT}`,
      registryAddress,
      engineTlsPort: this.deps.config.cluster.engineTlsPort,
    };
  }
}
