import type { Table } from '../persistence/store.js';
import { noteCheckedRead, tracingReads } from './read-trace.js';

/**
 * What the caches read from, by table (see Store.versionOf): a cache is dropped by writes to these and
 * by no other. The catalog: projects, their environments, services with their sources, domains, settings.
 */
export const CATALOG_TABLES: readonly Table[] = [
  'Project',
  'Environment',
  'Service',
  'ServiceDatabase',
  'ServiceStorage',
  'Domain',
  'Setting',
];
/** Which server holds a database's volume, and that server's state (a service on a `down` one is `unavailable`). */
export const HOLDER_TABLES: readonly Table[] = ['Server', 'ServicePlacement'];
/** A service's overview and where its database answers: the catalog, its variables, its deployments and its server. */
export const SERVICE_TABLES: readonly Table[] = [...CATALOG_TABLES, 'EnvVar', 'Deployment', ...HOLDER_TABLES];

/**
 * A read cache that is right by construction: an entry is served only while the store's write
 * version (of the tables it reads from) is the one it was read at. Callers take the version before they read.
 */
export class VersionedCache<K, V> {
  private readonly entries = new Map<K, { version: number; value: V; at: number }>();

  constructor(
    private readonly currentVersion: () => number,
    private readonly maxEntries = 1000,
    /** For rows another process may change (API keys, through the CLI): how stale an entry may get. */
    private readonly maxAgeMs = Number.POSITIVE_INFINITY,
  ) {}

  get(key: K): V | undefined {
    const entry = this.entries.get(key);
    if (!entry || !this.isCurrent(key, entry)) return undefined;
    if (tracingReads()) noteCheckedRead(() => this.isCurrent(key, entry));
    return entry.value;
  }

  private isCurrent(key: K, entry: { version: number; at: number }): boolean {
    return this.entries.get(key) === entry && entry.version === this.currentVersion() && Date.now() - entry.at <= this.maxAgeMs;
  }

  set(key: K, value: V, readAtVersion: number): void {
    if (readAtVersion !== this.currentVersion()) return;
    if (this.entries.size >= this.maxEntries && !this.entries.has(key)) {
      this.entries.delete(this.entries.keys().next().value as K);
    }
    this.entries.set(key, { version: readAtVersion, value, at: Date.now() });
  }
}
