import { DATABASE_ENGINES, ENGINE_SPECS, type DatabaseEngine } from '../domain/database-engines.js';
import { STORAGE_SERVER } from '../domain/storage-server.js';

/** Base images per language; the platform configuration may pin others (a mirror, a digest). */
export interface AnalyzerImages {
  node: string;
  python: string;
  go: string;
  goRuntime: string;
  static: string;
}

export const DEFAULT_ANALYZER_IMAGES: Readonly<AnalyzerImages> = Object.freeze({
  node: 'node:22-bookworm-slim',
  python: 'python:3.12-slim-bookworm',
  go: 'golang:1.23-bookworm',
  goRuntime: 'debian:bookworm-slim',
  static: 'caddy:2',
});

/** How deployments are run. */
export interface DeployConfig {
  /** Deployments built at once across the platform; 0 pauses the runner (queued ones wait). */
  buildConcurrency: number;
  /** Scratch space for clones; each deployment's folder is removed when it ends. */
  buildsDir: string;
  /** `owner/repo` is cloned from `<gitBaseUrl>/owner/repo.git`. */
  gitBaseUrl: string;
  /** Path a web container must answer (any HTTP status) before it gets traffic. */
  healthPath: string;
  healthTimeoutMs: number;
  /** A worker counts as started when it is still running after this long. */
  workerSettleMs: number;
  /** SIGTERM to SIGKILL, for containers being replaced. */
  stopGraceSeconds: number;
  /** Base images the analyzer builds from; production pulls them when missing. */
  analyzerImages: AnalyzerImages;
  /** Images of this many of a service's newest live deployments (the live one included) are kept for rollbacks. */
  rollbackKeep: number;
}

/** How the reverse proxy is kept in step with the database. */
export interface RoutingConfig {
  /** How often the proxy is asked whether it still serves the table (a restarted one is empty). */
  reconcileMs: number;
  /** At most this long, after a cutover, for requests in flight to the old container to finish. */
  drainTimeoutMs: number;
  /** Timeout of one call to the proxy's admin API. */
  proxyTimeoutMs: number;
  /** CIDR of the traffic slot network, or `auto` (see TrafficSlots). */
  slotSubnet: string;
  /** How often the proxy checks each slot's gate: a cutover waits about two of these per switch. */
  healthIntervalMs: number;
  /** The gate responder: its port on 127.0.0.1 and its image (a static HTTP server). */
  gatePort: number;
  gateImage: string;
}

/** Database services: what they run and how far their administration may go. */
export interface DatabasesConfig {
  /** The image each engine runs; production pulls it when missing. */
  images: Record<DatabaseEngine, string>;
  /** Statement timeout of POST query (and the bound of every other admin call). */
  queryTimeoutMs: number;
  /** Rows of a POST query beyond this are not read: the result says `truncated`. */
  queryRowCap: number;
  /** An import's source that does not answer within this long fails the import. */
  importConnectTimeoutMs: number;
  /** A whole import (dump and restore, or every key) gives up after this long. */
  importTimeoutMs: number;
}

/** Database backups: where files go, and how often the scheduler looks. */
export interface BackupsConfig {
  /** Backup files with storage `disk`: `<dir>/<serviceId>/<backupId>.<ext>`. */
  dir: string;
  /** Backups run at once across the platform. */
  concurrency: number;
  /** How often automatic backups and their retention are checked. */
  schedulerIntervalMs: number;
  /** PITR_INTERVAL_MS (default 10 s): how often point-in-time recovery ships WAL spools and looks for base backups due. */
  pitrIntervalMs: number;
  /** Timeout of one object-store check (HeadBucket). */
  objectStoreTimeoutMs: number;
  /**
   * SCHEDULED_DRILLS (default true): whether configurations' daily/weekly drills are queued. False, only a drill
   * asked for (`POST .../drill`) runs: for installs (and test files) that must not start scratch databases unasked.
   */
  scheduledDrills: boolean;
}

