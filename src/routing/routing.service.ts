import { createHash } from 'node:crypto';
import { databaseEngineOf } from '../domain/database-engines.js';
import { routesGeneratedHostname } from '../domain/storage-server.js';
import type { ProxyResult, ReverseProxy, RouteTarget, RoutingTable } from './reverse-proxy.port.js';
import type { ServiceDeps } from '../platform/deps.js';
import { generatedHostname } from '../domain/environments.js';
import { hostnameScopes } from '../platform/hostname-scopes.js';
import { CATALOG_TABLES } from '../platform/versioned-cache.js';

const NOT_READY: ProxyResult = {
  ok: false,
  detail: 'routes are loaded once the platform has found the running containers (is the Docker engine reachable?); the change is saved',
};

/**
 * Builds the whole routing table from the database and the services' current containers, and keeps
 * the reverse proxy serving it: after every change, and from a loop that notices a proxy that
 * restarted empty, came back, or lost the table. Always the whole table, so any load converges.
 */
export class RoutingService {
  /** serviceId -> `ip:port` of the container that serves it (its traffic slot, when it has one), kept by the deploy runner. */
  private readonly upstreams = new Map<string, string>();
  /** serviceId -> the upstreams of its replicas after the first, when it runs several. */
  private readonly replicaUpstreams = new Map<string, string[]>();
  private upstreamVersion = 0;
  /** Until the runner has listed the running containers, a table would send every hostname to 503. */
  private upstreamsKnown: boolean;
  private cached: { key: string; table: RoutingTable } | null = null;
  private loadedVersion: string | null = null;
  /** The upstreams of the last table the proxy took: where it may still send requests. */
  private served = new Set<string>();
  private inFlight: Promise<ProxyResult> | null = null;
  private queued: Promise<ProxyResult> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private reconciling = false;
  private lastLogged = '';
  /** The proxy was unreachable since the last load: says why the next load happens. */
  private lost = false;

  constructor(
    private readonly deps: ServiceDeps,
    private readonly proxy: ReverseProxy,
    options: { upstreamsKnown: boolean },
    private readonly log: (message: string, extra?: Record<string, unknown>) => void = () => {},
  ) {
    this.upstreamsKnown = options.upstreamsKnown;
  }

  get enabled(): boolean {
    return this.proxy.enabled;
  }

  /** `replicas`: the upstreams of the service's other replicas, balanced over with the first (none without a first). */
  setUpstream(serviceId: string, upstream: string | null, replicas: string[] = []): void {
    const others = upstream ? replicas : [];
    const had = this.replicaUpstreams.get(serviceId) ?? [];
    if ((this.upstreams.get(serviceId) ?? null) === upstream && had.length === others.length && had.every((u, i) => u === others[i]))
      return;
    if (upstream) this.upstreams.set(serviceId, upstream);
    else this.upstreams.delete(serviceId);
    if (others.length) this.replicaUpstreams.set(serviceId, [...others]);
    else this.replicaUpstreams.delete(serviceId);
    this.upstreamVersion++;
  }

  private targetOf(hostname: string, serviceId: string): RouteTarget {
    const replicas = this.replicaUpstreams.get(serviceId);
    return { hostname, serviceId, upstream: this.upstreamOf(serviceId), ...(replicas?.length ? { replicaUpstreams: replicas } : {}) };
  }

  upstreamOf(serviceId: string): string | null {
    return this.upstreams.get(serviceId) ?? null;
  }

  /** Every upstream the service's route names now: its first, then its other replicas'. */
  upstreamsOf(serviceId: string): string[] {
    const first = this.upstreams.get(serviceId);
    return first ? [first, ...(this.replicaUpstreams.get(serviceId) ?? [])] : [];
  }

  /**
   * The upstreams of the last table the proxy took (empty until one was): a traffic slot among them
   * may still get requests, and stays open until a table without it is served.
   */
  servedUpstreams(): ReadonlySet<string> {
    return this.served;
  }

  /** Reads the table from the database again at the next look (another process may have changed it). */
  invalidate(): void {
    this.cached = null;
  }

  markUpstreamsKnown(): void {
    this.upstreamsKnown = true;
  }

  async table(): Promise<RoutingTable> {
    const key = `${this.deps.store.versionOf(CATALOG_TABLES)}|${this.upstreamVersion}|${this.deps.config.rootDomain ?? ''}`;
    if (this.cached?.key === key) return this.cached.table;
    const [domains, services, scopes] = await Promise.all([
      this.deps.store.domains.list(null),
      this.deps.store.projects.listAllServices(),
      hostnameScopes(this.deps.store, null),
    ]);
    const web = new Map(services.filter((s) => s.runtimeMode === 'web' && !databaseEngineOf(s)).map((s) => [s.id, s]));
    const routes = new Map<string, RouteTarget>();
    for (const domain of domains) {
      if (web.has(domain.serviceId)) routes.set(domain.hostname, this.targetOf(domain.hostname, domain.serviceId));
    }
    for (const service of web.values()) {
      // A private storage instance is reached by name on its environment's network, and by its custom domains only.
      if (!routesGeneratedHostname(service)) continue;
      const hostname = generatedHostname(service, scopes.get(service.environmentId) ?? '', this.deps.config.rootDomain);
      // A custom domain of the same name wins: it was asked for.
      if (hostname && !routes.has(hostname)) routes.set(hostname, this.targetOf(hostname, service.id));
    }
    const sorted = [...routes.values()].sort((a, b) => (a.hostname < b.hostname ? -1 : a.hostname > b.hostname ? 1 : 0));
    const version = createHash('sha256').update(JSON.stringify(sorted)).digest('hex').slice(0, 16);
    const table: RoutingTable = { version, routes: sorted };
    this.cached = { key, table };
    return table;
  }

