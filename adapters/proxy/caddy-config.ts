import type { RoutingTable } from '../../src/ports/reverse-proxy.port.js';

export interface CaddyServeOptions {
  httpPort: number;
  httpsPort: number;
  /** Off: plain HTTP on httpPort (tests, or behind another TLS terminator). */
  autoHttps: boolean;
  /** The ACME account's email; Caddy's default issuers when null. */
  acmeEmail: string | null;
}

/** The `@id` Caddy knows the loaded table by: `GET /id/<it>` answers 404 once another config replaced it. */
export function tableMarker(version: string): string {
  return `slipway-routes-${version}`;
}

/**
 * Caddy's native JSON configuration for a routing table: one route per hostname to its service's
 * container, a 503 for a service with no container, a 404 for hostnames nobody configured.
 * `admin` is whatever the running Caddy has, so a load never moves its admin endpoint.
 */
export function buildCaddyConfig(table: RoutingTable, options: CaddyServeOptions, admin: unknown): Record<string, unknown> {
  const routes: unknown[] = table.routes.map((route) => ({
    match: [{ host: [route.hostname] }],
    handle: [route.upstream ? reverseProxy(route.upstream) : plainResponse(503, 'This service has no running container yet.\n', { 'Retry-After': ['10'] })],
    terminal: true,
  }));
  routes.push({ '@id': tableMarker(table.version), handle: [plainResponse(404, 'No service is configured for this hostname.\n')] });

  const server: Record<string, unknown> = {
    listen: [`:${options.autoHttps ? options.httpsPort : options.httpPort}`],
    routes,
  };
  if (!options.autoHttps) server.automatic_https = { disable: true };

  const apps: Record<string, unknown> = {
    http: { http_port: options.httpPort, https_port: options.httpsPort, servers: { slipway: server } },
  };
  if (options.autoHttps && options.acmeEmail) {
    apps.tls = { automation: { policies: [{ issuers: [{ module: 'acme', email: options.acmeEmail }] }] } };
  }
  return { ...(admin ? { admin } : {}), apps };
}

function reverseProxy(upstream: string): Record<string, unknown> {
  return {
    handler: 'reverse_proxy',
    upstreams: [{ dial: upstream }],
    // Idle connections to a container being retired close soon, so its drain ends soon after its last request.
    // Setting keep_alive at all drops Go's idle pool to 2 per host unless the pool size is given too.
    transport: { protocol: 'http', keep_alive: { idle_timeout: '2s', max_idle_conns_per_host: 256 } },
    // A request that could not reach the container is retried for a moment (it never got there).
    load_balancing: { try_duration: '5s', try_interval: '250ms' },
  };
}

function plainResponse(status: number, body: string, headers: Record<string, string[]> = {}): Record<string, unknown> {
  return {
    handler: 'static_response',
    status_code: status,
    headers: { 'Content-Type': ['text/plain; charset=utf-8'], ...headers },
    body,
  };
}
