/** The settings services need, resolved once at start by the composition root. */
export interface PlatformConfig {
  /** Inclusive range host ports are assigned from. */
  hostPortRange: { from: number; to: number };
  /** e.g. `apps.example.com`: generated hostnames live under it. */
  rootDomain: string | null;
  /** The IP address DNS records and the overview point at. */
  publicIp: string;
  /** Scheme of public URLs: https unless the proxy serves plain HTTP. */
  publicScheme: 'http' | 'https';
  /** Resource names (containers, images, volumes) start with it. */
  resourcePrefix: string;
  /** Keep-alive interval of the deployment log stream. */
  streamPingMs: number;
  /** Lines in the runtime log stream's snapshot. */
  runtimeLogTail: number;
}

export const DEFAULT_PLATFORM_CONFIG: PlatformConfig = {
  hostPortRange: { from: 20000, to: 29999 },
  rootDomain: null,
  publicIp: '127.0.0.1',
  publicScheme: 'https',
  resourcePrefix: 'slipway',
  streamPingMs: 15_000,
  runtimeLogTail: 200,
};