/** The cluster (issue 31): how servers join and reach the manager, and the registry it runs. */
export interface ClusterConfig {
  /** SWARM_ADVERTISE_ADDR: the address other servers reach the manager at (default: the address of the host's default route). */
  advertiseAddress: string;
  /** CLUSTER_JOIN_URL: the platform's URL as a joining server reaches it; null: `http://<advertiseAddress>:<the API's port>`. */
  joinUrl: string | null;
  /** How long a join command's token is valid. */
  joinTokenTtlMs: number;
  /** The port of each node engine's API over mutual TLS. */
  engineTlsPort: number;
  /** How often the manager is asked about the nodes (their state, the events of a node going down). */
  monitorIntervalMs: number;
  /** SERVICE_MAX_REPLICAS: the most replicas a service may ask for. */
  maxReplicas: number;
  /** The platform's registry: its image (`registry:2`) and port on the manager's address; how long a registry's check may take. */
  registry: { image: string; port: number; checkTimeoutMs: number };
}

/** Platform processes sharing one database: how often each says it is alive, and when it counts as gone. */
export interface ControlPlaneConfig {
  heartbeatMs: number;
  deadAfterMs: number;
}
/** Push to deploy, polling and previews (docs/push-to-deploy.md). */
export interface HooksConfig {
  /** Where the platform's API is reached from outside (PUBLIC_URL): webhook URLs and commit statuses' links; null: the API's own address. */
  publicUrl: string | null;
  /** A delivery's body past this is refused with 413 before it is read further. */
  maxBodyBytes: number;
  /** Deliveries per minute from one address to the public webhook endpoint. */
  perAddressPerMinute: number;
  /** How often polling and commit statuses look for work. */
  tickMs: number;
  /**
   * The git hosts' API roots for commit statuses; unset: github.com's API for github.com repositories
   * (`<host>/api/v3` for another host), and the repository's own host for GitLab, Gitea, Forgejo.
   */
  apiUrls: { github: string | null; gitlab: string | null; gitea: string | null; forgejo: string | null; bitbucket: string | null };
  /** A preview's database copy larger than this is refused. */
  previewCopyMaxBytes: number;
  /** A copy that would take the disk past this share of its size is refused. */
  previewDiskMaxUsedRatio: number;
}

/** Events, their notifications, the monitors that raise them, and the audit log (docs/events.md). */
export interface EventsConfig {
  /** The first wait before a failed delivery is tried again; each next wait doubles (NOTIFY_RETRY_BASE_MS). */
  retryBaseMs: number;
  /** Attempts of one delivery, the first included (NOTIFY_RETRY_TRIES). */
  retryTries: number;
  /** One attempt, connection to answer, at most this long. */
  deliveryTimeoutMs: number;
  /** Deliveries sent at once. */
  deliveryConcurrency: number;
  /** Loopback, private and link-local targets are refused unless this is set (NOTIFY_ALLOW_PRIVATE_TARGETS). */
  allowPrivateTargets: boolean;
  /** The Telegram Bot API's base URL (TELEGRAM_API_URL): a self-hosted Bot API server, or a test's. */
  telegramApiUrl: string;
  /** How long events stay in the outbox for the stream to resume from (EVENT_RETENTION_DAYS). */
  retentionDays: number;
  /** How long the audit log keeps a record (AUDIT_RETENTION_DAYS). */
  auditRetentionDays: number;
  /** A live container exiting this many times within the window is a crash loop (CRASH_LOOP_EXITS, CRASH_LOOP_WINDOW_MS). */
  crashLoopExits: number;
  crashLoopWindowMs: number;
  /** At most one reminder of a crash loop this often. */
  crashLoopReminderMs: number;
  /** How often live services' health, the host's disk and databases are looked at (MONITOR_INTERVAL_MS; 0: off). */
  monitorIntervalMs: number;
  /** Failed health checks in a row before a live service is reported failing. */
  healthFailures: number;
  /** The disk of this path is watched (the data directory). */
  diskPath: string;
  /** Percent used above which the disk is reported (and back below it minus 5, reported fine again). */
  diskThresholdPercent: number;
}

