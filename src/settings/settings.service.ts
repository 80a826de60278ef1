import { ValidationError } from '../domain/errors.js';
import { normalizeHostname } from '../domain/validation.js';
import { assertAllProjects, assertWrite, type Actor } from '../domain/access.js';
import type { ServiceDeps } from '../platform/deps.js';
import type { LiveConfig } from './live-config.js';
import type { SettingsInput } from './settings.inputs.js';
import type { DNS_PROVIDER_IDS, LicenseView, SettingsView } from '../platform/views.js';
import { verifyLicense, type LicensePayload } from './license.js';

type ProviderId = (typeof DNS_PROVIDER_IDS)[number];

export const PROVIDER_NAMES: Record<ProviderId, string> = {
  cloudflare: 'Cloudflare',
  digitalocean: 'DigitalOcean',
  hetzner: 'Hetzner DNS',
};

interface StoredSettings {
  publicIp?: string | null;
  rootDomain?: string | null;
  dnsProviders?: Array<{ providerId: ProviderId; apiTokenEncrypted: string; connectedAt: string }>;
}

const KEY = 'platform';
const LICENSE_KEY = 'license';

interface StoredLicense extends LicensePayload {
  key: string;
  activatedAt: string;
}
const IPV4 = /^(25[0-5]|2[0-4]\d|1?\d?\d)(\.(25[0-5]|2[0-4]\d|1?\d?\d)){3}$/;

/**
 * Platform-wide settings: the public IP and root domain (overriding PUBLIC_IP and ROOT_DOMAIN),
 * and the connected DNS providers, whose tokens are stored encrypted and never shown again.
 */
export class SettingsService {
  private readonly defaults: { publicIp: string; rootDomain: string | null };

  constructor(
    private readonly deps: ServiceDeps,
    /** The running configuration, which this use case alone replaces. */
    private readonly live: LiveConfig,
    /** The root domain names every generated hostname: the routes follow a change at once. */
    private readonly onRootDomainChange: () => Promise<unknown> = async () => {},
  ) {
    this.defaults = live.defaults();
  }

  /** Applies stored overrides to the running configuration; called at start. */
  async load(): Promise<void> {
    this.apply(await this.read());
  }

  async get(actor: Actor): Promise<SettingsView> {
    assertWrite(actor);
    assertAllProjects(actor, 'read platform settings');
    return this.present(await this.read(), await this.license());
  }

  /** Verifies a license key offline and stores it; a bad signature or an expired key is a 400 and changes nothing. */
  async activateLicense(actor: Actor, key: string): Promise<LicenseView> {
    assertWrite(actor);
    assertAllProjects(actor, 'activate a license');
    const now = this.deps.clock.now();
    const payload = verifyLicense(key, this.deps.config.licensePublicKey, now);
    const stored: StoredLicense = {
      licensee: payload.licensee,
      plan: payload.plan,
      expiresAt: payload.expiresAt,
      key: key.trim(),
      activatedAt: now.toISOString(),
    };
    await this.deps.store.settings.put(LICENSE_KEY, JSON.stringify(stored), now);
    return this.license();
  }

  /** The activated license as anyone may see it: the key itself is never shown. */
  async license(): Promise<LicenseView> {
    const raw = await this.deps.store.settings.get(LICENSE_KEY);
    if (!raw) return { valid: false, licensee: null, plan: null, expiresAt: null };
    const stored = JSON.parse(raw) as StoredLicense;
    const expiresAt = new Date(stored.expiresAt);
    // Checked again on every read: past its expiry, or signed by another key than the one configured now, it is not valid.
    let valid = true;
    try {
      verifyLicense(stored.key, this.deps.config.licensePublicKey, this.deps.clock.now());
    } catch {
      valid = false;
    }
    return {
      valid,
      licensee: stored.licensee,
      plan: stored.plan,
      expiresAt: expiresAt.toISOString(),
    };
  }

  async update(actor: Actor, input: SettingsInput): Promise<SettingsView> {
    assertWrite(actor);
    assertAllProjects(actor, 'change platform settings');
    const stored = await this.read();
    const next: StoredSettings = { ...stored };
    if (input.publicIp !== undefined) {
      if (input.publicIp !== null && !IPV4.test(input.publicIp))
        throw new ValidationError('publicIp', `${JSON.stringify(input.publicIp)} is not an IPv4 address`);
      next.publicIp = input.publicIp;
    }
    if (input.rootDomain !== undefined)
      next.rootDomain = input.rootDomain === null || input.rootDomain === '' ? null : normalizeHostname(input.rootDomain, 'rootDomain');
    if (input.dnsProviders !== undefined) {
      const seen = new Set<string>();
      next.dnsProviders = input.dnsProviders.map((entry, i) => {
        if (seen.has(entry.providerId)) throw new ValidationError(`dnsProviders.${i}.providerId`, `${entry.providerId} is listed twice`);
        seen.add(entry.providerId);
        const existing = stored.dnsProviders?.find((p) => p.providerId === entry.providerId);
        if (!entry.apiToken && !existing)
          throw new ValidationError(`dnsProviders.${i}.apiToken`, `Connecting ${entry.providerId} needs an apiToken`);
        return {
          providerId: entry.providerId,
          apiTokenEncrypted: entry.apiToken ? this.deps.secrets.encrypt(entry.apiToken) : existing!.apiTokenEncrypted,
          connectedAt: entry.apiToken || !existing ? this.deps.clock.now().toISOString() : existing.connectedAt,
        };
      });
    }
    await this.deps.store.settings.put(KEY, JSON.stringify(next), this.deps.clock.now());
    const rootDomainBefore = this.live.current().rootDomain;
    this.apply(next);
    if (this.live.current().rootDomain !== rootDomainBefore) await this.onRootDomainChange();
    return this.present(next, await this.license());
  }

  /** The decrypted token of a connected provider, or null when it is not connected. */
  async providerToken(providerId: string): Promise<string | null> {
    const entry = (await this.read()).dnsProviders?.find((p) => p.providerId === providerId);
    return entry ? this.deps.secrets.decrypt(entry.apiTokenEncrypted) : null;
  }

  private async read(): Promise<StoredSettings> {
    const raw = await this.deps.store.settings.get(KEY);
    return raw ? (JSON.parse(raw) as StoredSettings) : {};
  }

  private apply(stored: StoredSettings): void {
    this.live.apply({
      publicIp: stored.publicIp ?? this.defaults.publicIp,
      rootDomain: stored.rootDomain === undefined ? this.defaults.rootDomain : stored.rootDomain,
    });
  }

  private present(stored: StoredSettings, license: LicenseView): SettingsView {
    return {
      license,
      publicIp: stored.publicIp ?? this.defaults.publicIp,
      rootDomain: stored.rootDomain === undefined ? this.defaults.rootDomain : stored.rootDomain,
      dnsProviders: (stored.dnsProviders ?? []).map((p) => ({
        providerId: p.providerId,
        providerName: PROVIDER_NAMES[p.providerId],
        hasApiToken: true,
        connectedAt: p.connectedAt,
      })),
    };
  }
}
