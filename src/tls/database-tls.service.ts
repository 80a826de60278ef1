import { isIP } from 'node:net';
import type { Actor } from '../domain/access.js';
import { databaseEngineOf, type DatabaseEngine } from '../domain/database-engines.js';
import { NotFoundError, ValidationError } from '../domain/errors.js';
import type { ServiceRecord } from '../domain/types.js';
import type { ServiceDeps } from '../platform/deps.js';
import { serviceFor } from '../platform/lookup.js';
import { CertificateAuthority } from './certificate-authority.js';
import type { CertificateIssuer } from './certificate-issuer.port.js';

/** The engines that speak PostgreSQL's protocol, and so its TLS. */
const POSTGRES_COMPATIBLE: readonly DatabaseEngine[] = ['postgres', 'timescale'];
/** Where the files go in the container, and who owns them there (the image's own postgres user). */
export const TLS_DIR = '/etc/slipway-tls';
/** Within the 825 days browsers and Apple clients accept; every deployment issues a fresh one. */
const SERVER_DAYS = 825;

/** What a deployment mounts: files (with the image user who must own them) and the server's extra arguments. */
export interface TlsMount {
  files: Array<{ path: string; content: string; mode: number; owner: string }>;
  args: string[];
}

export interface TlsInfo {
  active: boolean;
  caCertAvailable: boolean;
  publicHostname: string;
  publicPort: number;
}

/** Whether the service's current container was started with TLS: null when none runs. */
export interface TlsStateLocator {
  tlsActive(service: ServiceRecord): Promise<boolean | null>;
}

/**
 * PostgreSQL TLS for database services: the install's CA (certificate-authority.ts), and a server
 * certificate for each deployment naming the public hostname and the service slug, mounted into the
 * container with `ssl=on`.
 */
export class DatabaseTlsService {
  private readonly ca: CertificateAuthority;

  constructor(
    private readonly deps: ServiceDeps,
    private readonly issuer: CertificateIssuer | null,
    private readonly state: TlsStateLocator | null,
    ca?: CertificateAuthority,
  ) {
    this.ca = ca ?? new CertificateAuthority(deps, issuer);
  }

  async info(actor: Actor, serviceId: string): Promise<TlsInfo> {
    const service = await this.postgresService(actor, serviceId);
    return {
      active: (await this.state?.tlsActive(service)) ?? false,
      caCertAvailable: (await this.ca.certificate()) !== null,
      publicHostname: this.publicHostnameOf(service),
      publicPort: service.hostPort,
    };
  }

  /** The CA certificate clients verify the server with (`sslrootcert`); 404 before any was made. */
  async caCertificate(actor: Actor, serviceId: string): Promise<string> {
    await this.postgresService(actor, serviceId);
    const certPem = await this.ca.certificate();
    if (!certPem) throw new NotFoundError('CA certificate', 'database-tls');
    return certPem;
  }

  /**
   * The files and arguments a Postgres-compatible deployment starts with; null for other engines or
   * without an issuer. Makes the CA the first time.
   */
  async mountFor(service: ServiceRecord, signal?: AbortSignal): Promise<TlsMount | null> {
    const engine = databaseEngineOf(service);
    if (!engine || !POSTGRES_COMPATIBLE.includes(engine) || !this.issuer) return null;
    const authority = await this.ca.authority(signal);
    const hostname = this.publicHostnameOf(service);
    const names = [...new Set([hostname, service.slug, this.deps.config.publicIp])];
    const server = await this.issuer.issueServer(
      authority,
      {
        commonName: hostname,
        dnsNames: names.filter((n) => isIP(n) === 0),
        ipAddresses: names.filter((n) => isIP(n) !== 0),
        days: SERVER_DAYS,
      },
      signal,
    );
    return {
      files: [
        { path: `${TLS_DIR}/server.crt`, content: server.certPem, mode: 0o644, owner: 'postgres' },
        // PostgreSQL refuses a key file others can read, or that is not its own user's (or root's with 0640).
        { path: `${TLS_DIR}/server.key`, content: server.keyPem, mode: 0o600, owner: 'postgres' },
        { path: `${TLS_DIR}/ca.crt`, content: authority.certPem, mode: 0o644, owner: 'postgres' },
      ],
      args: ['-c', 'ssl=on', '-c', `ssl_cert_file=${TLS_DIR}/server.crt`, '-c', `ssl_key_file=${TLS_DIR}/server.key`],
    };
  }

  /** What clients connect to: the database's public hostname, else the install's public IP. */
  private publicHostnameOf(service: ServiceRecord): string {
    return (service.source.kind === 'database' ? service.source.publicHostname : null) ?? this.deps.config.publicIp;
  }

  private async postgresService(actor: Actor, serviceId: string): Promise<ServiceRecord> {
    const service = await serviceFor(this.deps.store, actor, serviceId);
    const engine = databaseEngineOf(service);
    if (!engine || !POSTGRES_COMPATIBLE.includes(engine))
      throw new ValidationError(
        'serviceId',
        `TLS is set up for postgres and timescale services; this one is ${engine ?? 'not a database'}`,
      );
    return service;
  }
}
