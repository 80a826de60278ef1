import { isIP } from 'node:net';
import type { Actor } from '../domain/access.js';
import { databaseEngineOf, type DatabaseEngine } from '../domain/database-engines.js';
import { NotFoundError, ValidationError } from '../domain/errors.js';
import type { ServiceRecord } from '../domain/types.js';
import type { ServiceDeps } from '../platform/deps.js';
import { serviceFor } from '../platform/lookup.js';
import type { CertificateIssuer, KeyPair } from './certificate-issuer.port.js';

/** The engines that speak PostgreSQL's protocol, and so its TLS. */
const POSTGRES_COMPATIBLE: readonly DatabaseEngine[] = ['postgres', 'timescale'];
/** Where the files go in the container, and who owns them there (the image's own postgres user). */
export const TLS_DIR = '/etc/slipway-tls';
const SETTING_KEY = 'database_tls_ca';
const CA_DAYS = 3650;
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
 * PostgreSQL TLS for database services: one CA per install (its key sealed with the secret box in
 * the settings table), and a server certificate for each deployment naming the public hostname and
 * the service slug, mounted into the container with `ssl=on`.
 */
export class DatabaseTlsService {
  /** One CA creation at a time in this process: two at once would sign with a CA that is then replaced. */
  private creating: Promise<KeyPair> | null = null;

  constructor(
    private readonly deps: ServiceDeps,
    private readonly issuer: CertificateIssuer | null,
    private readonly state: TlsStateLocator | null,
  ) {}

  async info(actor: Actor, serviceId: string): Promise<TlsInfo> {
    const service = await this.postgresService(actor, serviceId);
    return {
      active: (await this.state?.tlsActive(service)) ?? false,
      caCertAvailable: (await this.storedAuthority()) !== null,
      publicHostname: this.publicHostnameOf(service),
      publicPort: service.hostPort,
    };
  }

  /** The CA certificate clients verify the server with (`sslrootcert`); 404 before any was made. */
  async caCertificate(actor: Actor, serviceId: string): Promise<string> {
    await this.postgresService(actor, serviceId);
    const authority = await this.storedAuthority();
    if (!authority) throw new NotFoundError('CA certificate', 'database-tls');
    return authority.certPem;
  }

  /**
   * The files and arguments a Postgres-compatible deployment starts with; null for other engines or
   * without an issuer. Makes the CA the first time.
   */
  async mountFor(service: ServiceRecord, signal?: AbortSignal): Promise<TlsMount | null> {
    const engine = databaseEngineOf(service);
    if (!engine || !POSTGRES_COMPATIBLE.includes(engine) || !this.issuer) return null;
    const authority = await this.authority(signal);
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

  private async authority(signal?: AbortSignal): Promise<KeyPair> {
    const stored = await this.storedAuthority(true);
    if (stored) return stored;
    this.creating ??= this.createAuthority(signal).finally(() => {
      this.creating = null;
    });
    return this.creating;
  }

  private async createAuthority(signal?: AbortSignal): Promise<KeyPair> {
    const again = await this.storedAuthority(true);
    if (again) return again;
    const authority = await this.issuer!.createAuthority(`Slipway database CA ${this.deps.config.instanceId}`, CA_DAYS, signal);
    const sealed = { certPem: authority.certPem, keyEncrypted: this.deps.secrets.encrypt(authority.keyPem) };
    await this.deps.store.settings.put(SETTING_KEY, JSON.stringify(sealed), this.deps.clock.now());
    return authority;
  }

  private async storedAuthority(withKey: true): Promise<KeyPair | null>;
  private async storedAuthority(withKey?: false): Promise<{ certPem: string } | null>;
  private async storedAuthority(withKey = false): Promise<KeyPair | { certPem: string } | null> {
    const raw = await this.deps.store.settings.get(SETTING_KEY);
    if (!raw) return null;
    const sealed = JSON.parse(raw) as { certPem: string; keyEncrypted: string };
    return withKey ? { certPem: sealed.certPem, keyPem: this.deps.secrets.decrypt(sealed.keyEncrypted) } : { certPem: sealed.certPem };
  }
}
