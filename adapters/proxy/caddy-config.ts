import { createHash } from 'node:crypto';
import type { RouteTarget, RoutingTable } from '../../src/routing/reverse-proxy.port.js';

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

/**
 * How Caddy is told which hostnames may get a certificate on demand. Caddy 2.8+ takes a `permission`
 * module (`{"module": "http", "endpoint": ...}`); 2.6 and 2.7 only know the `ask` URL, which 2.8-2.10
 * still accept (deprecated, turned into the same `http` module) and which the newest Caddy refuses
 * (its policies are provisioned before `ask` is converted: "on-demand TLS cannot be enabled without a
 * permission module"). The adapter sends `permission` and falls back to `ask` when Caddy does not know it.
 */
export type OnDemandForm = 'permission' | 'ask';

/**
 * One Caddy route per upstream: a slot pair, "no container yet", or a service's plain address. Its
 * hostnames are not in the configuration: each is an empty file in the route's directory, which Caddy's
 * `file` matcher looks up per request (`<dir>/{http.request.host}`), so adding, removing or moving a
 * hostname changes files and never reloads Caddy.
 */
export interface ServiceRoute {
  /** The route's directory, under the generation directory. */
  dir: string;
  /** Empty for the routes shared by whichever services hold them (slot pairs, waiting). */
  serviceId: string;
  upstream: RouteTarget['upstream'];
  hostnames: string[];
}

/** Every routed hostname, flat: what the TLS permission route and the HTTP redirect look up. */
export const ALL_HOSTNAMES_DIR = '_all';

/** Where Caddy asks whether a hostname may have a certificate: answered by Caddy itself, from the directory. */
export const TLS_PERMISSION_PATH = '/slipway/tls-permission';

/** A hostname as a file name: lower-case labels, no empty one (so never `.`, `..` or a path). */
const FILE_NAME_HOSTNAME = /^[a-z0-9_-]+(\.[a-z0-9_-]+)*$/;

/**
 * The `@id` Caddy knows the loaded configuration by: `GET /id/<it>` answers 404 once another
 * configuration replaced it. `digest` names the configuration, which holds no hostname.
 */
export function tableMarker(digest: string): string {
  return `slipway-routes-${digest}`;
}

/**
 * The `@id` of how the table is served (ports, HTTPS, the gate): a platform restarted with other
 * settings finds the same table served the old way, and must load it again.
 */
export function servingMarker(options: CaddyServeOptions): string {
  const { httpPort, httpsPort, autoHttps, acmeEmail, gatePort, healthIntervalMs } = options;
  const digest = createHash('sha256')
    .update(JSON.stringify([httpPort, httpsPort, autoHttps, acmeEmail, gatePort ?? null, healthIntervalMs ?? null]))
    .digest('hex');
  return `slipway-serving-${digest.slice(0, 16)}`;
}

/** Hostnames of services with no container yet: one route for all of them (a 503), whatever their number. */
export const WAITING_DIR = '_waiting';

/**
 * The table as routes, in a stable order (by directory): one per slot pair of the pool (used or
 * not), one for every service still waiting for a container, and one per service routed to a plain
 * address. A table that differs only in hostnames, in which service holds which pair, or in which
 * services are waiting gives the same routes, hence the same configuration.
 */
export function planRoutes(table: RoutingTable): ServiceRoute[] {
  const byKey = new Map<string, ServiceRoute>();
  const perService = new Map<string, number>();
  (table.slotPool ?? []).forEach((pair, i) => {
    byKey.set(JSON.stringify(pair), { dir: `_pair-${String(i).padStart(3, '0')}`, serviceId: '', upstream: pair, hostnames: [] });
  });
  byKey.set('null', { dir: WAITING_DIR, serviceId: '', upstream: null, hostnames: [] });
  for (const route of table.routes) {
    if (!FILE_NAME_HOSTNAME.test(route.hostname) || route.hostname.length > 253) {
      throw new Error(`${JSON.stringify(route.hostname)} cannot be routed: Caddy's routes directory holds lower-case hostnames only`);
    }
    const shared = byKey.get(JSON.stringify(route.upstream));
    if (shared && (shared.upstream === null || shared.dir.startsWith('_pair-'))) {
      shared.hostnames.push(route.hostname);
      continue;
    }
    // A service has one upstream in a table; should it ever have two, each gets a route of its own.
    const key = `${route.serviceId}\n${JSON.stringify(route.upstream)}`;
    let service = byKey.get(key);
    if (!service) {
      const n = (perService.get(route.serviceId) ?? 0) + 1;
      perService.set(route.serviceId, n);
      service = {
        dir: `${serviceDirName(route.serviceId)}${n > 1 ? `.${n}` : ''}`,
        serviceId: route.serviceId,
        upstream: route.upstream,
        hostnames: [],
      };
      byKey.set(key, service);
    }
    service.hostnames.push(route.hostname);
  }
  return [...byKey.values()].sort((a, b) => (a.dir < b.dir ? -1 : a.dir > b.dir ? 1 : 0));
}

