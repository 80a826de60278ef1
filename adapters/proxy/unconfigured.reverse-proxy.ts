import type { ProxyResult, ProxyState, ReverseProxy, RoutingTable } from '../../src/routing/reverse-proxy.port.js';

export const UNCONFIGURED_DETAIL = 'no reverse proxy configured (PROXY=none)';

/** For installs that route elsewhere (PROXY=none): says so rather than pretending routes are live. */
export class UnconfiguredReverseProxy implements ReverseProxy {
  readonly enabled = false;

  async apply(_table: RoutingTable): Promise<ProxyResult> {
    return { ok: false, detail: UNCONFIGURED_DETAIL };
  }

  async check(): Promise<ProxyState> {
    return { state: 'unreachable', detail: UNCONFIGURED_DETAIL };
  }
}
