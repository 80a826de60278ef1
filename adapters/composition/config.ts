import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createHash, createPublicKey, randomBytes } from 'node:crypto';
import { networkInterfaces, tmpdir } from 'node:os';
import { MAX_ROUTE_UPSTREAMS } from '../../src/routing/reverse-proxy.port.js';
import {
  DEFAULT_EVENTS_CONFIG,
  DEFAULT_PLATFORM_CONFIG,
  DEFAULT_TERMINAL_LIMITS,
  type PlatformConfig,
  type TerminalLimits,
} from '../../src/index.js';

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
  /** DOCKER_CERTS_DIR: the local engine's certs.d, where the cluster registry's CA is trusted for pushes. */
  dockerCertsDir: string;
  accounts: AccountsConfig;
  /** Base URLs of the DNS providers' APIs: the vendors' own unless overridden (tests, compatible endpoints). */
  dnsApiUrls: { cloudflare?: string | undefined; digitalocean?: string | undefined; hetzner?: string | undefined };
  proxy: ProxyConfig;
  platform: PlatformConfig;
  /** The URL users open the platform at (`PUBLIC_URL`): browsers may open terminals from this origin only. */
  publicUrl: string | null;
  terminals: TerminalLimits;
  /** CLOCK_OFFSET_MS: the platform's clock runs this far ahead (or behind) of the host's; tests of schedules only. */
  clockOffsetMs: number;
}

/** Users' sessions, password-reset mail and the authentication endpoints' budgets. */
export interface AccountsConfig {
  /** SMTP_URL: `smtp://user:pass@host:587` (or smtps://); without it, reset mails are not sent. */
  smtpUrl: string | null;
  mailFrom: string;
  /** Where reset links point (APP_URL); defaults to this API's own address. */
  appUrl: string | null;
  sessionTtlMs: number;
  /** Requests per minute per address: signup, signin, password reset (AUTH_RATE_LIMITS=signup=5,signin=10,password-reset=3). */
  authLimits: { signup: number; signin: number; 'password-reset': number };
}

function accountsConfig(env: NodeJS.ProcessEnv): AccountsConfig {
  const smtpUrl = env.SMTP_URL?.trim() || null;
  if (smtpUrl) {
    let url: URL;
    try {
      url = new URL(smtpUrl);
    } catch {
      // Not echoed: it may hold a password.
      throw new ConfigError('SMTP_URL must be a URL like smtp://user:password@mail.example.com:587');
    }
    if (url.protocol !== 'smtp:' && url.protocol !== 'smtps:') throw new ConfigError('SMTP_URL must be an smtp:// or smtps:// URL');
  }
  const appUrl = env.APP_URL?.trim().replace(/\/+$/, '') || null;
  if (appUrl && !/^https?:\/\/[^\s/]+/.test(appUrl)) throw new ConfigError(`APP_URL must be an http(s) URL, got ${JSON.stringify(appUrl)}`);
  const authLimits = { signup: 5, signin: 10, 'password-reset': 3 };
  for (const part of (env.AUTH_RATE_LIMITS ?? '').split(',').filter((p) => p.trim())) {
    const match = /^\s*(signup|signin|password-reset)\s*=\s*(\d+)\s*$/.exec(part);
    if (!match || Number(match[2]) < 1)
      throw new ConfigError(
        `AUTH_RATE_LIMITS must look like signup=5,signin=10,password-reset=3, got ${JSON.stringify(env.AUTH_RATE_LIMITS)}`,
      );
    authLimits[match[1] as keyof typeof authLimits] = Number(match[2]);
  }
  return {
    smtpUrl,
    mailFrom: env.MAIL_FROM?.trim() || 'Slipway <slipway@localhost>',
    appUrl,
    sessionTtlMs: int(env, 'SESSION_TTL_SECONDS', 7 * 24 * 3600, 1, 365 * 24 * 3600) * 1000,
    authLimits,
  };
}

