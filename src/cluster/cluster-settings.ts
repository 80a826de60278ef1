import type { ServiceDeps } from '../platform/deps.js';
import type { NodeCredentials } from './node-engines.port.js';
import type { Table } from '../persistence/store.js';
import { VersionedCache } from '../platform/versioned-cache.js';

const SETTINGS_TABLES: readonly Table[] = ['Setting'];

/** The cluster once formed: when, and the manager's node and address (what nodes joined). */
export interface FormedCluster {
  formedAt: string;
  managerNodeId: string;
  advertiseAddress: string;
}

/** The registry the cluster pushes to: the platform's own (credentials made here), or an external one. */
export type RegistrySettings =
  | { kind: 'platform'; username: string; password: string; certPem: string; keyPem: string; address: string }
  | { kind: 'external'; address: string; username: string; password: string };

type SealedRegistry =
  | { kind: 'platform'; username: string; passwordEncrypted: string; certPem: string; keyEncrypted: string; address: string }
  | { kind: 'external'; address: string; username: string; passwordEncrypted: string };

const KEYS = {
  formed: 'cluster_formed',
  client: 'cluster_client_tls',
  registry: 'cluster_registry',
} as const;

/**
 * What the cluster keeps in the settings table, one JSON value per key: secrets (the platform's
 * client key, the registry's password and key) sealed with the secret box, never stored in the clear.
 */
export class ClusterSettings {
  /** A cluster, once formed, stays formed: read once. */
  private formedOnce: FormedCluster | null = null;
  /**
   * "Not formed" is asked on every deployment and engine call of a single server: kept until a settings write
   * here, or for a second (another process sharing the database may form it).
   */
  private readonly notFormed = new VersionedCache<'formed', null>(() => this.deps.store.versionOf(SETTINGS_TABLES), 1, 1_000);

  constructor(private readonly deps: ServiceDeps) {}

  async formed(): Promise<FormedCluster | null> {
    if (this.formedOnce) return this.formedOnce;
    if (this.notFormed.get('formed') === null) return null;
    const version = this.deps.store.versionOf(SETTINGS_TABLES);
    const formed = await this.read<FormedCluster>(KEYS.formed);
    if (formed) this.formedOnce = formed;
    else this.notFormed.set('formed', null, version);
    return formed;
  }

  async setFormed(formed: FormedCluster): Promise<void> {
    await this.write(KEYS.formed, formed);
  }

  async clientCredentials(): Promise<Omit<NodeCredentials, 'caPem'> | null> {
    const sealed = await this.read<{ certPem: string; keyEncrypted: string }>(KEYS.client);
    return sealed ? { certPem: sealed.certPem, keyPem: this.deps.secrets.decrypt(sealed.keyEncrypted) } : null;
  }

  async setClientCredentials(credentials: Omit<NodeCredentials, 'caPem'>): Promise<void> {
    await this.write(KEYS.client, { certPem: credentials.certPem, keyEncrypted: this.deps.secrets.encrypt(credentials.keyPem) });
  }

  async registry(): Promise<RegistrySettings | null> {
    const sealed = await this.read<SealedRegistry>(KEYS.registry);
    if (!sealed) return null;
    const password = this.deps.secrets.decrypt(sealed.passwordEncrypted);
    if (sealed.kind === 'external') return { kind: 'external', address: sealed.address, username: sealed.username, password };
    return {
      kind: 'platform',
      username: sealed.username,
      password,
      certPem: sealed.certPem,
      keyPem: this.deps.secrets.decrypt(sealed.keyEncrypted),
      address: sealed.address,
    };
  }

  async setRegistry(registry: RegistrySettings): Promise<void> {
    const { secrets } = this.deps;
    const sealed: SealedRegistry =
      registry.kind === 'external'
        ? {
            kind: 'external',
            address: registry.address,
            username: registry.username,
            passwordEncrypted: secrets.encrypt(registry.password),
          }
        : {
            kind: 'platform',
            username: registry.username,
            passwordEncrypted: secrets.encrypt(registry.password),
            certPem: registry.certPem,
            keyEncrypted: secrets.encrypt(registry.keyPem),
            address: registry.address,
          };
    await this.write(KEYS.registry, sealed);
  }

  private async read<T>(key: string): Promise<T | null> {
    const raw = await this.deps.store.settings.get(key);
    return raw ? (JSON.parse(raw) as T) : null;
  }

  private async write(key: string, value: unknown): Promise<void> {
    await this.deps.store.settings.put(key, JSON.stringify(value), this.deps.clock.now());
  }
}
