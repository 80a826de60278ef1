import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createHash, randomBytes } from 'node:crypto';
import { networkInterfaces, tmpdir } from 'node:os';
import { DEFAULT_PLATFORM_CONFIG, type PlatformConfig } from '../../src/index.js';

/** Everything the server reads from its environment, parsed and checked once at start. */
export interface AppConfig {
  host: string;
  port: number;
  dataDir: string;
  databaseUrl: string | undefined;
  bootstrapApiKey: string | undefined;
  /** Key for values encrypted at rest; from SECRET_KEY, else a file made once under DATA_DIR. */
  secretKey: string;
  bodyLimitBytes: number;
  /** Requests per minute per API key; 0 turns the limit off. */
  rateLimitPerMinute: number;
  /** Failed authentications per minute per client address before 429. */
  authFailuresPerMinute: number;
  trustProxy: boolean;
  dockerSocket: string;
  /** Base URLs of the DNS providers' APIs: the vendors' own unless overridden (tests, compatible endpoints). */
  dnsApiUrls: { cloudflare?: string | undefined; digitalocean?: string | undefined; hetzner?: string | undefined };
  platform: PlatformConfig;
}

export class ConfigError extends Error {}

function int(env: NodeJS.ProcessEnv, name: string, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  return value;
}

function portRange(raw: string | undefined): { from: number; to: number } {
  if (!raw) return DEFAULT_PLATFORM_CONFIG.hostPortRange;
  const match = /^(\d+)-(\d+)$/.exec(raw.trim());
  const from = Number(match?.[1]);
  const to = Number(match?.[2]);
  if (!match || from < 1 || to > 65535 || from > to) throw new ConfigError(`HOST_PORT_RANGE must look like 20000-29999, got ${JSON.stringify(raw)}`);
  return { from, to };
}

function secretKey(env: NodeJS.ProcessEnv, dataDir: string): string {
  if (env.SECRET_KEY) {
    if (env.SECRET_KEY.length < 32) throw new ConfigError('SECRET_KEY must be at least 32 characters');
    return env.SECRET_KEY;
  }
  if (dataDir === ':memory:') return randomBytes(32).toString('hex');
  const file = path.join(dataDir, 'secret.key');
  if (!existsSync(file)) {
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(file, randomBytes(32).toString('hex'), { mode: 0o600, flag: 'wx' });
  }
  chmodSync(file, 0o600);
  return readFileSync(file, 'utf8').trim();
}

/** The first non-internal IPv4 address of this host: what DNS records point at unless PUBLIC_IP says otherwise. */
function detectPublicIp(): string | null {
  for (const [name, addresses] of Object.entries(networkInterfaces())) {
    // Bridges of Docker and friends are not how the world reaches this host.
    if (/^(docker|br-|veth|virbr|cni|flannel)/.test(name)) continue;
    for (const address of addresses ?? []) {
      if (address.family === 'IPv4' && !address.internal) return address.address;
    }
  }
  return null;
}

function deployConfig(env: NodeJS.ProcessEnv, dataDir: string): PlatformConfig['deploy'] {
  const defaults = DEFAULT_PLATFORM_CONFIG.deploy;
  const images = defaults.analyzerImages;
  return {
    buildConcurrency: int(env, 'BUILD_CONCURRENCY', defaults.buildConcurrency, 0, 64),
    buildsDir: env.BUILDS_DIR || path.join(dataDir === ':memory:' ? tmpdir() : dataDir, 'builds'),
    gitBaseUrl: (env.GIT_BASE_URL || defaults.gitBaseUrl).replace(/\/+$/, ''),
    healthPath: env.HEALTH_PATH || defaults.healthPath,
    healthTimeoutMs: int(env, 'HEALTH_TIMEOUT_MS', defaults.healthTimeoutMs, 100),
    workerSettleMs: int(env, 'WORKER_SETTLE_MS', defaults.workerSettleMs, 0),
    stopGraceSeconds: int(env, 'STOP_GRACE_SECONDS', defaults.stopGraceSeconds, 0, 600),
    analyzerImages: {
      node: env.ANALYZER_NODE_IMAGE || images.node,
      python: env.ANALYZER_PYTHON_IMAGE || images.python,
      go: env.ANALYZER_GO_IMAGE || images.go,
      goRuntime: env.ANALYZER_GO_RUNTIME_IMAGE || images.goRuntime,
      static: env.ANALYZER_STATIC_IMAGE || images.static,
    },
  };
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): AppConfig {
  const dataDir = env.DATA_DIR || './data';
  const key = secretKey(env, dataDir);
  const autoHttps = (env.PROXY_AUTO_HTTPS ?? 'true').toLowerCase() !== 'false';
  return {
    host: env.HOST || '0.0.0.0',
    port: int(env, 'PORT', 3000, 0, 65535),
    dataDir,
    databaseUrl: env.DATABASE_URL || undefined,
    bootstrapApiKey: env.BOOTSTRAP_API_KEY || undefined,
    secretKey: key,
    bodyLimitBytes: int(env, 'BODY_LIMIT_BYTES', 1024 * 1024, 1024),
    rateLimitPerMinute: int(env, 'RATE_LIMIT_PER_MINUTE', 6000),
    authFailuresPerMinute: int(env, 'AUTH_FAILURES_PER_MINUTE', 30, 1),
    trustProxy: env.TRUST_PROXY === 'true',
    dockerSocket: env.DOCKER_SOCKET || '/var/run/docker.sock',
    dnsApiUrls: { cloudflare: env.CLOUDFLARE_API_URL || undefined, digitalocean: env.DIGITALOCEAN_API_URL || undefined, hetzner: env.HETZNER_DNS_API_URL || undefined },
    platform: {
      hostPortRange: portRange(env.HOST_PORT_RANGE),
      rootDomain: env.ROOT_DOMAIN?.toLowerCase() || null,
      publicIp: env.PUBLIC_IP || detectPublicIp() || DEFAULT_PLATFORM_CONFIG.publicIp,
      publicScheme: autoHttps ? 'https' : 'http',
      resourcePrefix: env.RESOURCE_PREFIX || DEFAULT_PLATFORM_CONFIG.resourcePrefix,
      // Derived from the install's own key: stable across restarts, different for every install.
      instanceId: createHash('sha256').update(`instance:${key}`).digest('hex').slice(0, 12),
      streamPingMs: int(env, 'STREAM_PING_MS', DEFAULT_PLATFORM_CONFIG.streamPingMs, 100),
      runtimeLogTail: int(env, 'RUNTIME_LOG_TAIL', DEFAULT_PLATFORM_CONFIG.runtimeLogTail, 0, 10_000),
      deploy: deployConfig(env, dataDir),
    },
  };
}
