/** An A record the platform wants at a DNS provider. */
export interface ARecordRequest {
  /** Fully qualified, lower case, e.g. `app.example.com`. */
  hostname: string;
  targetIp: string;
  apiToken: string;
  signal: AbortSignal;
}

/** The spec's DNS record result, less `providerName` which the registry knows. */
export interface ARecordResult {
  action: 'created' | 'updated' | 'unchanged';
  hostname: string;
  recordType: 'A';
  /** The label part, `@` for the zone apex. */
  host: string;
  zone: string;
  targetIp: string;
}

/** A provider failed in a way the user should see: its message, and whether it is our input or their service. */
export class DnsProviderError extends Error {
  constructor(
    message: string,
    /** `not_found`: no zone of the account holds the hostname; `unauthorized`: bad token; `upstream`: 429, 5xx, timeout. */
    readonly kind: 'not_found' | 'unauthorized' | 'upstream',
    readonly status?: number,
  ) {
    super(message);
  }
}

export interface DnsProvider {
  readonly id: 'cloudflare' | 'digitalocean' | 'hetzner';
  readonly name: string;
  /** Creates the A record, updates it when it points elsewhere, or leaves it when it is right. */
  upsertARecord(request: ARecordRequest): Promise<ARecordResult>;
}
