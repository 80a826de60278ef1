import { createHash } from 'node:crypto';
import type { RoutingTable } from '../../src/routing/reverse-proxy.port.js';

export interface CaddyServeOptions {
  httpPort: number;
  httpsPort: number;
  /** Off: plain HTTP on httpPort (tests, or behind another TLS terminator). */
  autoHttps: boolean;
  /** The ACME account's email; Caddy's default issuers when null. */
  acmeEmail: string | null;
  /**
   * The traffic gate's responder listens on 127.0.0.1:<gatePort>; Caddy checks each slot's gate every
   * <healthIntervalMs> (see TrafficGate). Without it, routes to slots are refused.
   */
  gatePort?: number;
  healthIntervalMs?: number;
}

/** The `@id` Caddy knows the loaded table by: `GET /id/<it>` answers 404 once another config replaced it. */
export function tableMarker(version: string): string {
  return `slipway-routes-${version}`;
}

/**
 * The `@id` of how the table is served (ports, HTTPS, the gate): a platform restarted with other
 * settings finds the same table served the old way, and must load it again.
 */
export function servingMarker(options: CaddyServeOptions): string {
  const { httpPort, httpsPort, autoHttps, acmeEmail, gatePort, healthIntervalMs } = options;
  const digest = createHash('sha256').update(JSON.stringify([httpPort, httpsPort, autoHttps, acmeEmail, gatePort ?? null, healthIntervalMs ?? null])).digest('hex');
  return `slipway-serving-${digest.slice(0, 16)}`;
}

/**
 * Caddy's native JSON configuration for a routing table: one route per hostname to its service's
 * container (one per service to its slots), a 503 for a service with no container, a 404 for
 * hostnames nobody configured.
 * `admin` is whatever the running Caddy has, so a load never moves its admin endpoint.
 */
export function buildCaddyConfig(table: RoutingTable, options: CaddyServeOptions, admin: unknown): Record<string, unknown> {
  // A service's hostnames share one route when it routes to slots: each reverse_proxy handler runs its own
  // health checks, so one per hostname would multiply them by the number of domains.
  const routes: Array<{ match: Array<{ host: string[] }>; handle: unknown[]; terminal: boolean }> = [];
  const bySlots = new Map<string, { host: string[] }>();
  for (const route of table.routes) {
    if (Array.isArray(route.upstream)) {
      const key = `${route.serviceId}|${route.upstream.join(',')}`;
      const shared = bySlots.get(key);
      if (shared) {
        shared.host.push(route.hostname);
        continue;
      }
      const match = { host: [route.hostname] };
      bySlots.set(key, match);
      routes.push({ match: [match], handle: [reverseProxy(route.upstream, options)], terminal: true });
      continue;
    }
    routes.push({
      match: [{ host: [route.hostname] }],
      handle: [route.upstream ? reverseProxy(route.upstream, options) : plainResponse(503, 'This service has no running container yet.\n', { 'Retry-After': ['10'] })],
      terminal: true,
    });
  }
  const fallback = { '@id': tableMarker(table.version), handle: [plainResponse(404, 'No service is configured for this hostname.\n')] };

  const server: Record<string, unknown> = {
    '@id': servingMarker(options),
    listen: [`:${options.autoHttps ? options.httpsPort : options.httpPort}`],
    routes: [...routes, fallback],
  };
  if (!options.autoHttps) server.automatic_https = { disable: true };

  const apps: Record<string, unknown> = {
    http: { http_port: options.httpPort, https_port: options.httpsPort, servers: { slipway: server } },
  };
  if (options.autoHttps && options.acmeEmail) {
    apps.tls = { automation: { policies: [{ issuers: [{ module: 'acme', email: options.acmeEmail }] }] } };
  }
  // A closed slot fails its check every interval by design: not worth a log line each time.
  const logging = options.gatePort ? { logging: { logs: { default: { exclude: ['http.handlers.reverse_proxy.health_checker.active'] } } } } : {};
  return { ...(admin ? { admin } : {}), ...logging, apps };
}

function reverseProxy(upstream: string | string[], options: CaddyServeOptions): Record<string, unknown> {
  const slots = Array.isArray(upstream) ? upstream : null;
  if (slots && !options.gatePort) throw new Error('routes to traffic slots need the gate port');
  return {
    handler: 'reverse_proxy',
    upstreams: (slots ?? [upstream as string]).map((dial) => ({ dial })),
    ...(slots
      ? {
          // The gate decides which slot is open; `first` sends everything to the first open one, so
          // a client never goes back from the new container to the old one.
          health_checks: {
            active: { port: options.gatePort, uri: '/', interval: `${options.healthIntervalMs ?? 500}ms`, timeout: '1s', expect_status: 200 },
          },
        }
      : {}),
    // Idle connections to a container being retired close soon, so its drain ends soon after its last request.
    // Setting keep_alive at all drops Go's idle pool to 2 per host unless the pool size is given too.
    transport: { protocol: 'http', keep_alive: { idle_timeout: '2s', max_idle_conns_per_host: 256 } },
    // A request that could not reach the container is retried for a moment (it never got there).
    load_balancing: slots
      ? { selection_policy: { policy: 'first' }, try_duration: '5s', try_interval: '100ms' }
      : { try_duration: '5s', try_interval: '250ms' },
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
