/** The outcome of loading routes into the proxy, reported to the user as `proxy`. */
export interface ProxyResult {
  ok: boolean;
  detail: string;
}

export interface RouteTarget {
  hostname: string;
  serviceId: string;
  /** Where the proxy should send traffic: the service's published host port. */
  upstream: string;
}

/** Loads the whole routing table; implementations must be idempotent. */
export interface ReverseProxy {
  apply(routes: RouteTarget[], signal?: AbortSignal): Promise<ProxyResult>;
}
