import { X509Certificate } from 'node:crypto';
import type { ServiceDeps } from '../platform/deps.js';
import type { CertificateIssuer, KeyPair } from './certificate-issuer.port.js';

/** Kept under this settings key since the CA first signed database certificates; it is the install's one CA. */
const SETTING_KEY = 'database_tls_ca';
const CA_DAYS = 3650;

/**
 * The install's certificate authority: made once, whoever asks first (a Postgres deployment, the
 * cluster forming), its key sealed with the secret box in the settings table. It signs database
 * server certificates, the registry's, each node engine's (server auth only) and the platform's
 * client certificate for those engines (client auth only).
 */
export class CertificateAuthority {
  /** One creation at a time in this process: two at once would sign with a CA that is then replaced. */
  private creating: Promise<KeyPair> | null = null;

  constructor(
    private readonly deps: ServiceDeps,
    private readonly issuer: CertificateIssuer | null,
  ) {}

  get canIssue(): boolean {
    return this.issuer !== null;
  }

  /** The CA with its key, made the first time. */
  async authority(signal?: AbortSignal): Promise<KeyPair> {
    const stored = await this.stored(true);
    if (stored) return stored;
    this.creating ??= this.create(signal).finally(() => {
      this.creating = null;
    });
    return this.creating;
  }

  /** The CA certificate, null before any was made. */
  async certificate(): Promise<string | null> {
    return (await this.stored(false))?.certPem ?? null;
  }

  private async create(signal?: AbortSignal): Promise<KeyPair> {
    if (!this.issuer) throw new Error('This platform has no certificate issuer');
    const again = await this.stored(true);
    if (again) return again;
    const authority = await this.issuer.createAuthority(`Slipway database CA ${this.deps.config.instanceId}`, CA_DAYS, signal);
    const sealed = { certPem: authority.certPem, keyEncrypted: this.deps.secrets.encrypt(authority.keyPem) };
    await this.deps.store.settings.put(SETTING_KEY, JSON.stringify(sealed), this.deps.clock.now());
    return authority;
  }

  private async stored(withKey: true): Promise<KeyPair | null>;
  private async stored(withKey: false): Promise<{ certPem: string } | null>;
  private async stored(withKey: boolean): Promise<KeyPair | { certPem: string } | null> {
    const raw = await this.deps.store.settings.get(SETTING_KEY);
    if (!raw) return null;
    const sealed = JSON.parse(raw) as { certPem: string; keyEncrypted: string };
    return withKey ? { certPem: sealed.certPem, keyPem: this.deps.secrets.decrypt(sealed.keyEncrypted) } : { certPem: sealed.certPem };
  }
}

/** A certificate's SHA-256 fingerprint as lower-case hex without separators (what `openssl x509 -fingerprint -sha256` prints, normalized). */
export function fingerprintOf(certPem: string): string {
  return new X509Certificate(certPem).fingerprint256.replaceAll(':', '').toLowerCase();
}