export const DEFAULT_EVENTS_CONFIG: EventsConfig = {
  retryBaseMs: 60_000,
  retryTries: 7,
  deliveryTimeoutMs: 10_000,
  deliveryConcurrency: 32,
  allowPrivateTargets: false,
  telegramApiUrl: 'https://api.telegram.org',
  retentionDays: 7,
  auditRetentionDays: 90,
  crashLoopExits: 3,
  crashLoopWindowMs: 300_000,
  crashLoopReminderMs: 30 * 60_000,
  monitorIntervalMs: 30_000,
  healthFailures: 3,
  diskPath: './data',
  diskThresholdPercent: 90,
};

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
  /** Port in public URLs when the proxy serves on a port other than the scheme's own. */
  publicPort: number | null;
  /** Resource names (containers, images, volumes) start with it. */
  resourcePrefix: string;
  /** Tells this installation's Docker resources from another's on the same engine. */
  instanceId: string;
  /** Keep-alive interval of the deployment log stream. */
  streamPingMs: number;
  /** Lines in the runtime log stream's snapshot. */
  runtimeLogTail: number;
  deploy: DeployConfig;
  routing: RoutingConfig;
  databases: DatabasesConfig;
  /** Storage instances: the S3 server image they run (Versity S3 Gateway's conventions); production pulls it when missing. */
  storage: { image: string };
  /** AI explanations: one call to the provider, at most this long. */
  ai: { timeoutMs: number };
  /** Service metrics: sampling interval (0: off) and how long the per-minute history is kept. */
  metrics: { intervalMs: number; retentionHours: number };
  backups: BackupsConfig;
  cluster: ClusterConfig;
  controlPlane: ControlPlaneConfig;
  hooks: HooksConfig;
  events: EventsConfig;
  /** Ed25519 public key (base64 SPKI DER) license keys are verified against. */
  licensePublicKey: string;
}

/** The release's license-signing public key; LICENSE_PUBLIC_KEY replaces it (tests sign with their own pair). */
export const BUILT_IN_LICENSE_PUBLIC_KEY = 'MCowBQYDK2VwAyEArmeyV08ndTNzJJknsl9M+lZJ5b77YgjT7pQTBUmIqnA=';

export const DEFAULT_PLATFORM_CONFIG: PlatformConfig = {
  licensePublicKey: BUILT_IN_LICENSE_PUBLIC_KEY,
  hostPortRange: { from: 20000, to: 29999 },
  rootDomain: null,
  publicIp: '127.0.0.1',
  publicScheme: 'https',
  publicPort: null,
  resourcePrefix: 'slipway',
  instanceId: 'default',
  streamPingMs: 15_000,
  runtimeLogTail: 200,
  deploy: {
    buildConcurrency: 2,
    buildsDir: './data/builds',
    gitBaseUrl: 'https://github.com',
    healthPath: '/',
    healthTimeoutMs: 60_000,
    workerSettleMs: 2_000,
    stopGraceSeconds: 10,
    analyzerImages: { ...DEFAULT_ANALYZER_IMAGES },
    rollbackKeep: 5,
  },
  routing: {
    reconcileMs: 2_000,
    drainTimeoutMs: 30_000,
    proxyTimeoutMs: 10_000,
    slotSubnet: 'auto',
    healthIntervalMs: 500,
    gatePort: 2080,
    gateImage: 'busybox:1',
  },
  databases: {
    images: Object.fromEntries(DATABASE_ENGINES.map((engine) => [engine, ENGINE_SPECS[engine].image])) as Record<DatabaseEngine, string>,
    queryTimeoutMs: 30_000,
    queryRowCap: 1_000,
    importConnectTimeoutMs: 10_000,
    importTimeoutMs: 6 * 3_600_000,
  },
  storage: { image: STORAGE_SERVER.image },
  ai: { timeoutMs: 60_000 },
  metrics: { intervalMs: 10_000, retentionHours: 24 },
  backups: {
    dir: './data/backups',
    concurrency: 2,
    schedulerIntervalMs: 60_000,
    pitrIntervalMs: 10_000,
    objectStoreTimeoutMs: 5_000,
    scheduledDrills: true,
  },
  cluster: {
    advertiseAddress: '127.0.0.1',
    joinUrl: null,
    joinTokenTtlMs: 15 * 60_000,
    engineTlsPort: 2376,
    monitorIntervalMs: 5_000,
    maxReplicas: 10,
    registry: { image: 'registry:2', port: 5000, checkTimeoutMs: 10_000 },
  },
  controlPlane: { heartbeatMs: 2_000, deadAfterMs: 15_000 },
  hooks: {
    publicUrl: null,
    maxBodyBytes: 5 * 1024 * 1024,
    perAddressPerMinute: 120,
    tickMs: 2_000,
    apiUrls: { github: null, gitlab: null, gitea: null, forgejo: null, bitbucket: null },
    previewCopyMaxBytes: 5 * 1024 ** 3,
    previewDiskMaxUsedRatio: 0.9,
  },
  events: DEFAULT_EVENTS_CONFIG,
};
