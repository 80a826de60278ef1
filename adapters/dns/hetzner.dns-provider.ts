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

export const HETZNER_DNS_API_URL = 'https://dns.hetzner.com/api/v1';

interface HzZone {
  id: string;
  name: string;
}

interface HzRecord {
  id: string;
  type: string;
  name: string;
  value: string;
  ttl?: number;
}

/** Hetzner DNS errors are `{ error: { message, code } }`, or `{ message }` from its gateway (e.g. on 401). */
function hzErrorMessage(body: unknown): string | undefined {
  if (!isRecord(body)) return undefined;
  if (isRecord(body.error) && typeof body.error.message === 'string' && body.error.message) return body.error.message;
  return typeof body.message === 'string' ? body.message : undefined;
}

/** Reads `meta.pagination.last_page`, undefined when the response has no pagination. */
function lastPage(body: unknown): number | undefined {
  if (!isRecord(body) || !isRecord(body.meta) || !isRecord(body.meta.pagination)) return undefined;
  const last = body.meta.pagination.last_page;
  return typeof last === 'number' ? last : undefined;
}

export class HetznerDnsProvider implements DnsProvider {
  readonly id = 'hetzner' as const;
  readonly name = 'Hetzner DNS';
  private readonly baseUrl: string;
  private readonly timeoutMs: number;

  constructor(options: DnsProviderOptions = {}) {
    this.baseUrl = options.baseUrl || HETZNER_DNS_API_URL;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_DNS_TIMEOUT_MS;
  }

  async upsertARecord(request: ARecordRequest): Promise<ARecordResult> {
    const zones = await this.listZones(request);
    const picked = pickZone(request.hostname, zones, (z) => z.name);
    if (!picked) throw noZone(this.name, request.hostname);
    const { zone, zoneName, host } = picked;
    const result = (action: ARecordResult['action']): ARecordResult => ({
      action,
      hostname: request.hostname,
      recordType: 'A',
      host,
      zone: zoneName,
      targetIp: request.targetIp,
    });

    // Record names are labels relative to the zone, `@` for the apex; the API has no name filter.
    const existing = (await this.listRecords(request, zone.id)).filter((r) => r.type === 'A' && r.name.toLowerCase() === host);
    if (existing.some((r) => r.value === request.targetIp)) return result('unchanged');
    const first = existing[0];
    if (first) {
      await this.call(request, 'PUT', `/records/${encodeURIComponent(first.id)}`, {
        zone_id: zone.id,
        type: 'A',
        name: host,
        value: request.targetIp,
        ttl: first.ttl ?? 3600,
      });
      return result('updated');
    }
    await this.call(request, 'POST', '/records', { zone_id: zone.id, type: 'A', name: host, value: request.targetIp, ttl: 3600 });
    return result('created');
  }

  private async listZones(request: ARecordRequest): Promise<HzZone[]> {
    const zones: HzZone[] = [];
    for (let page = 1; page <= MAX_ZONE_PAGES; page++) {
      const body = await this.call(request, 'GET', `/zones?per_page=100&page=${page}`);
      const list = isRecord(body) ? body.zones : undefined;
      if (!Array.isArray(list)) throw malformed(this.name, 'the zone list');
      for (const z of list) if (isRecord(z) && typeof z.id === 'string' && typeof z.name === 'string') zones.push({ id: z.id, name: z.name });
      const last = lastPage(body);
      if (list.length === 0 || last === undefined || page >= last) break;
    }
    return zones;
  }

  private async listRecords(request: ARecordRequest, zoneId: string): Promise<HzRecord[]> {
    const records: HzRecord[] = [];
    for (let page = 1; page <= MAX_ZONE_PAGES; page++) {
      const query = new URLSearchParams({ zone_id: zoneId, per_page: '100', page: String(page) });
      const body = await this.call(request, 'GET', `/records?${query}`);
      const list = isRecord(body) ? body.records : undefined;
      if (!Array.isArray(list)) throw malformed(this.name, 'the record list');
      for (const r of list) if (isHzRecord(r)) records.push(r);
      const last = lastPage(body);
      if (list.length === 0 || last === undefined || page >= last) break;
    }
    return records;
  }

  private async call(request: ARecordRequest, method: 'GET' | 'POST' | 'PUT', path: string, body?: unknown): Promise<unknown> {
    const response = await dnsRequest({
      provider: this.name,
      baseUrl: this.baseUrl,
      timeoutMs: this.timeoutMs,
      method,
      path,
      headers: { 'Auth-API-Token': request.apiToken },
      body,
      signal: request.signal,
      token: request.apiToken,
      errorMessage: hzErrorMessage,
    });
    return response.body;
  }
}

function isHzRecord(value: unknown): value is HzRecord {
  return isRecord(value) && typeof value.id === 'string' && typeof value.type === 'string' && typeof value.name === 'string' && typeof value.value === 'string';
}
