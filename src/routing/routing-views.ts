import { z } from 'zod';
import { DOMAIN_STATUSES, type DomainRecord } from '../domain/types.js';
import { iso, timestamp } from '../platform/view-fields.js';

/** Routing on the wire: domains, the proxy's answer to a change, DNS records made at a provider. */

export const proxyResultView = z
  .object({ ok: z.boolean(), detail: z.string() })
  .meta({ id: 'ProxyResult', description: 'Outcome of reloading the reverse proxy' });
export type ProxyResultView = z.infer<typeof proxyResultView>;

export const domainView = z
  .object({
    id: z.string(),
    serviceId: z.string(),
    hostname: z.string(),
    status: z.enum(DOMAIN_STATUSES),
    createdAt: timestamp,
    updatedAt: timestamp,
  })
  .meta({ id: 'Domain' });
export type DomainView = z.infer<typeof domainView>;

export const dnsRecordResultView = z
  .object({
    provider: z.string(),
    providerName: z.string(),
    action: z.enum(['created', 'updated', 'unchanged']),
    hostname: z.string(),
    recordType: z.literal('A'),
    host: z.string(),
    zone: z.string(),
    targetIp: z.string(),
  })
  .meta({ id: 'DnsRecordResult' });
export type DnsRecordResultView = z.infer<typeof dnsRecordResultView>;

export function presentDomain(domain: DomainRecord): DomainView {
  return {
    id: domain.id,
    serviceId: domain.serviceId,
    hostname: domain.hostname,
    status: domain.status,
    createdAt: iso(domain.createdAt),
    updatedAt: iso(domain.updatedAt),
  };
}
