/**
 * A read cache that is right by construction: an entry is served only while the store's write
 * version is the one it was read at. Callers take the version before they read.
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
    if (!entry || entry.version !== this.currentVersion() || Date.now() - entry.at > this.maxAgeMs) return undefined;
    return entry.value;
  }

  set(key: K, value: V, readAtVersion: number): void {
    if (readAtVersion !== this.currentVersion()) return;
    if (this.entries.size >= this.maxEntries && !this.entries.has(key)) {
      this.entries.delete(this.entries.keys().next().value as K);
    }
    this.entries.set(key, { version: readAtVersion, value, at: Date.now() });
  }
}
