import { NotFoundError, UpstreamError, ValidationError } from '../domain/errors.js';
import { DnsProviderError, type DnsProvider } from './dns-provider.port.js';
import { assertWrite, type Actor } from '../domain/access.js';
import type { ServiceDeps } from '../platform/deps.js';
import type { DomainService } from './domain.service.js';
import { presentDomain } from './routing-views.js';
import { PROVIDER_NAMES, type SettingsService } from '../settings/settings.service.js';
import { DNS_PROVIDER_IDS } from '../settings/settings-views.js';
import type { DnsRecordResultView, DomainView } from './routing-views.js';

/** Points a domain's hostname at the platform's public IP at a connected DNS provider. */
export class DnsService {
  private readonly providers: Map<string, DnsProvider>;

  constructor(
    private readonly deps: ServiceDeps,
    private readonly domains: DomainService,
    private readonly settings: SettingsService,
    providers: DnsProvider[],
  ) {
    this.providers = new Map(providers.map((p) => [p.id, p]));
  }

  async createRecord(
    actor: Actor,
    serviceId: string,
    domainId: string,
    providerId: string,
  ): Promise<{ result: DnsRecordResultView; domain: DomainView }> {
    assertWrite(actor);
    const { domain } = await this.domains.get(actor, serviceId, domainId);
    if (!(DNS_PROVIDER_IDS as readonly string[]).includes(providerId)) {
      throw new ValidationError('providerId', `Unknown DNS provider ${JSON.stringify(providerId)}; one of ${DNS_PROVIDER_IDS.join(', ')}`);
    }
    const token = await this.settings.providerToken(providerId);
    if (!token)
      throw new ValidationError(
        'providerId',
        `${providerId} is not connected: add it with PUT /api/settings {dnsProviders: [{providerId, apiToken}]}`,
      );
    const provider = this.providers.get(providerId);
    if (!provider) throw new ValidationError('providerId', `${providerId} is not available on this installation`);
    const targetIp = this.deps.config.publicIp;
    try {
      const record = await provider.upsertARecord({
        hostname: domain.hostname,
        targetIp,
        apiToken: token,
        signal: AbortSignal.timeout(30_000),
      });
      return { result: { provider: providerId, providerName: PROVIDER_NAMES[provider.id], ...record }, domain: presentDomain(domain) };
    } catch (error) {
      if (!(error instanceof DnsProviderError)) throw error;
      if (error.kind === 'not_found') throw new NotFoundError('DNS zone for', domain.hostname);
      throw new UpstreamError(`${PROVIDER_NAMES[provider.id]}: ${error.message}`, {
        provider: providerId,
        ...(error.status ? { status: error.status } : {}),
      });
    }
  }
}
