import type { ARecordRequest } from '../../src/routing/dns-provider.port.js';
import { ARecordProvider, allPages, type RecordTarget } from './a-record-provider.js';
import { isRecord, malformed, type DnsProviderOptions } from './dns-http.js';

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

/** Zones are DigitalOcean "domains", known by name alone. */
export class DigitalOceanDnsProvider extends ARecordProvider<string, DoRecord> {
  readonly id = 'digitalocean' as const;
  readonly name = 'DigitalOcean';

  constructor(options: DnsProviderOptions = {}) {
    super(DIGITALOCEAN_API_URL, options);
  }

  protected zoneName(zone: string): string {
    return zone;
  }

  protected addressOf(record: DoRecord): string {
    return record.data;
  }

  protected authHeaders(token: string): Record<string, string> {
    return { authorization: `Bearer ${token}` };
  }

  protected errorMessage(body: unknown): string | undefined {
    return doErrorMessage(body);
  }

  protected listZones(request: ARecordRequest): Promise<string[]> {
    return allPages(async (page) => {
      const body = await this.call(request, 'GET', `/domains?per_page=200&page=${page}`);
      const domains = isRecord(body) ? body.domains : undefined;
      if (!Array.isArray(domains)) throw malformed(this.name, 'the domain list');
      const pages = isRecord(body) && isRecord(body.links) && isRecord(body.links.pages) ? body.links.pages : undefined;
      return {
        items: domains.filter((d) => isRecord(d) && typeof d.name === 'string').map((d) => (d as { name: string }).name),
        more: typeof pages?.next === 'string',
      };
    });
  }

  /** The `name` filter takes the fully qualified name; records come back with the label (`@` for the apex). */
  protected async aRecords(request: ARecordRequest, target: RecordTarget<string>): Promise<DoRecord[]> {
    const body = await this.call(request, 'GET', `${this.recordsPath(target)}?${new URLSearchParams({ type: 'A', name: target.fqdn })}`);
    const list = isRecord(body) ? body.domain_records : undefined;
    if (!Array.isArray(list)) throw malformed(this.name, 'the record list');
    return list.filter(isDoRecord).filter((r) => r.type === 'A');
  }

  /** The API documents `type` as required in an update body. */
  protected async updateRecord(request: ARecordRequest, target: RecordTarget<string>, record: DoRecord): Promise<void> {
    await this.call(request, 'PUT', `${this.recordsPath(target)}/${encodeURIComponent(String(record.id))}`, {
      type: 'A',
      data: request.targetIp,
    });
  }

  protected async createRecord(request: ARecordRequest, target: RecordTarget<string>): Promise<void> {
    await this.call(request, 'POST', this.recordsPath(target), { type: 'A', name: target.host, data: request.targetIp, ttl: 1800 });
  }

  private recordsPath(target: RecordTarget<string>): string {
    return `/domains/${encodeURIComponent(target.zoneName)}/records`;
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
