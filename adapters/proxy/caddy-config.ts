import { createHash } from 'node:crypto';
import { MAX_ROUTE_UPSTREAMS, type RoutingTable } from '../../src/routing/reverse-proxy.port.js';

export interface CaddyServeOptions {
  httpPort: number;
  httpsPort: number;
  /** Off: plain HTTP on httpPort (tests, or behind another TLS terminator). */
  autoHttps: boolean;
  /** The ACME account's email; Caddy's default issuers when null. */
  acmeEmail: string | null;
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
 * The table as files, by directory (relative to the generation directory): `_all/<hostname>` for every
 * routed hostname, `_waiting/<hostname>` for those of services with no container yet, and
 * `_upstream/<hostname>/<ip:port>` naming where each of the others goes. Caddy reads them per request
 * (see buildCaddyConfig), so no table ever changes the configuration: a hostname added, moved or
 * removed, a new service, a service's new address (a cutover) are all file changes.
 */
export interface RouteFiles {
  dir: string;
  names: string[];
}

/** Every routed hostname, flat: what the TLS permission route and the HTTP redirect look up. */
export const ALL_HOSTNAMES_DIR = '_all';

/** Hostnames of services with no container yet: one route for all of them (a 503), whatever their number. */
export const WAITING_DIR = '_waiting';

/** `<dir>/<hostname>/<ip:port>`: the one file in a hostname's directory names its upstream. */
export const UPSTREAMS_DIR = '_upstream';

/**
 * `<dir>/<hostname>/<n>-<ip:port>`: the upstreams of a hostname's other replicas (n from 1), beside
 * its first one in UPSTREAMS_DIR; a request is balanced over the first and every n found in order.
 */
export const REPLICAS_DIR = '_replicas';

/** Where Caddy asks whether a hostname may have a certificate: answered by Caddy itself, from the directory. */
export const TLS_PERMISSION_PATH = '/slipway/tls-permission';

/**
 * Where Caddy asks itself for a hostname in lower case (see lowerCaseHost): Caddy 2.6 has no
 * placeholder that changes case, its templates (Sprig's `lower`) do.
 */
export const HOST_CASE_PATH = '/slipway/host-case';
const HOST_CASE_HEADER = 'X-Slipway-Host';

/** The variable every route matches its files by: the request's hostname, lower-cased when it was not. */
const HOST_VAR = 'slipway_host';
const HOSTNAME = `{http.vars.${HOST_VAR}}`;

/** A hostname as a file name: lower-case labels, no empty one (so never `.`, `..` or a path). */
const FILE_NAME_HOSTNAME = /^[a-z0-9_-]+(\.[a-z0-9_-]+)*$/;
/** An upstream as a file name: `host:port`, an IPv6 host in brackets; never a path. */
const FILE_NAME_UPSTREAM = /^([a-zA-Z0-9_-]+(\.[a-zA-Z0-9_-]+)*|\[[0-9a-fA-F:.]+\]):[0-9]{1,5}$/;
const LOOPBACK = ['127.0.0.1/32', '::1/128'];

/**
 * The `@id` Caddy knows the loaded configuration by: `GET /id/<it>` answers 404 once another
 * configuration replaced it. `digest` names the configuration, which holds no hostname.
 */
export function tableMarker(digest: string): string {
  return `slipway-routes-${digest}`;
}

/**
 * The `@id` of how the table is served (ports, HTTPS): a platform restarted with other settings finds
 * the same table served the old way, and must load it again.
 */
export function servingMarker(options: CaddyServeOptions): string {
  const { httpPort, httpsPort, autoHttps, acmeEmail } = options;
  const digest = createHash('sha256')
    .update(JSON.stringify([httpPort, httpsPort, autoHttps, acmeEmail]))
    .digest('hex');
  return `slipway-serving-${digest.slice(0, 16)}`;
}

/** The files of a table, `_all` first (see RouteFiles); throws on a hostname or upstream that cannot be a file name. */
export function planFiles(table: RoutingTable): RouteFiles[] {
  const all: string[] = [];
  const waiting: string[] = [];
  const upstreams: RouteFiles[] = [];
  for (const route of table.routes) {
    if (!FILE_NAME_HOSTNAME.test(route.hostname) || route.hostname.length > 253) {
      throw new Error(`${JSON.stringify(route.hostname)} cannot be routed: Caddy's routes directory holds lower-case hostnames only`);
    }
    all.push(route.hostname);
    if (route.upstream === null) {
      waiting.push(route.hostname);
      continue;
    }
    const replicas = route.replicaUpstreams ?? [];
    for (const upstream of [route.upstream, ...replicas])
      if (!FILE_NAME_UPSTREAM.test(upstream)) throw new Error(`${JSON.stringify(upstream)} is not an upstream Caddy can dial`);
    if (replicas.length >= MAX_ROUTE_UPSTREAMS)
      throw new Error(`${route.hostname} has ${replicas.length + 1} upstreams: the proxy balances over ${MAX_ROUTE_UPSTREAMS} at most`);
    upstreams.push({ dir: `${UPSTREAMS_DIR}/${route.hostname}`, names: [route.upstream] });
    if (replicas.length)
      upstreams.push({ dir: `${REPLICAS_DIR}/${route.hostname}`, names: replicas.map((upstream, i) => `${i + 1}-${upstream}`) });
  }
  return [
    { dir: ALL_HOSTNAMES_DIR, names: all },
    { dir: WAITING_DIR, names: waiting },
    ...upstreams.sort((a, b) => (a.dir < b.dir ? -1 : a.dir > b.dir ? 1 : 0)),
  ];
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
}

/**
 * Caddy's native JSON configuration: the same whatever the table, since the routes directory says
 * where each hostname goes. A hostname with a file in `_upstream/<hostname>/` goes to the address the
 * file is named by (a placeholder `dial`), one in `_waiting/` gets a 503, any other a 404. The digest
 * covers everything but `admin`, which is whatever the running Caddy has, so a load never moves its
 * admin endpoint: it changes with how the table is served and where its files are, never with the table.
 */
export function buildCaddyConfig(options: CaddyServeOptions, admin: unknown, layout: CaddyLayout): BuiltCaddyConfig {
  // Named by what it holds (and where): built once with placeholders, and always with the same
  // on-demand form, so the Caddy version that decided the form does not change the name.
  const routesDir = layout.routesDir.replace(/\/+$/, '');
  const accessLog = layout.accessLog ? { accessLog: layout.accessLog } : {};
  const neutral = JSON.stringify([
    routesDir,
    configFor(options, { root: '\0root', marker: '\0marker', onDemand: 'permission', ...accessLog }),
  ]);
  const digest = createHash('sha256').update(neutral).digest('hex').slice(0, 16);
  const config = configFor(options, {
    root: `${routesDir}/${digest}`,
    marker: tableMarker(digest),
    onDemand: layout.onDemand ?? 'permission',
    ...accessLog,
  });
  return { config: { ...(admin ? { admin } : {}), ...config }, digest };
}

function configFor(
  options: CaddyServeOptions,
  at: { root: string; marker: string; onDemand: OnDemandForm; accessLog?: string },
): Record<string, unknown> {
  const server: Record<string, unknown> = {
    '@id': servingMarker(options),
    listen: [`:${options.autoHttps ? options.httpsPort : options.httpPort}`],
    routes: [
      // The lower-casing answer lives on the port-80 server, this one when it is that.
      ...(options.autoHttps ? [] : [hostCaseAnswer()]),
      setHostname('{http.request.host}'),
      lowerCaseHost(options.httpPort),
      upstreamRoute(at.root),
      // A second look, for the request that read the hostname's directory just as a cutover moved
      // its file: Caddy lists the glob's matches and then checks each, so it can list only the old
      // file and find it gone. The new file is created before the old one is removed, so once the
      // old one is gone the new one is there to find; only another cutover could move it again.
      upstreamRoute(at.root),
      {
        match: [hostnameIn(`${at.root}/${WAITING_DIR}`, HOSTNAME)],
        handle: [plainResponse(503, 'This service has no running container yet.\n', { 'Retry-After': ['10'] })],
        terminal: true,
      },
      { '@id': at.marker, handle: [notFound()] },
    ],
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
  if (at.accessLog) {
    server.logs = { default_logger_name: ACCESS_LOGGER };
    logs.default = { exclude: [`http.log.access.${ACCESS_LOGGER}`] };
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
  const logging = Object.keys(logs).length ? { logging: { logs } } : {};
  return { ...logging, apps };
}

/**
 * Port 80 with automatic HTTPS: ACME HTTP-01 challenges are answered by Caddy before any route; then
 * the lower-casing answer, the permission question Caddy asks itself (from loopback only: 200 for a
 * routed hostname in any case, else 403), a redirect to HTTPS (to the hostname as stored) for routed
 * hostnames, and 404 for the rest.
 */
function httpServer(root: string, options: CaddyServeOptions): Record<string, unknown> {
  const all = `${root}/${ALL_HOSTNAMES_DIR}`;
  const httpsAuthority = options.httpsPort === 443 ? HOSTNAME : `${HOSTNAME}:${options.httpsPort}`;
  return {
    listen: [`:${options.httpPort}`],
    routes: [
      hostCaseAnswer(),
      setHostname('{http.request.host}'),
      {
        match: [{ path: [TLS_PERMISSION_PATH], remote_ip: { ranges: LOOPBACK } }],
        handle: [
          {
            handler: 'subroute',
            routes: [
              setHostname('{http.request.uri.query.domain}'),
              lowerCaseHost(options.httpPort),
              {
                // The regular expression keeps an empty or odd `domain` from naming the directory itself.
                match: [{ vars_regexp: { [HOSTNAME]: { pattern: '^[a-z0-9_-]+(\\.[a-z0-9_-]+)*$' } }, ...hostnameIn(all, HOSTNAME) }],
                handle: [{ handler: 'static_response', status_code: 200 }],
                terminal: true,
              },
              { handle: [{ handler: 'static_response', status_code: 403 }] },
            ],
          },
        ],
        terminal: true,
      },
      lowerCaseHost(options.httpPort),
      {
        match: [hostnameIn(all, HOSTNAME)],
        handle: [{ handler: 'static_response', status_code: 308, headers: { Location: [`https://${httpsAuthority}{http.request.uri}`] } }],
        terminal: true,
      },
      { handle: [notFound()] },
    ],
  };
}

/** Sets the name the next routes look up (the Host without its port, or what the permission question asks about). */
function setHostname(value: string): Record<string, unknown> {
  return { handle: [{ handler: 'vars', [HOST_VAR]: value }] };
}

/**
 * A hostname with an upper-case letter or a trailing dot is the same name (RFC 4343, and the root's
 * empty label): its files are looked up lower-cased, without the dot. Caddy 2.6 cannot change case in
 * a placeholder, so it asks itself, the way `forward_auth` asks an authority: a GET with no body to its
 * own port-80 listener, whose template answers the name lower-cased in a header, copied into the
 * variable before the request goes on to the next routes with its method, body and Host as sent.
 * Names already in lower case (what browsers send) skip it.
 */
function lowerCaseHost(httpPort: number): Record<string, unknown> {
  return {
    match: [{ vars_regexp: { [HOSTNAME]: { pattern: '[A-Z]|\\.$' } } }],
    handle: [
      {
        handler: 'reverse_proxy',
        upstreams: [{ dial: `127.0.0.1:${httpPort}` }],
        rewrite: { method: 'GET', uri: HOST_CASE_PATH },
        headers: { request: { set: { [HOST_CASE_HEADER]: [HOSTNAME] } } },
        transport: { protocol: 'http', keep_alive: { idle_timeout: '30s', max_idle_conns_per_host: 64 } },
        handle_response: [
          {
            match: { status_code: [200] },
            routes: [{ handle: [{ handler: 'vars', [HOST_VAR]: `{http.reverse_proxy.header.${HOST_CASE_HEADER}}` }] }],
          },
          { routes: [{ handle: [plainResponse(502, 'The hostname could not be read.\n')] }] },
        ],
      },
    ],
  };
}

/** The answer lowerCaseHost asks for: loopback only, never logged, the name in the same header. */
function hostCaseAnswer(): Record<string, unknown> {
  return {
    match: [{ path: [HOST_CASE_PATH], remote_ip: { ranges: LOOPBACK }, header: { [HOST_CASE_HEADER]: [] } }],
    handle: [
      { handler: 'vars', skip_log: true },
      // Other delimiters than `{{ }}`, which Caddy would read as placeholders in the body.
      { handler: 'templates', delimiters: ['[[', ']]'] },
      {
        handler: 'static_response',
        status_code: 200,
        headers: { 'Content-Type': ['text/plain; charset=utf-8'] },
        body: `[[ .RespHeader.Set "${HOST_CASE_HEADER}" (.Req.Header.Get "${HOST_CASE_HEADER}" | lower | trimSuffix ".") ]]`,
      },
    ],
    terminal: true,
  };
}

/** To the address named by the one file of `_upstream/<hostname>/`: `/<hostname>/<ip:port>`. */
function upstreamRoute(root: string): Record<string, unknown> {
  return {
    match: [hostnameIn(`${root}/${UPSTREAMS_DIR}`, `${HOSTNAME}/*`)],
    handle: [
      {
        handler: 'subroute',
        routes: [
          {
            match: [{ vars_regexp: { '{http.matchers.file.relative}': { name: 'slipway_upstream', pattern: '^/[^/]+/([^/]+)$' } } }],
            handle: [{ handler: 'subroute', routes: replicaRoutes(root, 1) }],
            terminal: true,
          },
          { handle: [notFound()] },
        ],
      },
    ],
    terminal: true,
  };
}

/** The dial of a hostname's n-th upstream (0: its first, in UPSTREAMS_DIR), as captured from its file's name. */
function upstreamDial(n: number): string {
  return n === 0 ? '{http.regexp.slipway_upstream.1}' : `{http.regexp.slipway_replica_${n}.1}`;
}

/**
 * With the hostname's first n upstreams known: when `_replicas/<hostname>/<n>-<ip:port>` exists, its
 * upstream is captured and the next one looked for; else the request goes to the n found. A service
 * with one replica (no such file) costs one look more than before and is proxied exactly as before.
 * Nested rather than listed, so a request stops looking at the first number missing.
 */
function replicaRoutes(root: string, n: number): Record<string, unknown>[] {
  const found = Array.from({ length: n }, (_, i) => upstreamDial(i));
  const proxy = n === 1 ? reverseProxy(found[0]!) : balancingProxy(found);
  if (n >= MAX_ROUTE_UPSTREAMS) return [{ handle: [proxy] }];
  return [
    {
      match: [hostnameIn(`${root}/${REPLICAS_DIR}`, `${HOSTNAME}/${n}-*`)],
      handle: [
        {
          handler: 'subroute',
          routes: [
            {
              match: [
                { vars_regexp: { '{http.matchers.file.relative}': { name: `slipway_replica_${n}`, pattern: `^/[^/]+/${n}-([^/]+)$` } } },
              ],
              handle: [{ handler: 'subroute', routes: replicaRoutes(root, n + 1) }],
              terminal: true,
            },
            { handle: [proxy] },
          ],
        },
      ],
      terminal: true,
    },
    { handle: [proxy] },
  ];
}

/**
 * Matches when `<dir>/<name>` is a file (`name` may end with a glob: placeholders' values are escaped,
 * so only the configuration's own `*` expands).
 */
function hostnameIn(dir: string, name: string): { file: Record<string, unknown> } {
  return { file: { root: dir, try_files: [name], try_policy: 'first_exist' } };
}

/**
 * To the address a file named: a placeholder `dial`, so Caddy's upstream is whatever the directory says
 * at each request (no active health checks run on such an upstream; none are needed: a cutover moves
 * the file).
 */
function reverseProxy(dial: string): Record<string, unknown> {
  return {
    handler: 'reverse_proxy',
    upstreams: [{ dial }],
    // Idle connections to a container being retired close soon, so its drain ends soon after its last request.
    // Setting keep_alive at all drops Go's idle pool to 2 per host unless the pool size is given too.
    transport: { protocol: 'http', keep_alive: { idle_timeout: '2s', max_idle_conns_per_host: 256 } },
    // A request that could not reach the container is retried for a moment (it never got there).
    load_balancing: { try_duration: '5s', try_interval: '100ms' },
  };
}

/**
 * Over a service's replicas, in turn. Caddy runs no health checks on upstreams named by placeholders
 * (and would share their state between hostnames, the placeholder being the key): a replica leaves
 * the route when its file goes (before it drains or stops), and a dial that fails (a replica that
 * died before its file went) is tried again on the next replica within a second.
 */
function balancingProxy(dials: string[]): Record<string, unknown> {
  return {
    handler: 'reverse_proxy',
    upstreams: dials.map((dial) => ({ dial })),
    transport: { protocol: 'http', dial_timeout: '1s', keep_alive: { idle_timeout: '2s', max_idle_conns_per_host: 256 } },
    load_balancing: { selection_policy: { policy: 'round_robin' }, try_duration: '5s', try_interval: '50ms' },
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