/** Service ids are 16 lower-case alphanumerics; anything else is named by its hash (never `_all`, never a path). */
function serviceDirName(serviceId: string): string {
  return /^[a-z0-9][a-z0-9-]{0,62}$/.test(serviceId) ? serviceId : `h-${createHash('sha256').update(serviceId).digest('hex').slice(0, 24)}`;
}

export interface CaddyLayout {
  /** The routes directory as Caddy reads it (inside its container, or the platform's own path). */
  routesDir: string;
  onDemand?: OnDemandForm;
  /** Where Caddy writes its access log (as Caddy sees it): one JSON line per request, see CaddyRequestLogSource. */
  accessLog?: string;
}

/** The logger of the access lines the platform counts (`http.log.access.<it>`). */
export const ACCESS_LOGGER = 'slipway_access';

export interface BuiltCaddyConfig {
  config: Record<string, unknown>;
  /** Names the configuration and its directory of hostnames (`<routesDir>/<digest>`). */
  digest: string;
  routes: ServiceRoute[];
}

/**
 * Caddy's native JSON configuration for a routing table: one route per service (to its container,
 * its two slots, or a 503 without a container) matching the hostnames listed in its directory, and
 * a 404 for hostnames nobody configured. The digest covers everything but the hostnames and
 * `admin`, which is whatever the running Caddy has, so a load never moves its admin endpoint.
 */
export function buildCaddyConfig(table: RoutingTable, options: CaddyServeOptions, admin: unknown, layout: CaddyLayout): BuiltCaddyConfig {
  const routes = planRoutes(table);
  // Named by what it holds (and where): built once with placeholders, and always with the same
  // on-demand form, so the Caddy version that decided the form does not change the name.
  const routesDir = layout.routesDir.replace(/\/+$/, '');
  const accessLog = layout.accessLog ? { accessLog: layout.accessLog } : {};
  const neutral = JSON.stringify([
    routesDir,
    configFor(routes, options, { root: '\0root', marker: '\0marker', onDemand: 'permission', ...accessLog }),
  ]);
  const digest = createHash('sha256').update(neutral).digest('hex').slice(0, 16);
  const config = configFor(routes, options, {
    root: `${routesDir}/${digest}`,
    marker: tableMarker(digest),
    onDemand: layout.onDemand ?? 'permission',
    ...accessLog,
  });
  return { config: { ...(admin ? { admin } : {}), ...config }, digest, routes };
}

