import type { ProxyResult, ReverseProxy, RouteTarget } from '../../src/ports/reverse-proxy.port.js';

/** Stands in until a real proxy is configured, and says so rather than pretending routes are live. */
export class UnconfiguredReverseProxy implements ReverseProxy {
  async apply(_routes: RouteTarget[]): Promise<ProxyResult> {
    return { ok: false, detail: 'no reverse proxy configured' };
  }
}
