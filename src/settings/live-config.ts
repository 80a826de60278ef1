import type { PlatformConfig } from '../platform/platform-config.js';

/** What the stored platform settings override in the start-up configuration. */
export type ConfigOverrides = Pick<PlatformConfig, 'publicIp' | 'rootDomain'>;

/**
 * The running configuration: the one resolved at start with the stored settings applied. Readers
 * take `current()`, a snapshot never changed in place; only the settings use case calls `apply`,
 * which replaces it. The start-up object is never written to.
 */
export class LiveConfig {
  private snapshot: PlatformConfig;

  constructor(private readonly startup: PlatformConfig) {
    this.snapshot = startup;
  }

  current(): PlatformConfig {
    return this.snapshot;
  }

  /** The values before any stored setting: what clearing a setting returns to. */
  defaults(): ConfigOverrides {
    return { publicIp: this.startup.publicIp, rootDomain: this.startup.rootDomain };
  }

  apply(overrides: ConfigOverrides): void {
    if (overrides.publicIp === this.snapshot.publicIp && overrides.rootDomain === this.snapshot.rootDomain) return;
    this.snapshot = { ...this.startup, ...overrides };
  }
}
