import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, startServerProcess, type ServerProcess } from '../helpers/server-process.js';
import { CloudflareStandin, DigitalOceanStandin, HetznerStandin } from '../helpers/dns-standins.js';

/** POST .../dns-records over real HTTP, against local servers that speak each vendor's API. */
const cloudflare = new CloudflareStandin('cf-token-123456');
const digitalocean = new DigitalOceanStandin('dop_v1_standin-token');
const hetzner = new HetznerStandin('hetzner-standin-token');
let server: ServerProcess;
let call: ReturnType<typeof api>;

beforeAll(async () => {
  await Promise.all([cloudflare.start(), digitalocean.start(), hetzner.start()]);
  cloudflare.addZone('example.com');
  digitalocean.addZone('example.org');
  hetzner.addZone('example.net');
  server = await startServerProcess({
    PUBLIC_IP: '203.0.113.9',
    CLOUDFLARE_API_URL: cloudflare.baseUrl,
    DIGITALOCEAN_API_URL: digitalocean.baseUrl,
    HETZNER_DNS_API_URL: hetzner.baseUrl,
  });
  call = api(server.url, server.token);
});

afterAll(async () => {
  await server?.dispose();
  await Promise.all([cloudflare.close(), digitalocean.close(), hetzner.close()]);
});

async function domainOn(hostname: string): Promise<{ serviceId: string; domainId: string }> {
  const project = (await call('POST', '/api/projects', { name: `dns-${hostname}` })).json.project;
  const service = (await call('POST', `/api/projects/${project.id}/services`, { name: 'web', repoFullName: 'a/b' })).json.service;
  const created = await call('POST', `/api/services/${service.id}/domains`, { hostname });
  return { serviceId: service.id, domainId: created.json.domain.id };
}

describe('DNS records at three providers', () => {
  it('connects providers with write-only tokens and creates, then leaves, A records', async () => {
    const put = await call('PUT', '/api/settings', {
      dnsProviders: [
        { providerId: 'cloudflare', apiToken: 'cf-token-123456' },
        { providerId: 'digitalocean', apiToken: 'dop_v1_standin-token' },
        { providerId: 'hetzner', apiToken: 'hetzner-standin-token' },
      ],
    });
    expect(put.status).toBe(200);
    expect(put.text).not.toContain('cf-token-123456');
    expect(put.json.settings.dnsProviders.map((p: { providerId: string; hasApiToken: boolean }) => [p.providerId, p.hasApiToken])).toEqual([
      ['cloudflare', true],
      ['digitalocean', true],
      ['hetzner', true],
    ]);

    for (const [providerId, hostname, zone] of [
      ['cloudflare', 'app.example.com', 'example.com'],
      ['digitalocean', 'app.example.org', 'example.org'],
      ['hetzner', 'app.example.net', 'example.net'],
    ] as const) {
      const target = await domainOn(hostname);
      const path = `/api/services/${target.serviceId}/domains/${target.domainId}/dns-records`;
      const first = await call('POST', path, { providerId });
      expect(first.status, first.text).toBe(200);
      expect(first.json).toMatchObject({
        ok: true,
        result: { provider: providerId, action: 'created', hostname, recordType: 'A', host: 'app', zone, targetIp: '203.0.113.9' },
        domain: { id: target.domainId, hostname },
      });
      const again = await call('POST', path, { providerId });
      expect(again.json.result.action).toBe('unchanged');
    }
    expect(cloudflare.writes).toHaveLength(1);
    expect(digitalocean.writes).toHaveLength(1);
    expect(hetzner.writes).toHaveLength(1);
  });

  it('answers 404 for a hostname in no zone and 502 with the provider message when it fails', async () => {
    const outside = await domainOn('app.nowhere.test');
    const missing = await call('POST', `/api/services/${outside.serviceId}/domains/${outside.domainId}/dns-records`, {
      providerId: 'cloudflare',
    });
    expect(missing.status).toBe(404);
    const inside = await domainOn('api.example.com');
    cloudflare.failNext(429);
    const limited = await call('POST', `/api/services/${inside.serviceId}/domains/${inside.domainId}/dns-records`, {
      providerId: 'cloudflare',
    });
    expect(limited.status).toBe(502);
    expect(limited.json).toMatchObject({ error: 'upstream_error' });
    expect(limited.json.message).toMatch(/Cloudflare/);
    expect(limited.text).not.toContain('cf-token-123456');
  });
});
