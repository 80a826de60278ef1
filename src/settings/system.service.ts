import type { PublicSystemView } from './settings-views.js';
import type { SettingsService } from './settings.service.js';

/** The release version the public system endpoint reports (kept with package.json's). */
export const SLIPWAY_VERSION = '0.1.0';

export interface EnabledFeatures {
  deployments: boolean;
  reverseProxy: boolean;
  dns: boolean;
}

/** What anyone may know about this installation, without a key: nothing secret. */
export class SystemService {
  constructor(
    private readonly settings: SettingsService,
    private readonly features: EnabledFeatures,
    /** Whether the first account exists; unknown (true) where nothing tells. */
    private readonly ownerExists: () => Promise<boolean> = async () => true,
  ) {}

  async publicInfo(): Promise<PublicSystemView> {
    const features = ['databases'];
    if (this.features.deployments) features.push('deployments');
    if (this.features.reverseProxy) features.push('reverse-proxy');
    if (this.features.dns) features.push('dns');
    return {
      version: SLIPWAY_VERSION,
      registrationOpen: await this.settings.registrationOpen(),
      ownerExists: await this.ownerExists(),
      features: features.sort(),
      license: await this.settings.license(),
    };
  }
}
