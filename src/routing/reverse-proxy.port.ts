/** The outcome of loading routes into the proxy, reported to the user as `proxy`. */
export interface ProxyResult {
  ok: boolean;
  detail: string;
}

export interface RouteTarget {
  hostname: string;
  serviceId: string;
  /**
   * `ip:port` of the service's current container (its traffic slot, when it has one); null while it
   * has none, and the proxy answers 503 for the hostname rather than another site's content or a
   * connection error.
   */
  upstream: string | null;
  /**
   * The upstreams of the service's other replicas, when it runs several (`upstream` is the first's):
   * the proxy balances each request over all of them. At most MAX_ROUTE_UPSTREAMS - 1.
   */
  replicaUpstreams?: string[];
}

/** The most upstreams one hostname is balanced over (its replicas): what the proxy's configuration is built for. */
export const MAX_ROUTE_UPSTREAMS = 32;

/** The whole routing table, as one value: the proxy never gets a partial update. */
export interface RoutingTable {
  /** Changes whenever anything in the table does: lets the proxy say whether it still serves it. */
  version: string;
  routes: RouteTarget[];
}

/** Whether the proxy serves a table: `unreachable` carries the reason. */
export type ProxyState = { state: 'current' } | { state: 'stale' } | { state: 'unreachable'; detail: string };

/** Loads the whole routing table; implementations must be idempotent. */
export interface ReverseProxy {
  /** False when the install routes elsewhere: nothing waits on this proxy then. */
  readonly enabled: boolean;
  apply(table: RoutingTable, signal?: AbortSignal): Promise<ProxyResult>;
  /** Cheap: asked every few seconds, so a proxy that restarted empty gets its routes back. */
  check(version: string, signal?: AbortSignal): Promise<ProxyState>;
}