interface ProxyServing {
  httpPort: number;
  httpsPort: number;
  autoHttps: boolean;
  acmeEmail: string | null;
  /** The traffic gate's responder inside Caddy, on 127.0.0.1 (see TrafficGate). */
  gatePort: number;
  healthIntervalMs: number;
  /** CIDR of the traffic slot network, or `auto`. */
  slotSubnet: string;
  /**
   * Caddy's routes directory (one empty file per hostname): PROXY_ROUTES_DIR, else `<DATA_DIR>/caddy-routes`.
   * Absolute; Caddy reads the same path (an operator's Caddy) or has it mounted (the platform's container).
   */
  routesDir: string;
  /**
   * Where Caddy writes its access log, read for the metrics' request counts: PROXY_ACCESS_LOG_DIR, else
   * `<DATA_DIR>/caddy-logs`. Caddy must be able to write it (an operator's Caddy: its user).
   */
  accessLogDir: string;
}

/** Which Caddy the platform keeps configured: its own container (the default), an operator's, or none. */
export type ProxyConfig =
  | { kind: 'none' }
  | ({ kind: 'external'; adminUrl: string } & ProxyServing)
  | ({ kind: 'container'; image: string; adminPort: number } & ProxyServing);

function proxyConfig(env: NodeJS.ProcessEnv, dataDir: string, instanceId: string): ProxyConfig {
  const mode = (env.PROXY || 'caddy').toLowerCase();
  if (mode === 'none') return { kind: 'none' };
  if (mode !== 'caddy') throw new ConfigError(`PROXY must be caddy or none, got ${JSON.stringify(env.PROXY)}`);
  const autoHttps = boolean(env, 'PROXY_AUTO_HTTPS', true);
  const acmeEmail = env.ACME_EMAIL?.trim() || null;
  if (acmeEmail && !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(acmeEmail))
    throw new ConfigError(`ACME_EMAIL is not an email address: ${JSON.stringify(acmeEmail)}`);
  const serving: ProxyServing = {
    httpPort: int(env, 'PROXY_HTTP_PORT', 80, 1, 65535),
    httpsPort: int(env, 'PROXY_HTTPS_PORT', 443, 1, 65535),
    autoHttps,
    acmeEmail,
    gatePort: int(env, 'PROXY_GATE_PORT', 2080, 1, 65535),
    healthIntervalMs: int(env, 'PROXY_HEALTH_INTERVAL_MS', 500, 100, 10_000),
    slotSubnet: slotSubnet(env.SLOT_SUBNET),
    routesDir: path.resolve(
      env.PROXY_ROUTES_DIR ||
        (dataDir === ':memory:' ? path.join(tmpdir(), `slipway-caddy-routes-${instanceId}`) : path.join(dataDir, 'caddy-routes')),
    ),
    accessLogDir: path.resolve(
      env.PROXY_ACCESS_LOG_DIR ||
        (dataDir === ':memory:' ? path.join(tmpdir(), `slipway-caddy-logs-${instanceId}`) : path.join(dataDir, 'caddy-logs')),
    ),
  };
  if (env.CADDY_ADMIN_URL) {
    let url: URL;
    try {
      url = new URL(env.CADDY_ADMIN_URL);
    } catch {
      throw new ConfigError(`CADDY_ADMIN_URL must be a URL like http://127.0.0.1:2019, got ${JSON.stringify(env.CADDY_ADMIN_URL)}`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ConfigError('CADDY_ADMIN_URL must be an http:// or https:// URL');
    return { kind: 'external', adminUrl: url.toString().replace(/\/+$/, ''), ...serving };
  }
  return { kind: 'container', image: env.PROXY_IMAGE || 'caddy:2', adminPort: int(env, 'PROXY_ADMIN_PORT', 2019, 1, 65535), ...serving };
}

function slotSubnet(value: string | undefined): string {
  if (!value || value === 'auto') return 'auto';
  const match = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/.exec(value);
  if (!match || match.slice(1, 5).some((n) => Number(n) > 255) || Number(match[5]) < 16 || Number(match[5]) > 28) {
    throw new ConfigError(`SLOT_SUBNET must be an IPv4 CIDR from /16 to /28 (or auto), got ${JSON.stringify(value)}`);
  }
  return value;
}

/** Public URLs name the proxy's port only when it is not the scheme's own. */
function publicPort(proxy: ProxyConfig): number | null {
  if (proxy.kind === 'none') return null;
  const port = proxy.autoHttps ? proxy.httpsPort : proxy.httpPort;
  return port === (proxy.autoHttps ? 443 : 80) ? null : port;
}

function publicUrl(raw: string | undefined): string | null {
  if (!raw?.trim()) return null;
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new ConfigError(`PUBLIC_URL must be a URL like https://slipway.example.com, got ${JSON.stringify(raw)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new ConfigError(`PUBLIC_URL must be http or https, got ${JSON.stringify(raw)}`);
  return url.origin;
}

function boolean(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return fallback;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new ConfigError(`${name} must be true or false, got ${JSON.stringify(env[name])}`);
}

export class ConfigError extends Error {}

function int(env: NodeJS.ProcessEnv, name: string, fallback: number, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max)
    throw new ConfigError(`${name} must be an integer from ${min} to ${max}, got ${JSON.stringify(raw)}`);
  return value;
}

function portRange(raw: string | undefined): { from: number; to: number } {
  if (!raw) return DEFAULT_PLATFORM_CONFIG.hostPortRange;
  const match = /^(\d+)-(\d+)$/.exec(raw.trim());
  const from = Number(match?.[1]);
  const to = Number(match?.[2]);
  if (!match || from < 1 || to > 65535 || from > to)
    throw new ConfigError(`HOST_PORT_RANGE must look like 20000-29999, got ${JSON.stringify(raw)}`);
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
    rollbackKeep: int(env, 'ROLLBACK_KEEP', defaults.rollbackKeep, 1, 100),
    analyzerImages: {
      node: env.ANALYZER_NODE_IMAGE || images.node,
      python: env.ANALYZER_PYTHON_IMAGE || images.python,
      go: env.ANALYZER_GO_IMAGE || images.go,
      goRuntime: env.ANALYZER_GO_RUNTIME_IMAGE || images.goRuntime,
      static: env.ANALYZER_STATIC_IMAGE || images.static,
    },
  };
}

function databasesConfig(env: NodeJS.ProcessEnv): PlatformConfig['databases'] {
  const defaults = DEFAULT_PLATFORM_CONFIG.databases;
  // DATABASE_IMAGE_POSTGRES, DATABASE_IMAGE_TIMESCALE, ... override each engine's public default.
  const images = Object.fromEntries(
    Object.entries(defaults.images).map(([engine, image]) => [engine, env[`DATABASE_IMAGE_${engine.toUpperCase()}`] || image]),
  ) as PlatformConfig['databases']['images'];
  return {
    images,
    queryTimeoutMs: int(env, 'DATABASE_QUERY_TIMEOUT_MS', defaults.queryTimeoutMs, 100, 600_000),
    queryRowCap: int(env, 'DATABASE_QUERY_ROW_CAP', defaults.queryRowCap, 1, 100_000),
    importConnectTimeoutMs: int(env, 'DATABASE_IMPORT_CONNECT_TIMEOUT_MS', defaults.importConnectTimeoutMs, 500, 600_000),
    importTimeoutMs: int(env, 'DATABASE_IMPORT_TIMEOUT_MS', defaults.importTimeoutMs, 1_000, 7 * 24 * 3_600_000),
  };
}

function backupsConfig(env: NodeJS.ProcessEnv, dataDir: string): PlatformConfig['backups'] {
  const defaults = DEFAULT_PLATFORM_CONFIG.backups;
  return {
    dir: env.BACKUPS_DIR || path.join(dataDir === ':memory:' ? tmpdir() : dataDir, 'backups'),
    concurrency: int(env, 'BACKUP_CONCURRENCY', defaults.concurrency, 1, 16),
    schedulerIntervalMs: int(env, 'BACKUP_SCHEDULER_INTERVAL_MS', defaults.schedulerIntervalMs, 1_000, 86_400_000),
    pitrIntervalMs: int(env, 'PITR_INTERVAL_MS', defaults.pitrIntervalMs, 500, 3_600_000),
    objectStoreTimeoutMs: int(env, 'OBJECT_STORE_TIMEOUT_MS', defaults.objectStoreTimeoutMs, 100, 120_000),
    scheduledDrills: boolean(env, 'SCHEDULED_DRILLS', defaults.scheduledDrills),
  };
}

function clusterConfig(env: NodeJS.ProcessEnv): PlatformConfig['cluster'] {
  const defaults = DEFAULT_PLATFORM_CONFIG.cluster;
  const advertise = env.SWARM_ADVERTISE_ADDR?.trim() || defaultRouteAddress() || detectPublicIp() || defaults.advertiseAddress;
  if (!/^[0-9.]+$|^[0-9a-fA-F:]+$/.test(advertise) || (advertise.includes('.') && advertise.split('.').some((n) => Number(n) > 255)))
    throw new ConfigError(`SWARM_ADVERTISE_ADDR must be an IP address, got ${JSON.stringify(advertise)}`);
  const joinUrl = env.CLUSTER_JOIN_URL?.trim().replace(/\/+$/, '') || null;
  if (joinUrl && !/^https?:\/\/[A-Za-z0-9.:[\]-]+$/.test(joinUrl))
    throw new ConfigError(
      `CLUSTER_JOIN_URL must be an http(s) URL without a path, like http://10.0.0.2:3000, got ${JSON.stringify(joinUrl)}`,
    );
  return {
    advertiseAddress: advertise,
    joinUrl,
    joinTokenTtlMs: int(env, 'JOIN_TOKEN_TTL_SECONDS', defaults.joinTokenTtlMs / 1000, 10, 86_400) * 1000,
    engineTlsPort: int(env, 'NODE_ENGINE_PORT', defaults.engineTlsPort, 1, 65535),
    monitorIntervalMs: int(env, 'CLUSTER_MONITOR_INTERVAL_MS', defaults.monitorIntervalMs, 200, 600_000),
    // The proxy balances one hostname over MAX_ROUTE_UPSTREAMS upstreams at most.
    maxReplicas: int(env, 'SERVICE_MAX_REPLICAS', defaults.maxReplicas, 1, MAX_ROUTE_UPSTREAMS),
    registry: {
      image: env.REGISTRY_IMAGE || defaults.registry.image,
      port: int(env, 'REGISTRY_PORT', defaults.registry.port, 1, 65535),
      checkTimeoutMs: int(env, 'REGISTRY_CHECK_TIMEOUT_MS', defaults.registry.checkTimeoutMs, 100, 120_000),
    },
  };
}

function controlPlaneConfig(env: NodeJS.ProcessEnv): PlatformConfig['controlPlane'] {
  const defaults = DEFAULT_PLATFORM_CONFIG.controlPlane;
  const heartbeatMs = int(env, 'CONTROL_PLANE_HEARTBEAT_MS', defaults.heartbeatMs, 100, 60_000);
  const deadAfterMs = int(env, 'CONTROL_PLANE_DEAD_AFTER_MS', defaults.deadAfterMs, 500, 3_600_000);
  if (deadAfterMs < 3 * heartbeatMs)
    throw new ConfigError(
      `CONTROL_PLANE_DEAD_AFTER_MS (${deadAfterMs}) must be at least three heartbeats (CONTROL_PLANE_HEARTBEAT_MS ${heartbeatMs})`,
    );
  return { heartbeatMs, deadAfterMs };
}

/** The source address of the host's default route (from /proc/net/route): what other servers reach this one at. */
function defaultRouteAddress(): string | null {
  let table: string;
  try {
    table = readFileSync('/proc/net/route', 'utf8');
  } catch {
    return null;
  }
  const device = table
    .split('\n')
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .find((fields) => fields[1] === '00000000' && fields[7] === '00000000')?.[0];
  const address = device ? networkInterfaces()[device]?.find((a) => a.family === 'IPv4' && !a.internal)?.address : undefined;
  return address ?? null;
}

/** Push to deploy (docs/push-to-deploy.md): delivery limits, the git hosts' status API roots, the previews' database copy limits. */
function hooksConfig(env: NodeJS.ProcessEnv): PlatformConfig['hooks'] {
  const defaults = DEFAULT_PLATFORM_CONFIG.hooks;
  const apiUrl = (name: string) => {
    const raw = env[name]?.trim();
    if (!raw) return null;
    if (!/^https?:\/\/[^\s/]+/.test(raw)) throw new ConfigError(`${name} must be an http(s) URL, got ${JSON.stringify(raw)}`);
    return raw.replace(/\/+$/, '');
  };
  const ratio = int(env, 'PREVIEW_DISK_MAX_USED_PERCENT', defaults.previewDiskMaxUsedRatio * 100, 1, 100) / 100;
  return {
    publicUrl: publicUrl(env.PUBLIC_URL) ?? (env.APP_URL?.trim() ? publicUrl(env.APP_URL) : null),
    maxBodyBytes: int(env, 'WEBHOOK_BODY_LIMIT_BYTES', defaults.maxBodyBytes, 1024, 64 * 1024 * 1024),
    perAddressPerMinute: int(env, 'WEBHOOK_RATE_LIMIT_PER_MINUTE', defaults.perAddressPerMinute, 1, 1_000_000),
    tickMs: int(env, 'HOOKS_TICK_MS', defaults.tickMs, 100, 60_000),
    apiUrls: {
      github: apiUrl('GITHUB_API_URL'),
      gitlab: apiUrl('GITLAB_URL'),
      gitea: apiUrl('GITEA_URL'),
      forgejo: apiUrl('FORGEJO_URL'),
      bitbucket: apiUrl('BITBUCKET_API_URL'),
    },
    previewCopyMaxBytes: int(env, 'PREVIEW_DB_COPY_MAX_BYTES', defaults.previewCopyMaxBytes, 1, Number.MAX_SAFE_INTEGER),
    previewDiskMaxUsedRatio: ratio,
  };
}

function eventsConfig(env: NodeJS.ProcessEnv, dataDir: string): PlatformConfig['events'] {
  const defaults = DEFAULT_EVENTS_CONFIG;
  const telegram = (env.TELEGRAM_API_URL?.trim() || defaults.telegramApiUrl).replace(/\/+$/, '');
  if (!/^https?:\/\/[^\s/]+/.test(telegram))
    throw new ConfigError(`TELEGRAM_API_URL must be an http(s) URL, got ${JSON.stringify(telegram)}`);
  return {
    retryBaseMs: int(env, 'NOTIFY_RETRY_BASE_MS', defaults.retryBaseMs, 10, 24 * 3_600_000),
    retryTries: int(env, 'NOTIFY_RETRY_TRIES', defaults.retryTries, 1, 30),
    deliveryTimeoutMs: int(env, 'NOTIFY_TIMEOUT_MS', defaults.deliveryTimeoutMs, 100, 60_000),
    deliveryConcurrency: int(env, 'NOTIFY_CONCURRENCY', defaults.deliveryConcurrency, 1, 256),
    allowPrivateTargets: boolean(env, 'NOTIFY_ALLOW_PRIVATE_TARGETS', defaults.allowPrivateTargets),
    telegramApiUrl: telegram,
    retentionDays: int(env, 'EVENT_RETENTION_DAYS', defaults.retentionDays, 1, 365),
    auditRetentionDays: int(env, 'AUDIT_RETENTION_DAYS', defaults.auditRetentionDays, 1, 3650),
    crashLoopExits: int(env, 'CRASH_LOOP_EXITS', defaults.crashLoopExits, 1, 1000),
    crashLoopWindowMs: int(env, 'CRASH_LOOP_WINDOW_MS', defaults.crashLoopWindowMs, 1_000, 7 * 86_400_000),
    crashLoopReminderMs: defaults.crashLoopReminderMs,
    monitorIntervalMs: int(env, 'MONITOR_INTERVAL_MS', defaults.monitorIntervalMs, 0, 3_600_000),
    healthFailures: int(env, 'HEALTH_FAILURES', defaults.healthFailures, 1, 100),
    diskPath: env.DISK_WATCH_PATH || (dataDir === ':memory:' ? tmpdir() : dataDir),
    diskThresholdPercent: int(env, 'DISK_THRESHOLD_PERCENT', defaults.diskThresholdPercent, 1, 100),
  };
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): AppConfig {
  const dataDir = env.DATA_DIR || './data';
  const key = secretKey(env, dataDir);
  // Derived from the install's own key: stable across restarts, different for every install.
  const instanceId = createHash('sha256').update(`instance:${key}`).digest('hex').slice(0, 12);
  const proxy = proxyConfig(env, dataDir, instanceId);
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
    dockerCertsDir: env.DOCKER_CERTS_DIR || '/etc/docker/certs.d',
    accounts: accountsConfig(env),
    dnsApiUrls: {
      cloudflare: env.CLOUDFLARE_API_URL || undefined,
      digitalocean: env.DIGITALOCEAN_API_URL || undefined,
      hetzner: env.HETZNER_DNS_API_URL || undefined,
    },
    proxy,
    publicUrl: publicUrl(env.PUBLIC_URL),
    clockOffsetMs: int(env, 'CLOCK_OFFSET_MS', 0, -10 * 366 * 86_400_000, 10 * 366 * 86_400_000),
    terminals: {
      idleTimeoutMs: int(env, 'TERMINAL_IDLE_TIMEOUT_MS', DEFAULT_TERMINAL_LIMITS.idleTimeoutMs, 1000, 24 * 3_600_000),
      maxPerKey: int(env, 'TERMINAL_MAX_PER_KEY', DEFAULT_TERMINAL_LIMITS.maxPerKey, 1, 1000),
      ticketTtlMs: DEFAULT_TERMINAL_LIMITS.ticketTtlMs,
    },
    platform: {
      hostPortRange: portRange(env.HOST_PORT_RANGE),
      rootDomain: env.ROOT_DOMAIN?.toLowerCase() || null,
      publicIp: env.PUBLIC_IP || detectPublicIp() || DEFAULT_PLATFORM_CONFIG.publicIp,
      // Behind PROXY=none too: another TLS terminator may be why.
      publicScheme: boolean(env, 'PROXY_AUTO_HTTPS', true) ? 'https' : 'http',
      publicPort: publicPort(proxy),
      resourcePrefix: env.RESOURCE_PREFIX || DEFAULT_PLATFORM_CONFIG.resourcePrefix,
      instanceId,
      streamPingMs: int(env, 'STREAM_PING_MS', DEFAULT_PLATFORM_CONFIG.streamPingMs, 100),
      runtimeLogTail: int(env, 'RUNTIME_LOG_TAIL', DEFAULT_PLATFORM_CONFIG.runtimeLogTail, 0, 10_000),
      deploy: deployConfig(env, dataDir),
      databases: databasesConfig(env),
      storage: { image: env.STORAGE_IMAGE || DEFAULT_PLATFORM_CONFIG.storage.image },
      metrics: {
        intervalMs: metricsInterval(env),
        retentionHours: int(env, 'METRICS_RETENTION_HOURS', DEFAULT_PLATFORM_CONFIG.metrics.retentionHours, 1, 24 * 90),
      },
      ai: { timeoutMs: int(env, 'AI_TIMEOUT_MS', DEFAULT_PLATFORM_CONFIG.ai.timeoutMs, 100, 600_000) },
      backups: backupsConfig(env, dataDir),
      cluster: clusterConfig(env),
      controlPlane: controlPlaneConfig(env),
      hooks: hooksConfig(env),
      events: eventsConfig(env, dataDir),
      licensePublicKey: licensePublicKey(env.LICENSE_PUBLIC_KEY),
      routing: {
        reconcileMs: int(env, 'PROXY_RECONCILE_MS', DEFAULT_PLATFORM_CONFIG.routing.reconcileMs, 100, 60_000),
        drainTimeoutMs: int(env, 'DRAIN_TIMEOUT_MS', DEFAULT_PLATFORM_CONFIG.routing.drainTimeoutMs, 0, 600_000),
        proxyTimeoutMs: DEFAULT_PLATFORM_CONFIG.routing.proxyTimeoutMs,
        slotSubnet: proxy.kind === 'none' ? 'auto' : proxy.slotSubnet,
        healthIntervalMs: proxy.kind === 'none' ? DEFAULT_PLATFORM_CONFIG.routing.healthIntervalMs : proxy.healthIntervalMs,
        gatePort: proxy.kind === 'none' ? DEFAULT_PLATFORM_CONFIG.routing.gatePort : proxy.gatePort,
        gateImage: env.GATE_IMAGE || DEFAULT_PLATFORM_CONFIG.routing.gateImage,
      },
    },
  };
}

/** 0 turns sampling off; otherwise at least a second (the engine reads cgroups for every container). */
function metricsInterval(env: NodeJS.ProcessEnv): number {
  const value = int(env, 'METRICS_INTERVAL_MS', DEFAULT_PLATFORM_CONFIG.metrics.intervalMs, 0, 3_600_000);
  return value === 0 ? 0 : Math.max(value, 1_000);
}

/** An Ed25519 public key as base64 SPKI DER (`openssl pkey -pubout -outform DER | base64`); checked at start, not at the first activation. */
function licensePublicKey(value: string | undefined): string {
  if (!value) return DEFAULT_PLATFORM_CONFIG.licensePublicKey;
  try {
    const key = createPublicKey({ key: Buffer.from(value, 'base64'), format: 'der', type: 'spki' });
    if (key.asymmetricKeyType === 'ed25519') return value;
  } catch {
    // Reported below.
  }
  throw new ConfigError('LICENSE_PUBLIC_KEY must be an Ed25519 public key, base64 of its SPKI DER encoding');
}
