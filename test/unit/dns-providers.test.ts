import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DnsProviderError, type ARecordResult, type DnsProvider } from '../../src/routing/dns-provider.port.js';
import { CloudflareDnsProvider } from '../../adapters/dns/cloudflare.dns-provider.js';
import { DigitalOceanDnsProvider } from '../../adapters/dns/digitalocean.dns-provider.js';
import { HetznerDnsProvider } from '../../adapters/dns/hetzner.dns-provider.js';
import { pickZone } from '../../adapters/dns/dns-http.js';
import { CloudflareStandin, DigitalOceanStandin, HetznerStandin } from '../helpers/dns-standins.js';

const IP = '203.0.113.10';
const OTHER_IP = '198.51.100.7';

function label(zone: string, fqdn: string): string {
  return fqdn === zone ? '@' : fqdn.slice(0, -(zone.length + 1));
}

/** What the shared scenarios need to know about one vendor. */
interface Case {
  name: string;
  standin: CloudflareStandin | DigitalOceanStandin | HetznerStandin;
  make(options?: { timeoutMs?: number }): DnsProvider;
  addZone(name: string): void;
  addRecord(zone: string, fqdn: string, ip: string): void;
  /** IPs of the A records the stand-in holds for a fully qualified name. */
  ips(fqdn: string): string[];
  /** Zones per page the adapter asks for. */
  perPage: number;
}

const cf = new CloudflareStandin();
const dio = new DigitalOceanStandin();
const hz = new HetznerStandin();

function resetZones(): void {
  cf.zones.length = 0;
  cf.records.length = 0;
  dio.domains.length = 0;
  dio.records.clear();
  hz.zones.length = 0;
  hz.records.length = 0;
}

const cases: Case[] = [
  {
    name: 'cloudflare',
    standin: cf,
    make: (o) => new CloudflareDnsProvider({ baseUrl: cf.baseUrl, ...o }),
    addZone: (n) => void cf.addZone(n),
    addRecord: (zone, fqdn, ip) => void cf.addRecord(zone, fqdn, ip),
    ips: (fqdn) => cf.records.filter((r) => r.type === 'A' && r.name === fqdn).map((r) => r.content),
    perPage: 50,
  },
  {
    name: 'digitalocean',
    standin: dio,
    make: (o) => new DigitalOceanDnsProvider({ baseUrl: dio.baseUrl, ...o }),
    addZone: (n) => dio.addZone(n),
    addRecord: (zone, fqdn, ip) => void dio.addRecord(zone, label(zone, fqdn), ip),
    ips: (fqdn) =>
      [...dio.records.entries()].flatMap(([zone, list]) =>
        list.filter((r) => r.type === 'A' && (r.name === '@' ? zone : `${r.name}.${zone}`) === fqdn).map((r) => r.data),
      ),
    perPage: 200,
  },
  {
    name: 'hetzner',
    standin: hz,
    make: (o) => new HetznerDnsProvider({ baseUrl: hz.baseUrl, ...o }),
    addZone: (n) => void hz.addZone(n),
    addRecord: (zone, fqdn, ip) => void hz.addRecord(zone, label(zone, fqdn), ip),
    ips: (fqdn) =>
      hz.records
        .filter((r) => {
          const zone = hz.zones.find((z) => z.id === r.zone_id)!.name;
          return r.type === 'A' && (r.name === '@' ? zone : `${r.name}.${zone}`) === fqdn;
        })
        .map((r) => r.value),
    perPage: 100,
  },
];

beforeAll(async () => {
  await Promise.all([cf.start(), dio.start(), hz.start()]);
});

afterAll(async () => {
  await Promise.all([cf.close(), dio.close(), hz.close()]);
});

afterEach(() => {
  resetZones();
  for (const c of cases) c.standin.reset();
});

function upsert(provider: DnsProvider, hostname: string, token: string, targetIp = IP): Promise<ARecordResult> {
  return provider.upsertARecord({ hostname, targetIp, apiToken: token, signal: new AbortController().signal });
}

async function failure(promise: Promise<unknown>): Promise<DnsProviderError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(DnsProviderError);
  return error as DnsProviderError;
}

