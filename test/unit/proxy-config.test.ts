import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../adapters/composition/config.js';
import { DEFAULT_PLATFORM_CONFIG } from '../../src/index.js';

/** loadConfig: the proxy's environment variables, parsed and checked at start. */
const load = (env: Record<string, string> = {}) => loadConfig({ DATA_DIR: ':memory:', SECRET_KEY: KEY, ...env });
const KEY = 'k'.repeat(64);
/** Without a data directory, each install's routes directory is a temporary one of its own. */
const MEMORY_ROUTES = path.join(
  tmpdir(),
  `slipway-caddy-routes-${createHash('sha256').update(`instance:${KEY}`).digest('hex').slice(0, 12)}`,
);
const MEMORY_LOGS = MEMORY_ROUTES.replace('slipway-caddy-routes-', 'slipway-caddy-logs-');

function configError(env: Record<string, string>): string {
  try {
    load(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error(`no ConfigError for ${JSON.stringify(env)}`);
}

describe('proxy defaults', () => {
  it('runs its own Caddy container: caddy:2, admin on 2019, ports 80 and 443, automatic HTTPS, no ACME email', () => {
    const config = load();
    expect(config.proxy).toEqual({
      kind: 'container',
      image: 'caddy:2',
      adminPort: 2019,
      httpPort: 80,
      httpsPort: 443,
      autoHttps: true,
      acmeEmail: null,
      gatePort: 2080,
      healthIntervalMs: 500,
      slotSubnet: 'auto',
      routesDir: MEMORY_ROUTES,
      accessLogDir: MEMORY_LOGS,
    });
    expect(config.platform.publicScheme).toBe('https');
    expect(config.platform.routing).toEqual(DEFAULT_PLATFORM_CONFIG.routing);
  });

  it('empty values mean the defaults', () => {
    const config = load({
      PROXY: '',
      PROXY_IMAGE: '',
      PROXY_ADMIN_PORT: '',
      PROXY_HTTP_PORT: '',
      PROXY_HTTPS_PORT: '',
      PROXY_AUTO_HTTPS: '',
      ACME_EMAIL: '  ',
      CADDY_ADMIN_URL: '',
      PROXY_RECONCILE_MS: '',
      DRAIN_TIMEOUT_MS: '',
    });
    expect(config.proxy).toEqual(load().proxy);
    expect(config.platform.routing).toEqual(DEFAULT_PLATFORM_CONFIG.routing);
  });
});

describe('proxy modes', () => {
  it('PROXY=caddy with settings: the container mode takes image, ports, HTTPS and email', () => {
    const config = load({
      PROXY: 'caddy',
      PROXY_IMAGE: 'registry.example.com/caddy:2.8',
      PROXY_ADMIN_PORT: '2999',
      PROXY_HTTP_PORT: '8080',
      PROXY_HTTPS_PORT: '8443',
      PROXY_AUTO_HTTPS: 'true',
      ACME_EMAIL: ' ops@example.com ',
    });
    expect(config.proxy).toEqual({
      kind: 'container',
      image: 'registry.example.com/caddy:2.8',
      adminPort: 2999,
      httpPort: 8080,
      httpsPort: 8443,
      autoHttps: true,
      acmeEmail: 'ops@example.com',
      gatePort: 2080,
      healthIntervalMs: 500,
      slotSubnet: 'auto',
      routesDir: MEMORY_ROUTES,
      accessLogDir: MEMORY_LOGS,
    });
  });

  it('CADDY_ADMIN_URL: an external Caddy, with the serving settings and no image or admin port', () => {
    const config = load({
      CADDY_ADMIN_URL: 'http://127.0.0.1:2019/',
      PROXY_HTTP_PORT: '8081',
      PROXY_AUTO_HTTPS: 'false',
      PROXY_IMAGE: 'ignored:1',
      PROXY_ADMIN_PORT: '3000',
    });
    expect(config.proxy).toEqual({
      kind: 'external',
      adminUrl: 'http://127.0.0.1:2019',
      httpPort: 8081,
      httpsPort: 443,
      autoHttps: false,
      acmeEmail: null,
      gatePort: 2080,
      healthIntervalMs: 500,
      slotSubnet: 'auto',
      routesDir: MEMORY_ROUTES,
      accessLogDir: MEMORY_LOGS,
    });
    expect(config.platform.publicScheme).toBe('http');
  });

  it('CADDY_ADMIN_URL keeps a path prefix, without trailing slashes', () => {
    expect(load({ CADDY_ADMIN_URL: 'https://caddy.internal:2019/admin//' }).proxy).toMatchObject({
      kind: 'external',
      adminUrl: 'https://caddy.internal:2019/admin',
    });
  });

  it('PROXY=none (any case): no proxy at all', () => {
    expect(load({ PROXY: 'none' }).proxy).toEqual({ kind: 'none' });
    expect(load({ PROXY: 'NONE', CADDY_ADMIN_URL: 'http://127.0.0.1:2019' }).proxy).toEqual({ kind: 'none' });
    expect(load({ PROXY: 'Caddy' }).proxy.kind).toBe('container');
  });

  it('PROXY=none still lets PROXY_AUTO_HTTPS=false set the public scheme (another TLS terminator)', () => {
    expect(load({ PROXY: 'none', PROXY_AUTO_HTTPS: 'false' }).platform.publicScheme).toBe('http');
    expect(load({ PROXY: 'none' }).platform.publicScheme).toBe('https');
  });

  it('PROXY_AUTO_HTTPS accepts true/false/1/0 in any case', () => {
    for (const [raw, value] of [
      ['true', true],
      ['TRUE', true],
      ['1', true],
      ['false', false],
      ['False', false],
      ['0', false],
      [' false ', false],
    ] as const) {
      expect(load({ PROXY_AUTO_HTTPS: raw }).proxy, raw).toMatchObject({ autoHttps: value });
    }
  });

  it('routing timings: PROXY_RECONCILE_MS and DRAIN_TIMEOUT_MS', () => {
    const config = load({ PROXY_RECONCILE_MS: '500', DRAIN_TIMEOUT_MS: '0' });
    expect(config.platform.routing).toEqual({ ...DEFAULT_PLATFORM_CONFIG.routing, reconcileMs: 500, drainTimeoutMs: 0 });
    expect(load({ PROXY_RECONCILE_MS: '60000', DRAIN_TIMEOUT_MS: '600000' }).platform.routing).toMatchObject({
      reconcileMs: 60_000,
      drainTimeoutMs: 600_000,
    });
  });
});

describe('routes directory', () => {
  it('is <DATA_DIR>/caddy-routes, absolute; PROXY_ROUTES_DIR overrides it', () => {
    const dataDir = path.join(tmpdir(), `slipway-config-test-${process.pid}`);
    expect(load({ DATA_DIR: dataDir }).proxy).toMatchObject({
      routesDir: path.join(dataDir, 'caddy-routes'),
      accessLogDir: path.join(dataDir, 'caddy-logs'),
    });
    expect(load({ PROXY_ACCESS_LOG_DIR: '/var/log/slipway-caddy' }).proxy).toMatchObject({ accessLogDir: '/var/log/slipway-caddy' });
    expect(load({ DATA_DIR: dataDir, CADDY_ADMIN_URL: 'http://127.0.0.1:2019' }).proxy).toMatchObject({
      routesDir: path.join(dataDir, 'caddy-routes'),
    });
    expect(load({ PROXY_ROUTES_DIR: '/var/lib/slipway/caddy-routes' }).proxy).toMatchObject({ routesDir: '/var/lib/slipway/caddy-routes' });
    expect(load({ PROXY_ROUTES_DIR: 'relative/routes' }).proxy).toMatchObject({ routesDir: path.resolve('relative/routes') });
    // Installs without a data directory get one each, by their key.
    expect(load({ SECRET_KEY: 'x'.repeat(64) }).proxy).not.toMatchObject({ routesDir: MEMORY_ROUTES });
  });
});

describe('traffic slots', () => {
  it('PROXY_GATE_PORT, PROXY_HEALTH_INTERVAL_MS and SLOT_SUBNET reach the proxy and the routing settings', () => {
    const config = load({ PROXY_GATE_PORT: '12080', PROXY_HEALTH_INTERVAL_MS: '250', SLOT_SUBNET: '172.16.8.0/22' });
    expect(config.proxy).toMatchObject({ gatePort: 12080, healthIntervalMs: 250, slotSubnet: '172.16.8.0/22' });
    expect(config.platform.routing).toMatchObject({ healthIntervalMs: 250, slotSubnet: '172.16.8.0/22' });
  });

  it('refuses a subnet that is not a CIDR from /16 to /28', () => {
    expect(configError({ SLOT_SUBNET: '172.16.0.0' })).toMatch(/^SLOT_SUBNET must be an IPv4 CIDR/);
    expect(configError({ SLOT_SUBNET: '172.16.0.0/30' })).toMatch(/^SLOT_SUBNET must be an IPv4 CIDR/);
    expect(configError({ SLOT_SUBNET: '300.16.0.0/22' })).toMatch(/^SLOT_SUBNET must be an IPv4 CIDR/);
  });
});

describe('bad values are refused with a clear message', () => {
  it('SERVICE_MAX_REPLICAS above 32: the proxy balances one hostname over 32 upstreams at most', () => {
    expect(load({ SERVICE_MAX_REPLICAS: '32' }).platform.cluster.maxReplicas).toBe(32);
    expect(configError({ SERVICE_MAX_REPLICAS: '33' })).toBe('SERVICE_MAX_REPLICAS must be an integer from 1 to 32, got "33"');
  });

  it('PROXY other than caddy or none', () => {
    expect(configError({ PROXY: 'nginx' })).toBe('PROXY must be caddy or none, got "nginx"');
  });

  it('PROXY_AUTO_HTTPS not a boolean', () => {
    expect(configError({ PROXY_AUTO_HTTPS: 'yes' })).toBe('PROXY_AUTO_HTTPS must be true or false, got "yes"');
    // Read for the public scheme too, so it is refused with PROXY=none as well.
    expect(configError({ PROXY: 'none', PROXY_AUTO_HTTPS: 'maybe' })).toBe('PROXY_AUTO_HTTPS must be true or false, got "maybe"');
  });

  it('ACME_EMAIL not an email address', () => {
    expect(configError({ ACME_EMAIL: 'ops-at-example.com' })).toBe('ACME_EMAIL is not an email address: "ops-at-example.com"');
    expect(configError({ ACME_EMAIL: 'ops@localhost' })).toMatch(/^ACME_EMAIL is not an email address/);
  });

  it.each([
    ['PROXY_HTTP_PORT', '0'],
    ['PROXY_HTTP_PORT', '65536'],
    ['PROXY_HTTP_PORT', 'eighty'],
    ['PROXY_HTTP_PORT', '80.5'],
    ['PROXY_HTTPS_PORT', '-443'],
    ['PROXY_ADMIN_PORT', '99999'],
    ['PROXY_ADMIN_PORT', '20 19'],
  ])('%s=%s', (name, value) => {
    expect(configError({ [name]: value })).toBe(`${name} must be an integer from 1 to 65535, got ${JSON.stringify(value)}`);
  });

  it.each([
    ['PROXY_RECONCILE_MS', '99', 'PROXY_RECONCILE_MS must be an integer from 100 to 60000, got "99"'],
    ['PROXY_RECONCILE_MS', '60001', 'PROXY_RECONCILE_MS must be an integer from 100 to 60000, got "60001"'],
    ['DRAIN_TIMEOUT_MS', '-1', 'DRAIN_TIMEOUT_MS must be an integer from 0 to 600000, got "-1"'],
    ['DRAIN_TIMEOUT_MS', '600001', 'DRAIN_TIMEOUT_MS must be an integer from 0 to 600000, got "600001"'],
    ['DRAIN_TIMEOUT_MS', '1s', 'DRAIN_TIMEOUT_MS must be an integer from 0 to 600000, got "1s"'],
  ])('%s=%s', (name, value, message) => {
    expect(configError({ [name]: value })).toBe(message);
  });

  it('CADDY_ADMIN_URL that is not a URL, or not http(s)', () => {
    expect(configError({ CADDY_ADMIN_URL: '127.0.0.1:2019' })).toMatch(/^CADDY_ADMIN_URL must be/);
    expect(configError({ CADDY_ADMIN_URL: 'not a url' })).toBe('CADDY_ADMIN_URL must be a URL like http://127.0.0.1:2019, got "not a url"');
    expect(configError({ CADDY_ADMIN_URL: 'unix:///run/caddy/admin.sock' })).toBe('CADDY_ADMIN_URL must be an http:// or https:// URL');
  });

  it('the proxy settings are not checked when there is no proxy', () => {
    expect(load({ PROXY: 'none', PROXY_HTTP_PORT: 'nope', ACME_EMAIL: 'bad', CADDY_ADMIN_URL: 'bad' }).proxy).toEqual({ kind: 'none' });
  });
});