function configFor(
  routes: ServiceRoute[],
  options: CaddyServeOptions,
  at: { root: string; marker: string; onDemand: OnDemandForm; accessLog?: string },
): Record<string, unknown> {
  const serviceRoutes = routes.map((route) => ({
    match: [hostnameIn(`${at.root}/${route.dir}`, '{http.request.host}')],
    handle: [
      route.upstream
        ? reverseProxy(route.upstream, options)
        : plainResponse(503, 'This service has no running container yet.\n', { 'Retry-After': ['10'] }),
    ],
    terminal: true,
  }));
  const fallback = { '@id': at.marker, handle: [notFound()] };

  const server: Record<string, unknown> = {
    '@id': servingMarker(options),
    listen: [`:${options.autoHttps ? options.httpsPort : options.httpPort}`],
    routes: [...serviceRoutes, fallback],
  };
  const servers: Record<string, unknown> = { slipway: server };
  const apps: Record<string, unknown> = { http: { http_port: options.httpPort, https_port: options.httpsPort, servers } };

  if (!options.autoHttps) {
    server.automatic_https = { disable: true };
  } else {
    // No hostname in the configuration, so automatic HTTPS finds none to manage: certificates are
    // obtained on demand (at a client's first handshake for a hostname, then renewed), for the
    // hostnames Caddy's permission route finds in the directory; TLS is on for every connection,
    // and port 80 is a server of our own (automatic redirects would not be generated either).
    server.tls_connection_policies = [{}];
    server.automatic_https = { disable_redirects: true };
    servers['slipway-http'] = httpServer(at.root, options);
    const permissionUrl = `http://127.0.0.1:${options.httpPort}${TLS_PERMISSION_PATH}`;
    const policy: Record<string, unknown> = { on_demand: true };
    if (options.acmeEmail) policy.issuers = [{ module: 'acme', email: options.acmeEmail }];
    apps.tls = {
      automation: {
        policies: [policy],
        // Caddy 2.8+ reads `permission`; `ask` is the 2.6/2.7 form (see OnDemandForm).
        on_demand: at.onDemand === 'permission' ? { permission: { module: 'http', endpoint: permissionUrl } } : { ask: permissionUrl },
      },
    };
  }
  const logs: Record<string, unknown> = {};
  // A closed slot fails its check every interval by design: not worth a log line each time.
  const exclude = options.gatePort ? ['http.handlers.reverse_proxy.health_checker.active'] : [];
  if (at.accessLog) {
    server.logs = { default_logger_name: ACCESS_LOGGER };
    exclude.push(`http.log.access.${ACCESS_LOGGER}`);
    logs[ACCESS_LOGGER] = {
      // Bounded: one file of 16 MB and one rolled one. The platform reads the host and the status; the
      // rest that could identify a visitor or carry a credential (URI, headers, addresses) is dropped.
      writer: { output: 'file', filename: at.accessLog, roll_size_mb: 16, roll_keep: 1 },
      encoder: {
        format: 'filter',
        wrap: { format: 'json' },
        fields: Object.fromEntries(
          ['request>uri', 'request>headers', 'request>remote_ip', 'request>remote_port', 'request>tls', 'resp_headers', 'user_id'].map(
            (field) => [field, { filter: 'delete' }],
          ),
        ),
      },
      include: [`http.log.access.${ACCESS_LOGGER}`],
    };
  }
  if (exclude.length) logs.default = { exclude };
  const logging = Object.keys(logs).length ? { logging: { logs } } : {};
  return { ...logging, apps };
}

/**
 * Port 80 with automatic HTTPS: ACME HTTP-01 challenges are answered by Caddy before any route; then
 * the permission question Caddy asks itself (from loopback only: 200 for a routed hostname, else
 * 403), a redirect to HTTPS for routed hostnames, and 404 for the rest.
 */
function httpServer(root: string, options: CaddyServeOptions): Record<string, unknown> {
  const all = `${root}/${ALL_HOSTNAMES_DIR}`;
  const httpsAuthority = options.httpsPort === 443 ? '{http.request.host}' : `{http.request.host}:${options.httpsPort}`;
  return {
    listen: [`:${options.httpPort}`],
    routes: [
      {
        match: [{ path: [TLS_PERMISSION_PATH], remote_ip: { ranges: ['127.0.0.1/32', '::1/128'] } }],
        handle: [
          {
            handler: 'subroute',
            routes: [
              {
                // The regular expression keeps an empty or odd `domain` from naming the directory itself.
                match: [
                  {
                    vars_regexp: { '{http.request.uri.query.domain}': { pattern: '^[a-z0-9_-]+(\\.[a-z0-9_-]+)*$' } },
                    ...hostnameIn(all, '{http.request.uri.query.domain}'),
                  },
                ],
                handle: [{ handler: 'static_response', status_code: 200 }],
                terminal: true,
              },
              { handle: [{ handler: 'static_response', status_code: 403 }] },
            ],
          },
        ],
        terminal: true,
      },
      {
        match: [hostnameIn(all, '{http.request.host}')],
        handle: [{ handler: 'static_response', status_code: 308, headers: { Location: [`https://${httpsAuthority}{http.request.uri}`] } }],
        terminal: true,
      },
      { handle: [notFound()] },
    ],
  };
}

/** Matches when `<dir>/<name>` is a file: hostnames are compared as they are sent, so case matters (see docs/decisions.md). */
function hostnameIn(dir: string, name: string): { file: Record<string, unknown> } {
  return { file: { root: dir, try_files: [name], try_policy: 'first_exist' } };
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
            active: {
              port: options.gatePort,
              uri: '/',
              interval: `${options.healthIntervalMs ?? 500}ms`,
              timeout: '1s',
              expect_status: 200,
            },
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

function notFound(): Record<string, unknown> {
  return plainResponse(404, 'No service is configured for this hostname.\n');
}

function plainResponse(status: number, body: string, headers: Record<string, string[]> = {}): Record<string, unknown> {
  return {
    handler: 'static_response',
    status_code: status,
    headers: { 'Content-Type': ['text/plain; charset=utf-8'], ...headers },
    body,
  };
}
