import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { TRPCError } from '@trpc/server';
import { DnsProviderError, type ARecordRequest, type DnsProvider } from '../../src/routing/dns-provider.port.js';
import { createHarness, type Harness } from '../helpers/harness.js';

/** Settings and DNS records through the routers, with a recording stand-in for the provider port. */
class RecordingProvider implements DnsProvider {
  readonly id = 'cloudflare' as const;
  readonly name = 'Cloudflare';
  readonly requests: ARecordRequest[] = [];
  failWith: DnsProviderError | null = null;

  async upsertARecord(request: ARecordRequest) {
    this.requests.push(request);
    if (this.failWith) throw this.failWith;
    const [host, ...rest] = request.hostname.split('.');
    return {
      action: 'created' as const,
      hostname: request.hostname,
      recordType: 'A' as const,
      host: host!,
      zone: rest.join('.'),
      targetIp: request.targetIp,
    };
  }
}

let h: Harness;
let provider: RecordingProvider;
beforeEach(async () => {
  provider = new RecordingProvider();
  h = await createHarness({ dnsProviders: [provider], config: { publicIp: '203.0.113.7' } });
});
afterEach(async () => {
  await h.close();
});

async function failure(promise: Promise<unknown>): Promise<{ code: string; data: Record<string, unknown> }> {
  try {
    await promise;
  } catch (error) {
    const e = error as TRPCError & { cause?: { code?: string; details?: Record<string, unknown> } };
    return { code: e.code, data: { error: e.cause?.code, ...(e.cause?.details ?? {}) } };
  }
  throw new Error('expected a rejection');
}

describe('settings', () => {
  it('reads defaults, stores overrides and never returns a token', async () => {
    const api = h.caller();
    expect((await api.settings.get()).settings).toEqual({
      license: { valid: false, licensee: null, plan: null, expiresAt: null },
      publicIp: '203.0.113.7',
      rootDomain: null,
      registrationOpen: false,
      smtpConfigured: false,
      mailFrom: null,
      dnsProviders: [],
      aiProviders: [],
      objectStore: null,
    });
    const { settings } = await api.settings.update({
      publicIp: '198.51.100.2',
      rootDomain: 'Apps.Example.com',
      dnsProviders: [{ providerId: 'cloudflare', apiToken: 'cf-secret-token' }],
    });
    expect(settings).toMatchObject({
      publicIp: '198.51.100.2',
      rootDomain: 'apps.example.com',
      dnsProviders: [{ providerId: 'cloudflare', providerName: 'Cloudflare', hasApiToken: true }],
    });
    expect(JSON.stringify(await api.settings.get())).not.toContain('cf-secret-token');
    // Omitting the token keeps it; a new provider without one is refused.
    await api.settings.update({ dnsProviders: [{ providerId: 'cloudflare' }] });
    expect((await failure(api.settings.update({ dnsProviders: [{ providerId: 'hetzner' }] }))).data.field).toBe('dnsProviders.0.apiToken');
    expect((await failure(api.settings.update({ publicIp: 'not-an-ip' }))).data.field).toBe('publicIp');
    // The root domain names the generated hostname of web services.
    const { project } = await api.projects.create({ name: 'shop' });
    const { service } = await api.services.create({ projectId: project.id, name: 'web', repoFullName: 'a/b' });
    expect((await api.services.overview({ serviceId: service.id })).service.primaryUrl).toBe('https://web-shop.apps.example.com');
  });

  it('needs an all-project write key', async () => {
    expect((await failure(h.caller(await h.mintKey('read')).settings.get())).code).toBe('FORBIDDEN');
    const { project } = await h.caller().projects.create({ name: 'x' });
    expect((await failure(h.caller(await h.mintKey('write', [project.id])).settings.update({}))).code).toBe('FORBIDDEN');
  });
});

describe('DNS records', () => {
  async function domain() {
    const api = h.caller();
    const { project } = await api.projects.create({ name: 'dns' });
    const { service } = await api.services.create({ projectId: project.id, name: 'web', repoFullName: 'a/b' });
    const { domain } = await api.domains.create({ serviceId: service.id, hostname: 'app.example.com' });
    return { serviceId: service.id, domainId: domain.id };
  }

  it('creates an A record at the connected provider for the public IP', async () => {
    const api = h.caller();
    const target = await domain();
    expect((await failure(api.domains.dnsRecords({ ...target, providerId: 'route53' }))).data.field).toBe('providerId');
    expect((await failure(api.domains.dnsRecords({ ...target, providerId: 'cloudflare' }))).data.field).toBe('providerId');
    await api.settings.update({ dnsProviders: [{ providerId: 'cloudflare', apiToken: 'cf-token' }] });
    const answer = await api.domains.dnsRecords({ ...target, providerId: 'cloudflare' });
    expect(answer).toEqual({
      ok: true,
      result: {
        provider: 'cloudflare',
        providerName: 'Cloudflare',
        action: 'created',
        hostname: 'app.example.com',
        recordType: 'A',
        host: 'app',
        zone: 'example.com',
        targetIp: '203.0.113.7',
      },
      domain: expect.objectContaining({ id: target.domainId, hostname: 'app.example.com' }),
    });
    expect(provider.requests[0]).toMatchObject({ hostname: 'app.example.com', targetIp: '203.0.113.7', apiToken: 'cf-token' });
  });

  it('maps provider failures to 404 and 502 with the provider message', async () => {
    const api = h.caller();
    const target = await domain();
    await api.settings.update({ dnsProviders: [{ providerId: 'cloudflare', apiToken: 'cf-token' }] });
    provider.failWith = new DnsProviderError('no zone of this account holds app.example.com', 'not_found');
    expect((await failure(api.domains.dnsRecords({ ...target, providerId: 'cloudflare' }))).code).toBe('NOT_FOUND');
    provider.failWith = new DnsProviderError('Invalid API Token', 'unauthorized', 401);
    const refused = await failure(api.domains.dnsRecords({ ...target, providerId: 'cloudflare' }));
    expect(refused.code).toBe('BAD_GATEWAY');
    expect(refused.data).toMatchObject({ error: 'upstream_error', provider: 'cloudflare', status: 401 });
    provider.failWith = new DnsProviderError('rate limited', 'upstream', 429);
    expect((await failure(api.domains.dnsRecords({ ...target, providerId: 'cloudflare' }))).code).toBe('BAD_GATEWAY');
  });
});