describe('pickZone', () => {
  it('picks the longest suffix on a label boundary, @ for the apex', () => {
    const zones = ['example.com', 'dev.example.com', 'ample.com'];
    expect(pickZone('a.dev.example.com', zones, (z) => z)).toMatchObject({ zoneName: 'dev.example.com', host: 'a' });
    expect(pickZone('dev.example.com', zones, (z) => z)).toMatchObject({ zoneName: 'dev.example.com', host: '@' });
    expect(pickZone('x.y.example.com', zones, (z) => z)).toMatchObject({ zoneName: 'example.com', host: 'x.y' });
    expect(pickZone('myexample.com', ['example.com'], (z) => z)).toBeUndefined();
    expect(pickZone('App.Example.COM.', ['example.com'], (z) => z)).toMatchObject({ host: 'app' });
  });
});

describe.each(cases)('$name', (c) => {
  const token = () => c.standin.token;

  it('creates a record for a subdomain', async () => {
    c.addZone('example.com');
    const result = await upsert(c.make(), 'app.example.com', token());
    expect(result).toEqual({
      action: 'created',
      hostname: 'app.example.com',
      recordType: 'A',
      host: 'app',
      zone: 'example.com',
      targetIp: IP,
    });
    expect(c.ips('app.example.com')).toEqual([IP]);
    expect(c.standin.writes).toHaveLength(1);
  });

  it('creates a record at the apex with host @', async () => {
    c.addZone('example.com');
    const result = await upsert(c.make(), 'example.com', token());
    expect(result).toEqual({ action: 'created', hostname: 'example.com', recordType: 'A', host: '@', zone: 'example.com', targetIp: IP });
    expect(c.ips('example.com')).toEqual([IP]);
  });

  it('picks the longest-suffix zone', async () => {
    c.addZone('example.com');
    c.addZone('dev.example.com');
    const result = await upsert(c.make(), 'api.dev.example.com', token());
    expect(result).toMatchObject({ action: 'created', host: 'api', zone: 'dev.example.com' });
    expect(c.ips('api.dev.example.com')).toEqual([IP]);
    // A deeper name in the parent zone keeps its multi-label host.
    const parent = await upsert(c.make(), 'a.b.example.com', token());
    expect(parent).toMatchObject({ action: 'created', host: 'a.b', zone: 'example.com' });
  });

  it('leaves an identical record alone without writing', async () => {
    c.addZone('example.com');
    c.addRecord('example.com', 'app.example.com', IP);
    const result = await upsert(c.make(), 'app.example.com', token());
    expect(result).toMatchObject({ action: 'unchanged', host: 'app', zone: 'example.com', targetIp: IP });
    expect(c.standin.writes).toEqual([]);
    expect(c.ips('app.example.com')).toEqual([IP]);
  });

  it('updates a record that points elsewhere', async () => {
    c.addZone('example.com');
    c.addRecord('example.com', 'app.example.com', OTHER_IP);
    const result = await upsert(c.make(), 'app.example.com', token());
    expect(result).toMatchObject({ action: 'updated', host: 'app', zone: 'example.com', targetIp: IP });
    expect(c.ips('app.example.com')).toEqual([IP]);
    expect(c.standin.writes).toHaveLength(1);
  });

  it('reads every page of zones', async () => {
    const count = c.perPage * 2 + 3;
    for (let i = 0; i < count; i++) c.addZone(`zone${String(i).padStart(3, '0')}.test`);
    c.addZone('example.com'); // on the last page
    const result = await upsert(c.make(), 'app.example.com', token());
    expect(result).toMatchObject({ action: 'created', zone: 'example.com' });
    const pages = c.standin.requests.filter((r) => r.method === 'GET' && /\/(zones|domains)$/.test(r.path)).map((r) => r.query.page);
    expect(pages).toEqual(['1', '2', '3']);
  });

  it('is not_found for a hostname in no zone of the account', async () => {
    c.addZone('example.com');
    const error = await failure(upsert(c.make(), 'app.other.org', token()));
    expect(error.kind).toBe('not_found');
    expect(error.message).toContain('app.other.org');
    expect(c.standin.writes).toEqual([]);
  });

  it('is unauthorized for a bad token, with the provider message and without the token', async () => {
    c.addZone('example.com');
    const bad = 'super-secret-wrong-token-42';
    const error = await failure(upsert(c.make(), 'app.example.com', bad));
    expect(error.kind).toBe('unauthorized');
    expect(error.status).toBe(401);
    const expected = {
      cloudflare: 'Authentication error',
      digitalocean: 'Unable to authenticate you',
      hetzner: 'Invalid authentication credentials',
    }[c.name]!;
    expect(error.message).toContain(expected);
    expect(error.message).not.toContain(bad);
    expect(error.message).not.toContain(token());
  });

  it.each([
    [429, { cloudflare: 'throttling', digitalocean: 'Rate limit', hetzner: 'rate limit' }],
    [500, { cloudflare: 'Internal Server Error', digitalocean: 'unable to give you a response', hetzner: 'internal server error' }],
  ])('is upstream for HTTP %i with the provider message', async (status, messages) => {
    c.addZone('example.com');
    c.standin.failNext(status);
    const error = await failure(upsert(c.make(), 'app.example.com', token()));
    expect(error.kind).toBe('upstream');
    expect(error.status).toBe(status);
    expect(error.message).toContain(messages[c.name as keyof typeof messages]);
    expect(error.message).toContain(String(status));
    expect(error.message).not.toContain(token());
  });

  it('is upstream on a timeout', async () => {
    c.addZone('example.com');
    c.standin.hangNext();
    const started = Date.now();
    const error = await failure(upsert(c.make({ timeoutMs: 150 }), 'app.example.com', token()));
    expect(error.kind).toBe('upstream');
    expect(error.message).toMatch(/150 ms/);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('passes a caller abort through instead of reporting the provider', async () => {
    c.addZone('example.com');
    c.standin.hangNext();
    const controller = new AbortController();
    const pending = c.make().upsertARecord({ hostname: 'app.example.com', targetIp: IP, apiToken: token(), signal: controller.signal });
    setTimeout(() => controller.abort(new Error('cancelled by caller')), 50);
    await expect(pending).rejects.toThrow('cancelled by caller');
  });

  it('is upstream when the API cannot be reached', async () => {
    const provider =
      c.name === 'cloudflare'
        ? new CloudflareDnsProvider({ baseUrl: 'http://127.0.0.1:1' })
        : c.name === 'digitalocean'
          ? new DigitalOceanDnsProvider({ baseUrl: 'http://127.0.0.1:1' })
          : new HetznerDnsProvider({ baseUrl: 'http://127.0.0.1:1' });
    const error = await failure(upsert(provider, 'app.example.com', token()));
    expect(error.kind).toBe('upstream');
    expect(error.message).not.toContain(token());
  });
});

describe('request shapes', () => {
  it('cloudflare: bearer token, /zones pages of 50, dns_records lookup by type and fqdn, POST and PATCH bodies', async () => {
    const zoneId = cf.addZone('example.com');
    await upsert(new CloudflareDnsProvider({ baseUrl: cf.baseUrl }), 'app.example.com', cf.token);
    cf.records[0]!.content = OTHER_IP;
    await upsert(new CloudflareDnsProvider({ baseUrl: cf.baseUrl }), 'app.example.com', cf.token);
    const recordId = cf.records[0]!.id;
    expect(cf.requests.map((r) => [r.method, r.path, r.query, r.body])).toEqual([
      ['GET', '/client/v4/zones', { per_page: '50', page: '1' }, undefined],
      ['GET', `/client/v4/zones/${zoneId}/dns_records`, { type: 'A', name: 'app.example.com' }, undefined],
      ['POST', `/client/v4/zones/${zoneId}/dns_records`, {}, { type: 'A', name: 'app.example.com', content: IP, ttl: 1, proxied: false }],
      ['GET', '/client/v4/zones', { per_page: '50', page: '1' }, undefined],
      ['GET', `/client/v4/zones/${zoneId}/dns_records`, { type: 'A', name: 'app.example.com' }, undefined],
      ['PATCH', `/client/v4/zones/${zoneId}/dns_records/${recordId}`, {}, { content: IP }],
    ]);
    for (const r of cf.requests) expect(r.headers.authorization).toBe(`Bearer ${cf.token}`);
    for (const r of cf.writes) expect(r.headers['content-type']).toBe('application/json');
  });

  it('cloudflare: default base URL is the public API', () => {
    expect(new CloudflareDnsProvider()).toMatchObject({
      id: 'cloudflare',
      baseUrl: 'https://api.cloudflare.com/client/v4',
      timeoutMs: 10_000,
    });
  });

  it('digitalocean: bearer token, /domains pages of 200, records by type and fqdn, POST label and PUT data', async () => {
    dio.addZone('example.com');
    await upsert(new DigitalOceanDnsProvider({ baseUrl: dio.baseUrl }), 'example.com', dio.token);
    const record = dio.records.get('example.com')![0]!;
    expect(record).toMatchObject({ name: '@', type: 'A', data: IP, ttl: 1800 });
    record.data = OTHER_IP;
    await upsert(new DigitalOceanDnsProvider({ baseUrl: dio.baseUrl }), 'example.com', dio.token);
    expect(dio.requests.map((r) => [r.method, r.path, r.query, r.body])).toEqual([
      ['GET', '/v2/domains', { per_page: '200', page: '1' }, undefined],
      ['GET', '/v2/domains/example.com/records', { type: 'A', name: 'example.com' }, undefined],
      ['POST', '/v2/domains/example.com/records', {}, { type: 'A', name: '@', data: IP, ttl: 1800 }],
      ['GET', '/v2/domains', { per_page: '200', page: '1' }, undefined],
      ['GET', '/v2/domains/example.com/records', { type: 'A', name: 'example.com' }, undefined],
      ['PUT', `/v2/domains/example.com/records/${record.id}`, {}, { type: 'A', data: IP }],
    ]);
    for (const r of dio.requests) expect(r.headers.authorization).toBe(`Bearer ${dio.token}`);
  });

  it('digitalocean: default base URL is the public API', () => {
    expect(new DigitalOceanDnsProvider()).toMatchObject({
      id: 'digitalocean',
      baseUrl: 'https://api.digitalocean.com/v2',
      timeoutMs: 10_000,
    });
  });

  it('hetzner: Auth-API-Token header, /zones pages of 100, /records by zone_id, POST and full PUT bodies', async () => {
    const zoneId = hz.addZone('example.com');
    await upsert(new HetznerDnsProvider({ baseUrl: hz.baseUrl }), 'www.example.com', hz.token);
    const record = hz.records[0]!;
    expect(record).toMatchObject({ name: 'www', type: 'A', value: IP, ttl: 3600, zone_id: zoneId });
    record.value = OTHER_IP;
    await upsert(new HetznerDnsProvider({ baseUrl: hz.baseUrl }), 'www.example.com', hz.token);
    const list = ['GET', '/api/v1/records', { zone_id: zoneId, per_page: '100', page: '1' }, undefined];
    expect(hz.requests.map((r) => [r.method, r.path, r.query, r.body])).toEqual([
      ['GET', '/api/v1/zones', { per_page: '100', page: '1' }, undefined],
      list,
      ['POST', '/api/v1/records', {}, { zone_id: zoneId, type: 'A', name: 'www', value: IP, ttl: 3600 }],
      ['GET', '/api/v1/zones', { per_page: '100', page: '1' }, undefined],
      list,
      ['PUT', `/api/v1/records/${record.id}`, {}, { zone_id: zoneId, type: 'A', name: 'www', value: IP, ttl: 3600 }],
    ]);
    for (const r of hz.requests) {
      expect(r.headers['auth-api-token']).toBe(hz.token);
      expect(r.headers.authorization).toBeUndefined();
    }
  });

  it('hetzner: ignores records of other types and names, and errors in the {error:{message}} shape', async () => {
    hz.addZone('example.com');
    hz.addRecord('example.com', 'app', 'app.example.net.', 'CNAME');
    hz.addRecord('example.com', 'www', OTHER_IP);
    const result = await upsert(new HetznerDnsProvider({ baseUrl: hz.baseUrl }), 'app.example.com', hz.token);
    expect(result.action).toBe('created');
    expect(hz.records.find((r) => r.name === 'www')!.value).toBe(OTHER_IP);
  });

  it('hetzner: default base URL is the public API', () => {
    expect(new HetznerDnsProvider()).toMatchObject({ id: 'hetzner', baseUrl: 'https://dns.hetzner.com/api/v1', timeoutMs: 10_000 });
  });
});
