import { DnsProviderError, type ARecordRequest, type ARecordResult, type DnsProvider } from '../../src/ports/dns-provider.port.js';
import {
  DEFAULT_DNS_TIMEOUT_MS,
  MAX_ZONE_PAGES,
  dnsRequest,
  isRecord,
  malformed,
  noZone,
  pickZone,
  redact,
  type DnsProviderOptions,
} from './dns-http.js';

export const CLOUDFLARE_API_URL = 'https://api.cloudflare.com/client/v4';

interface CfZone {
  id: string;
  name: string;
}

interface CfRecord {
  id: string;
  type: string;
  name: string;
  content: string;
}

/** Cloudflare API v4: every body is an envelope `{ success, errors: [{ code, message }], messages, result, result_info? }`. */
function cfErrorMessage(body: unknown): string | undefined {
  if (!isRecord(body) || !Array.isArray(body.errors)) return undefined;
  const messages = body.errors
    .filter(isRecord)
    .map((e) => (typeof e.code === 'number' ? `${String(e.message)} (code ${e.code})` : String(e.message)));
  return messages.length ? messages.join('; ') : undefined;
}

export class CloudflareDnsProvider implements DnsProvider {
  readonly id = 'cloudflare' as const;
  readonly name = 'Cloudflare';
  private readonly baseUrl: string;
  private readonly timeoutMs: number;

  constructor(options: DnsProviderOptions = {}) {
    this.baseUrl = options.baseUrl || CLOUDFLARE_API_URL;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_DNS_TIMEOUT_MS;
  }

  async upsertARecord(request: ARecordRequest): Promise<ARecordResult> {
    const zones = await this.listZones(request);
    const picked = pickZone(request.hostname, zones, (z) => z.name);
    if (!picked) throw noZone(this.name, request.hostname);
    const { zone, zoneName, host } = picked;
    const fqdn = host === '@' ? zoneName : `${host}.${zoneName}`;
    const result = (action: ARecordResult['action']): ARecordResult => ({
      action,
      hostname: request.hostname,
      recordType: 'A',
      host,
      zone: zoneName,
      targetIp: request.targetIp,
    });

    const query = new URLSearchParams({ type: 'A', name: fqdn });
    const records = this.result(
      await this.call(request, 'GET', `/zones/${encodeURIComponent(zone.id)}/dns_records?${query}`),
      'the record list',
    );
    if (!Array.isArray(records)) throw malformed(this.name, 'the record list');
    const existing = records.filter(isCfRecord).filter((r) => r.type === 'A');
    if (existing.some((r) => r.content === request.targetIp)) return result('unchanged');
    const first = existing[0];
    if (first) {
      await this.call(request, 'PATCH', `/zones/${encodeURIComponent(zone.id)}/dns_records/${encodeURIComponent(first.id)}`, {
        content: request.targetIp,
      });
      return result('updated');
    }
    await this.call(request, 'POST', `/zones/${encodeURIComponent(zone.id)}/dns_records`, {
      type: 'A',
      name: fqdn,
      content: request.targetIp,
      ttl: 1,
      proxied: false,
    });
    return result('created');
  }

  private async listZones(request: ARecordRequest): Promise<CfZone[]> {
    const zones: CfZone[] = [];
    for (let page = 1; page <= MAX_ZONE_PAGES; page++) {
      const body = await this.call(request, 'GET', `/zones?per_page=50&page=${page}`);
      const result = this.result(body, 'the zone list');
      if (!Array.isArray(result)) throw malformed(this.name, 'the zone list');
      for (const z of result) {
        if (isRecord(z) && typeof z.id === 'string' && typeof z.name === 'string') zones.push({ id: z.id, name: z.name });
      }
      const info = isRecord(body) && isRecord(body.result_info) ? body.result_info : undefined;
      const totalPages = typeof info?.total_pages === 'number' ? info.total_pages : undefined;
      if (result.length === 0 || totalPages === undefined || page >= totalPages) break;
    }
    return zones;
  }

  /** The envelope's `result`. */
  private result(body: unknown, what: string): unknown {
    if (!isRecord(body)) throw malformed(this.name, what);
    return body.result;
  }

  private async call(request: ARecordRequest, method: 'GET' | 'POST' | 'PATCH', path: string, body?: unknown): Promise<unknown> {
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
      errorMessage: cfErrorMessage,
    });
    // A 2xx with `success: false` is still the provider's failure.
    if (isRecord(response.body) && response.body.success === false) {
      const message = redact(`${this.name}: ${cfErrorMessage(response.body) ?? 'request failed'} (HTTP ${response.status})`, request.apiToken);
      throw new DnsProviderError(message, 'upstream', response.status);
    }
    return response.body;
  }
}

function isCfRecord(value: unknown): value is CfRecord {
  return isRecord(value) && typeof value.id === 'string' && typeof value.type === 'string' && typeof value.content === 'string';
}
