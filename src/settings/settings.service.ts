import { ValidationError } from '../domain/errors.js';
import { normalizeHostname } from '../domain/validation.js';
import { assertAdministrator, type Actor } from '../domain/access.js';
import type { ServiceDeps } from '../platform/deps.js';
import type { LiveConfig } from './live-config.js';
import type { ObjectStoreConfig } from '../backups/object-store.port.js';
import type { SettingsInput } from './settings.inputs.js';
import type { AiProviderKind, DNS_PROVIDER_IDS, LicenseView, SettingsView } from './settings-views.js';
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
  objectStore?: Omit<ObjectStoreConfig, 'secretAccessKey'> & { secretAccessKeyEncrypted: string };
  /** Whether anyone may sign up once the owner exists. */
  registrationOpen?: boolean;
  /** The SMTP URL holds credentials: sealed, write-only. */
  smtpUrlEncrypted?: string | null;
  mailFrom?: string | null;
  aiProviders?: StoredAiProvider[];
}

interface StoredAiProvider {
  providerId: string;
  kind: AiProviderKind;
  baseUrl: string | null;
  apiKeyEncrypted: string;
  connectedAt: string;
}

/** A connected AI provider with its key decrypted, for the one use case that calls it. */
export interface AiProviderConnection {
  providerId: string;
  kind: AiProviderKind;
  baseUrl: string | null;
  apiKey: string;
}

const KEY = 'platform';

function isSmtpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === 'smtp:' || url.protocol === 'smtps:') && url.hostname !== '';
  } catch {
    return false;
  }
}

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
    assertAdministrator(actor, 'read platform settings');
    return this.present(await this.read(), await this.license());
  }

  /** Verifies a license key offline and stores it; a bad signature or an expired key is a 400 and changes nothing. */
  async activateLicense(actor: Actor, key: string): Promise<LicenseView> {
    assertAdministrator(actor, 'activate a license');
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
    assertAdministrator(actor, 'change platform settings');
    const stored = await this.read();
    const next: StoredSettings = { ...stored };
    if (input.publicIp !== undefined) {
      if (input.publicIp !== null && !IPV4.test(input.publicIp))
        throw new ValidationError('publicIp', `${JSON.stringify(input.publicIp)} is not an IPv4 address`);
      next.publicIp = input.publicIp;
    }
    if (input.rootDomain !== undefined)
      next.rootDomain = input.rootDomain === null || input.rootDomain === '' ? null : normalizeHostname(input.rootDomain, 'rootDomain');
    if (input.registrationOpen !== undefined) next.registrationOpen = input.registrationOpen;
    if (input.smtpUrl !== undefined) {
      if (input.smtpUrl !== null && input.smtpUrl !== '' && !isSmtpUrl(input.smtpUrl))
        throw new ValidationError('smtpUrl', 'smtpUrl must be an smtp:// or smtps:// URL, like smtp://user:password@mail.example.com:587');
      next.smtpUrlEncrypted = input.smtpUrl ? this.deps.secrets.encrypt(input.smtpUrl) : null;
    }
    if (input.mailFrom !== undefined) next.mailFrom = input.mailFrom || null;
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
    if (input.aiProviders !== undefined) {
      const seen = new Set<string>();
      next.aiProviders = input.aiProviders.map((entry, i) => {
        if (seen.has(entry.providerId)) throw new ValidationError(`aiProviders.${i}.providerId`, `${entry.providerId} is listed twice`);
        seen.add(entry.providerId);
        const baseUrl = entry.baseUrl ? aiBaseUrl(entry.baseUrl, `aiProviders.${i}.baseUrl`) : null;
        const existing = stored.aiProviders?.find((p) => p.providerId === entry.providerId);
        if (!entry.apiKey && !existing)
          throw new ValidationError(`aiProviders.${i}.apiKey`, `Connecting ${entry.providerId} needs an apiKey`);
        const changed = !!entry.apiKey || !existing || existing.kind !== entry.kind || existing.baseUrl !== baseUrl;
        return {
          providerId: entry.providerId,
          kind: entry.kind,
          baseUrl,
          apiKeyEncrypted: entry.apiKey ? this.deps.secrets.encrypt(entry.apiKey) : existing!.apiKeyEncrypted,
          connectedAt: changed || !existing ? this.deps.clock.now().toISOString() : existing.connectedAt,
        };
      });
    }
    if (input.objectStore === null) delete next.objectStore;
    else if (input.objectStore !== undefined) {
      const { secretAccessKey, ...rest } = input.objectStore;
      let endpoint: URL;
      try {
        endpoint = new URL(rest.endpoint);
      } catch {
        throw new ValidationError('objectStore.endpoint', 'objectStore.endpoint must be an http(s) URL');
      }
      if (endpoint.protocol !== 'http:' && endpoint.protocol !== 'https:')
        throw new ValidationError('objectStore.endpoint', 'objectStore.endpoint must be an http(s) URL');
      if (endpoint.username || endpoint.password)
        throw new ValidationError(
          'objectStore.endpoint',
          'objectStore.endpoint must not carry credentials; use accessKeyId and secretAccessKey',
        );
      if (!secretAccessKey && !stored.objectStore)
        throw new ValidationError('objectStore.secretAccessKey', 'Connecting an object store needs a secretAccessKey');
      next.objectStore = {
        ...rest,
        secretAccessKeyEncrypted: secretAccessKey
          ? this.deps.secrets.encrypt(secretAccessKey)
          : stored.objectStore!.secretAccessKeyEncrypted,
      };
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

  /** A connected AI provider with its key, or null when none is connected under that id. */
  async aiProvider(providerId: string): Promise<AiProviderConnection | null> {
    const entry = (await this.read()).aiProviders?.find((p) => p.providerId === providerId);
    return entry
      ? { providerId: entry.providerId, kind: entry.kind, baseUrl: entry.baseUrl, apiKey: this.deps.secrets.decrypt(entry.apiKeyEncrypted) }
      : null;
  }

  /** The SMTP server the settings name (decrypted), or null: SMTP_URL applies then. */
  async smtp(): Promise<{ url: string; from: string } | null> {
    const stored = await this.read();
    if (!stored.smtpUrlEncrypted) return null;
    return { url: this.deps.secrets.decrypt(stored.smtpUrlEncrypted), from: stored.mailFrom ?? 'Slipway <slipway@localhost>' };
  }

  /** Signup after the first account: closed unless the owner opened it. */
  async registrationOpen(): Promise<boolean> {
    return (await this.read()).registrationOpen === true;
  }

  /** The object store backups go to, its secret decrypted; null when none is set. */
  async objectStore(): Promise<ObjectStoreConfig | null> {
    const stored = (await this.read()).objectStore;
    if (!stored) return null;
    const { secretAccessKeyEncrypted, ...rest } = stored;
    return { ...rest, secretAccessKey: this.deps.secrets.decrypt(secretAccessKeyEncrypted) };
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
      registrationOpen: stored.registrationOpen === true,
      smtpConfigured: Boolean(stored.smtpUrlEncrypted),
      mailFrom: stored.mailFrom ?? null,
      dnsProviders: (stored.dnsProviders ?? []).map((p) => ({
        providerId: p.providerId,
        providerName: PROVIDER_NAMES[p.providerId],
        hasApiToken: true,
        connectedAt: p.connectedAt,
      })),
      aiProviders: (stored.aiProviders ?? []).map((p) => ({
        providerId: p.providerId,
        kind: p.kind,
        baseUrl: p.baseUrl,
        hasApiKey: true,
        connectedAt: p.connectedAt,
      })),
      objectStore: stored.objectStore
        ? {
            endpoint: stored.objectStore.endpoint,
            region: stored.objectStore.region,
            bucket: stored.objectStore.bucket,
            accessKeyId: stored.objectStore.accessKeyId,
            forcePathStyle: stored.objectStore.forcePathStyle,
            hasSecretAccessKey: true,
          }
        : null,
    };
  }
}

/** An AI API's base URL: http(s), no credentials (the key is the one secret, and it is stored encrypted), no query. */
function aiBaseUrl(raw: string, field: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ValidationError(field, 'must be an http(s) URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ValidationError(field, 'must be an http(s) URL');
  if (url.username || url.password) throw new ValidationError(field, 'must not hold credentials: give the key as apiKey');
  if (url.search || url.hash) throw new ValidationError(field, 'must not have a query or a fragment');
  return url.toString().replace(/\/+$/, '');
}
