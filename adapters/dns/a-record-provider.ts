import type { ARecordRequest, ARecordResult, DnsProvider } from '../../src/routing/dns-provider.port.js';
import {
  DEFAULT_DNS_TIMEOUT_MS,
  MAX_ZONE_PAGES,
  dnsRequest,
  noZone,
  pickZone,
  type DnsHttpRequest,
  type DnsProviderOptions,
} from './dns-http.js';

/** Where the record goes: the zone the hostname falls in, its label there (`@` for the apex) and full name. */
export interface RecordTarget<Zone> {
  zone: Zone;
  zoneName: string;
  host: string;
  fqdn: string;
}

/**
 * The part every vendor shares: find the zone by longest suffix, then leave, update or create the
 * A record. A vendor adapter says only how its API lists zones and records and writes one.
 */
export abstract class ARecordProvider<Zone, Rec> implements DnsProvider {
  abstract readonly id: DnsProvider['id'];
  abstract readonly name: string;
  protected readonly baseUrl: string;
  protected readonly timeoutMs: number;

  constructor(defaultBaseUrl: string, options: DnsProviderOptions) {
    this.baseUrl = options.baseUrl || defaultBaseUrl;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_DNS_TIMEOUT_MS;
  }

  protected abstract listZones(request: ARecordRequest): Promise<Zone[]>;
  protected abstract zoneName(zone: Zone): string;
  /** The A records already named like the target. */
  protected abstract aRecords(request: ARecordRequest, target: RecordTarget<Zone>): Promise<Rec[]>;
  protected abstract addressOf(record: Rec): string;
  protected abstract updateRecord(request: ARecordRequest, target: RecordTarget<Zone>, record: Rec): Promise<void>;
  protected abstract createRecord(request: ARecordRequest, target: RecordTarget<Zone>): Promise<void>;
  protected abstract authHeaders(token: string): Record<string, string>;
  protected abstract errorMessage(body: unknown): string | undefined;

  async upsertARecord(request: ARecordRequest): Promise<ARecordResult> {
    const picked = pickZone(request.hostname, await this.listZones(request), (z) => this.zoneName(z));
    if (!picked) throw noZone(this.name, request.hostname);
    const { zone, zoneName, host } = picked;
    const target: RecordTarget<Zone> = { zone, zoneName, host, fqdn: host === '@' ? zoneName : `${host}.${zoneName}` };
    const result = (action: ARecordResult['action']): ARecordResult => ({
      action,
      hostname: request.hostname,
      recordType: 'A',
      host,
      zone: zoneName,
      targetIp: request.targetIp,
    });

    const existing = await this.aRecords(request, target);
    if (existing.some((r) => this.addressOf(r) === request.targetIp)) return result('unchanged');
    if (existing[0]) {
      await this.updateRecord(request, target, existing[0]);
      return result('updated');
    }
    await this.createRecord(request, target);
    return result('created');
  }

  /** One API call with the vendor's auth and error format; every failure is a DnsProviderError. */
  protected async call(request: ARecordRequest, method: DnsHttpRequest['method'], path: string, body?: unknown): Promise<unknown> {
    const response = await dnsRequest({
      provider: this.name,
      baseUrl: this.baseUrl,
      timeoutMs: this.timeoutMs,
      method,
      path,
      headers: this.authHeaders(request.apiToken),
      body,
      signal: request.signal,
      token: request.apiToken,
      errorMessage: (b) => this.errorMessage(b),
    });
    return response.body;
  }
}

/** Reads pages until one says it is the last (or is empty), at most MAX_ZONE_PAGES. */
export async function allPages<T>(fetchPage: (page: number) => Promise<{ items: T[]; more: boolean }>): Promise<T[]> {
  const all: T[] = [];
  for (let page = 1; page <= MAX_ZONE_PAGES; page++) {
    const { items, more } = await fetchPage(page);
    all.push(...items);
    if (items.length === 0 || !more) break;
  }
  return all;
}
