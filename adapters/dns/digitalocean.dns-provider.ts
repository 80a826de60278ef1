import type { ARecordRequest, ARecordResult, DnsProvider } from '../../src/ports/dns-provider.port.js';
import {
  DEFAULT_DNS_TIMEOUT_MS,
  MAX_ZONE_PAGES,
  dnsRequest,
  isRecord,
  malformed,
  noZone,
  pickZone,
  type DnsProviderOptions,
} from './dns-http.js';

export const DIGITALOCEAN_API_URL = 'https://api.digitalocean.com/v2';

interface DoRecord {
  id: number | string;
  type: string;
  name: string;
  data: string;
}

/** DigitalOcean errors are `{ id, message, request_id? }`. */
function doErrorMessage(body: unknown): string | undefined {
  return isRecord(body) && typeof body.message === 'string' ? body.message : undefined;
}

export class DigitalOceanDnsProvider implements DnsProvider {
  readonly id = 'digitalocean' as const;
  readonly name = 'DigitalOcean';
  private readonly baseUrl: string;
  private readonly timeoutMs: number;

  constructor(options: DnsProviderOptions = {}) {
    this.baseUrl = options.baseUrl || DIGITALOCEAN_API_URL;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_DNS_TIMEOUT_MS;
  }

  async upsertARecord(request: ARecordRequest): Promise<ARecordResult> {
    const domains = await this.listDomains(request);
    const picked = pickZone(request.hostname, domains, (d) => d);
    if (!picked) throw noZone(this.name, request.hostname);
    const { zoneName, host } = picked;
    const fqdn = host === '@' ? zoneName : `${host}.${zoneName}`;
    const result = (action: ARecordResult['action']): ARecordResult => ({
      action,
      hostname: request.hostname,
      recordType: 'A',
      host,
      zone: zoneName,
      targetIp: request.targetIp,
    });
    const records = `/domains/${encodeURIComponent(zoneName)}/records`;

    // The `name` filter takes the fully qualified name; records come back with the label (`@` for the apex).
    const body = await this.call(request, 'GET', `${records}?${new URLSearchParams({ type: 'A', name: fqdn })}`);
    const list = isRecord(body) ? body.domain_records : undefined;
    if (!Array.isArray(list)) throw malformed(this.name, 'the record list');
    const existing = list.filter(isDoRecord).filter((r) => r.type === 'A');
    if (existing.some((r) => r.data === request.targetIp)) return result('unchanged');
    const first = existing[0];
    if (first) {
      // The API documents `type` as required in an update body.
      await this.call(request, 'PUT', `${records}/${encodeURIComponent(String(first.id))}`, { type: 'A', data: request.targetIp });
      return result('updated');
    }
    await this.call(request, 'POST', records, { type: 'A', name: host, data: request.targetIp, ttl: 1800 });
    return result('created');
  }

  private async listDomains(request: ARecordRequest): Promise<string[]> {
    const names: string[] = [];
    for (let page = 1; page <= MAX_ZONE_PAGES; page++) {
      const body = await this.call(request, 'GET', `/domains?per_page=200&page=${page}`);
      const domains = isRecord(body) ? body.domains : undefined;
      if (!Array.isArray(domains)) throw malformed(this.name, 'the domain list');
      for (const d of domains) if (isRecord(d) && typeof d.name === 'string') names.push(d.name);
      const pages = isRecord(body) && isRecord(body.links) && isRecord(body.links.pages) ? body.links.pages : undefined;
      if (domains.length === 0 || typeof pages?.next !== 'string') break;
    }
    return names;
  }

  private async call(request: ARecordRequest, method: 'GET' | 'POST' | 'PUT', path: string, body?: unknown): Promise<unknown> {
    const response = await dnsRequest({
      provider: this.name,
      baseUrl: this.baseUrl,
      timeoutMs: this.timeoutMs,
      method,
      path,
      headers: { authorization: `Bearer ${request.apiToken}` },
      body,
      signal: request.signal,
      token: request.apiToken,
      errorMessage: doErrorMessage,
    });
    return response.body;
  }
}

function isDoRecord(value: unknown): value is DoRecord {
  return (
    isRecord(value) &&
    (typeof value.id === 'number' || typeof value.id === 'string') &&
    typeof value.type === 'string' &&
    typeof value.data === 'string'
  );
}