  /** Every routed hostname and its service (the metrics' request counts are per hostname). */
  async hostnames(): Promise<Map<string, string>> {
    return new Map((await this.table()).routes.map((route) => [route.hostname, route.serviceId]));
  }

  /**
   * Loads the current table. Never throws: a proxy that is down must not fail or lose the user's
   * saved change. Loads run one at a time; callers arriving during one share the next, which reads
   * the database after their change.
   */
  reload(): Promise<ProxyResult> {
    // Between one load's end and the queued one's start, the queued one is still the one to join.
    if (this.queued) return this.queued;
    if (!this.inFlight) return this.loadNow();
    this.queued ??= this.inFlight.then(() => {
      this.queued = null;
      return this.loadNow();
    });
    return this.queued;
  }

  private loadNow(): Promise<ProxyResult> {
    const run = this.load().finally(() => {
      if (this.inFlight === run) this.inFlight = null;
    });
    this.inFlight = run;
    return run;
  }

  private async load(): Promise<ProxyResult> {
    if (!this.upstreamsKnown) return NOT_READY;
    try {
      const table = await this.table();
      const result = await this.proxy.apply(table, AbortSignal.timeout(this.deps.config.routing.proxyTimeoutMs));
      if (result.ok) this.took(table);
      return result;
    } catch (error) {
      return { ok: false, detail: `proxy reload failed: ${error instanceof Error ? error.message : String(error)}` };
    }
  }

  private took(table: RoutingTable): void {
    this.loadedVersion = table.version;
    this.served = new Set(table.routes.flatMap((route) => (route.upstream ? [route.upstream, ...(route.replicaUpstreams ?? [])] : [])));
  }

  /** True when the proxy is known to serve the current table (or there is no proxy to wait for). */
  async settled(): Promise<boolean> {
    if (!this.enabled) return true;
    return this.loadedVersion !== null && this.loadedVersion === (await this.table()).version;
  }

  /** Whether the proxy may send this service's traffic anywhere: if not, its containers can go at once. */
  async routesTo(serviceId: string): Promise<boolean> {
    return this.enabled && (await this.table()).routes.some((r) => r.serviceId === serviceId);
  }

  /**
   * One pass of the loop: loads the table when it changed since the last load, or when the proxy no
   * longer serves it (restarted empty, replaced by hand, back after being down).
   */
  async reconcile(): Promise<void> {
    if (!this.enabled || !this.upstreamsKnown || this.reconciling) return;
    this.reconciling = true;
    try {
      const table = await this.table();
      // After a restart of the platform, the proxy most likely still serves the table: a load would
      // close its idle client connections for nothing.
      if (this.loadedVersion === null && !this.lost) {
        const state = await this.proxy.check(table.version, AbortSignal.timeout(this.deps.config.routing.proxyTimeoutMs));
        if (state.state === 'current') {
          this.took(table);
          return;
        }
      }
      let reason: string | null =
        table.version === this.loadedVersion ? null : this.lost ? 'the proxy is reachable again' : 'the routing table changed';
      if (!reason) {
        const state = await this.proxy.check(table.version, AbortSignal.timeout(this.deps.config.routing.proxyTimeoutMs));
        if (state.state === 'unreachable') {
          this.loadedVersion = null;
          this.lost = true;
          this.logOnce('the reverse proxy is unreachable; routes will be loaded when it is back', state.detail);
          return;
        }
        if (state.state === 'stale') reason = 'the proxy no longer serves the routes (restarted?)';
      }
      if (!reason) return;
      const result = await this.reload();
      if (result.ok) this.lost = false;
      this.logOnce(result.ok ? `routes loaded: ${reason}` : 'routes not loaded', result.detail);
    } catch (error) {
      this.log('routing reconcile failed', { error: (error as Error).message });
    } finally {
      this.reconciling = false;
    }
  }

  /** A proxy that stays down is reported once, not every few seconds. */
  private logOnce(message: string, detail: string): void {
    if (`${message}|${detail}` === this.lastLogged) return;
    this.lastLogged = `${message}|${detail}`;
    this.log(message, { detail });
  }

  start(): void {
    if (this.timer || !this.enabled) return;
    void this.reconcile();
    this.timer = setInterval(() => void this.reconcile(), this.deps.config.routing.reconcileMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.inFlight?.catch(() => {});
  }
}
