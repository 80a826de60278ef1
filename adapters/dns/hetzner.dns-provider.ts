import type { ARecordRequest } from '../../src/routing/dns-provider.port.js';
import { ARecordProvider, allPages, type RecordTarget } from './a-record-provider.js';
import { isRecord, malformed, type DnsProviderOptions } from './dns-http.js';

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

export class HetznerDnsProvider extends ARecordProvider<HzZone, HzRecord> {
  readonly id = 'hetzner' as const;
  readonly name = 'Hetzner DNS';

  constructor(options: DnsProviderOptions = {}) {
    super(HETZNER_DNS_API_URL, options);
  }

  protected zoneName(zone: HzZone): string {
    return zone.name;
  }

  protected addressOf(record: HzRecord): string {
    return record.value;
  }

  protected authHeaders(token: string): Record<string, string> {
    return { 'Auth-API-Token': token };
  }

  protected errorMessage(body: unknown): string | undefined {
    return hzErrorMessage(body);
  }

  protected listZones(request: ARecordRequest): Promise<HzZone[]> {
    return allPages(async (page) => {
      const body = await this.call(request, 'GET', `/zones?per_page=100&page=${page}`);
      const list = isRecord(body) ? body.zones : undefined;
      if (!Array.isArray(list)) throw malformed(this.name, 'the zone list');
      const last = lastPage(body);
      return {
        items: list
          .filter((z): z is HzZone => isRecord(z) && typeof z.id === 'string' && typeof z.name === 'string')
          .map((z) => ({ id: z.id, name: z.name })),
        more: last !== undefined && page < last,
      };
    });
  }

  /** Record names are labels relative to the zone, `@` for the apex; the API has no name filter. */
  protected async aRecords(request: ARecordRequest, target: RecordTarget<HzZone>): Promise<HzRecord[]> {
    const records = await allPages(async (page) => {
      const query = new URLSearchParams({ zone_id: target.zone.id, per_page: '100', page: String(page) });
      const body = await this.call(request, 'GET', `/records?${query}`);
      const list = isRecord(body) ? body.records : undefined;
      if (!Array.isArray(list)) throw malformed(this.name, 'the record list');
      const last = lastPage(body);
      return { items: list.filter(isHzRecord), more: last !== undefined && page < last };
    });
    return records.filter((r) => r.type === 'A' && r.name.toLowerCase() === target.host);
  }

  protected async updateRecord(request: ARecordRequest, target: RecordTarget<HzZone>, record: HzRecord): Promise<void> {
    await this.call(request, 'PUT', `/records/${encodeURIComponent(record.id)}`, {
      zone_id: target.zone.id,
      type: 'A',
      name: target.host,
      value: request.targetIp,
      ttl: record.ttl ?? 3600,
    });
  }

  protected async createRecord(request: ARecordRequest, target: RecordTarget<HzZone>): Promise<void> {
    await this.call(request, 'POST', '/records', {
      zone_id: target.zone.id,
      type: 'A',
      name: target.host,
      value: request.targetIp,
      ttl: 3600,
    });
  }
}

function isHzRecord(value: unknown): value is HzRecord {
  return (
    isRecord(value) &&
    typeof value.id === 'string' &&
    typeof value.type === 'string' &&
    typeof value.name === 'string' &&
    typeof value.value === 'string'
  );
}
