import { DnsProviderError, type ARecordRequest } from '../../src/routing/dns-provider.port.js';
import { ARecordProvider, allPages, type RecordTarget } from './a-record-provider.js';
import { isRecord, malformed, redact, type DnsHttpRequest, type DnsProviderOptions } from './dns-http.js';

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

export class CloudflareDnsProvider extends ARecordProvider<CfZone, CfRecord> {
  readonly id = 'cloudflare' as const;
  readonly name = 'Cloudflare';

  constructor(options: DnsProviderOptions = {}) {
    super(CLOUDFLARE_API_URL, options);
  }

  protected zoneName(zone: CfZone): string {
    return zone.name;
  }

  protected addressOf(record: CfRecord): string {
    return record.content;
  }

  protected authHeaders(token: string): Record<string, string> {
    return { authorization: `Bearer ${token}` };
  }

  protected errorMessage(body: unknown): string | undefined {
    return cfErrorMessage(body);
  }

  protected listZones(request: ARecordRequest): Promise<CfZone[]> {
    return allPages(async (page) => {
      const body = await this.call(request, 'GET', `/zones?per_page=50&page=${page}`);
      const result = this.result(body, 'the zone list');
      if (!Array.isArray(result)) throw malformed(this.name, 'the zone list');
      const info = isRecord(body) && isRecord(body.result_info) ? body.result_info : undefined;
      const totalPages = typeof info?.total_pages === 'number' ? info.total_pages : undefined;
      return {
        items: result
          .filter((z): z is CfZone => isRecord(z) && typeof z.id === 'string' && typeof z.name === 'string')
          .map((z) => ({ id: z.id, name: z.name })),
        more: totalPages !== undefined && page < totalPages,
      };
    });
  }

  protected async aRecords(request: ARecordRequest, target: RecordTarget<CfZone>): Promise<CfRecord[]> {
    const query = new URLSearchParams({ type: 'A', name: target.fqdn });
    const records = this.result(
      await this.call(request, 'GET', `/zones/${encodeURIComponent(target.zone.id)}/dns_records?${query}`),
      'the record list',
    );
    if (!Array.isArray(records)) throw malformed(this.name, 'the record list');
    return records.filter(isCfRecord).filter((r) => r.type === 'A');
  }

  protected async updateRecord(request: ARecordRequest, target: RecordTarget<CfZone>, record: CfRecord): Promise<void> {
    await this.call(request, 'PATCH', `/zones/${encodeURIComponent(target.zone.id)}/dns_records/${encodeURIComponent(record.id)}`, {
      content: request.targetIp,
    });
  }

  protected async createRecord(request: ARecordRequest, target: RecordTarget<CfZone>): Promise<void> {
    await this.call(request, 'POST', `/zones/${encodeURIComponent(target.zone.id)}/dns_records`, {
      type: 'A',
      name: target.fqdn,
      content: request.targetIp,
      ttl: 1,
      proxied: false,
    });
  }

  /** A 2xx with `success: false` is still the provider's failure. */
  protected override async call(request: ARecordRequest, method: DnsHttpRequest['method'], path: string, body?: unknown): Promise<unknown> {
    const answer = await super.call(request, method, path, body);
    if (isRecord(answer) && answer.success === false) {
      throw new DnsProviderError(redact(`${this.name}: ${cfErrorMessage(answer) ?? 'request failed'}`, request.apiToken), 'upstream');
    }
    return answer;
  }

  /** The envelope's `result`. */
  private result(body: unknown, what: string): unknown {
    if (!isRecord(body)) throw malformed(this.name, what);
    return body.result;
  }
}

function isCfRecord(value: unknown): value is CfRecord {
  return isRecord(value) && typeof value.id === 'string' && typeof value.type === 'string' && typeof value.content === 'string';
}
