import { createServer, ServerResponse, type IncomingMessage, type Server } from 'node:http';
import path from 'node:path';
import type { TLSSocket } from 'node:tls';
import { SmtpMailer } from '../mail/smtp.mailer.js';
import type { AddressInfo } from 'node:net';
import Docker from 'dockerode';
import { createServices, type RuntimeDeps, type Services } from '../../src/index.js';
import { DockerodeContainerEngine } from '../docker/dockerode.container-engine.js';
import { CloudflareDnsProvider } from '../dns/cloudflare.dns-provider.js';
import { DigitalOceanDnsProvider } from '../dns/digitalocean.dns-provider.js';
import { HetznerDnsProvider } from '../dns/hetzner.dns-provider.js';
import { AnthropicAdapter } from '../ai/anthropic-adapter.js';
import { OpenAiAdapter } from '../ai/openai-adapter.js';
import { GitCliSource } from '../git/git-cli.git-source.js';
import { NetHealthProbe } from '../net/net-health-probe.js';
import { IptablesTrafficGate } from '../net/iptables.traffic-gate.js';
import { TcpPortForwarder } from '../net/tcp-port-forwarder.js';
import { EngineDatabaseAdmin } from '../databases/by-engine.database-admin.js';
import { lazyDatabaseAdmin } from '../databases/lazy.database-admin.js';
import { DockerExecPostgresImporter } from '../docker/docker-exec.postgres-importer.js';
import { OpensslCertificateIssuer } from '../tls/openssl.certificate-issuer.js';
import { DockerExecDatabaseDump } from '../databases/docker-exec.database-dump.js';
import { DiskBackupFiles } from '../backups/disk.backup-files.js';
import { statfsDiskUsage } from '../backups/statfs.disk-usage.js';
import { DockerScratchDatabases } from '../databases/docker.scratch-databases.js';
import { S3ObjectStore } from '../object-store/s3.object-store.js';
import { S3StorageServer } from '../object-store/s3.storage-server.js';
import { openDatabase, type Database } from '../../src/persistence/database.js';
import { offsetClock, systemClock } from '../../src/platform/clock.port.js';
import type { ReverseProxy } from '../../src/routing/reverse-proxy.port.js';
import type { RuntimeLogSource } from '../../src/deployments/runtime-logs.port.js';
import type { PortProbe } from '../../src/projects/port-probe.port.js';
import type { DataImporter } from '../../src/imports/data-importer.port.js';
import { LogBus } from '../../src/platform/log-bus.js';
import { SecretBox } from '../../src/platform/secret-box.js';
import { appRouter } from '../../routers/app.router.js';
import type { Context } from '../../routers/trpc.js';
import { DockerRuntimeLogs } from '../docker/docker-runtime-logs.js';
import { DockerStatsSource } from '../docker/docker-stats-source.js';
import type { ContainerEngine } from '../../src/deployments/container-engine.port.js';
import { CaddyAccessLog } from '../proxy/caddy-access-log.js';
import { CaddyContainer } from '../proxy/caddy-container.js';
import { CaddyReverseProxy } from '../proxy/caddy.reverse-proxy.js';
import { enableListenerHandover } from '../proxy/listener-handover.js';
import { UnconfiguredReverseProxy } from '../proxy/unconfigured.reverse-proxy.js';
import type { AppConfig } from './config.js';
import { answerParserRejections } from './error-response.js';
import { createKoaApp } from './koa-app.js';
import { NetPortProbe } from '../net/net-port-probe.js';
import { createRateLimiter } from './rate-limiter.js';
import { SseBridge } from './sse-bridge.js';
import { DockerodeTerminalEngine } from '../docker/dockerode.terminal-engine.js';
import { TerminalSockets } from './terminal-socket.js';
import { McpEndpoint } from './mcp-endpoint.js';
import type { TerminalEngine } from '../../src/terminals/terminal-engine.port.js';

export interface Overrides {
  proxy?: ReverseProxy;
  runtimeLogs?: RuntimeLogSource;
  portProbe?: PortProbe;
  runtime?: RuntimeDeps;
  terminalEngine?: TerminalEngine;
  backups?: NonNullable<Parameters<typeof createServices>[1]>['backups'];
}

export interface RunningServer {
  server: Server;
  url: string;
  services: Services;
  database: Database;
  /** The token of the key made at the first start (no BOOTSTRAP_API_KEY, empty database): to be shown once. */
  initialApiKey: string | null;
  close(): Promise<void>;
}

export function log(message: string, extra: Record<string, unknown> = {}): void {
  process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), msg: message, ...extra })}\n`);
}

/** One adapter per engine family; PostgreSQL's serves TimescaleDB too. */
export function databaseAdmin(): EngineDatabaseAdmin {
  const postgres = lazyDatabaseAdmin(async () => new (await import('../databases/postgres.database-admin.js')).PostgresDatabaseAdmin());
  return new EngineDatabaseAdmin({
    postgres,
    timescale: postgres,
    mysql: lazyDatabaseAdmin(async () => new (await import('../databases/mysql.database-admin.js')).MysqlDatabaseAdmin()),
    redis: lazyDatabaseAdmin(async () => new (await import('../databases/redis.database-admin.js')).RedisDatabaseAdmin()),
    mongodb: lazyDatabaseAdmin(async () => new (await import('../databases/mongodb.database-admin.js')).MongoDatabaseAdmin()),
    clickhouse: lazyDatabaseAdmin(async () => new (await import('../databases/clickhouse.database-admin.js')).ClickHouseDatabaseAdmin()),
  });
}

/** PostgreSQL imports run in the service's container; Redis imports from here (the Redis adapter loads on first use). */
function dataImporter(docker: Docker): DataImporter {
  const postgres = new DockerExecPostgresImporter(docker);
  return {
    importPostgres: (source, target, work) => postgres.importPostgres(source, target, work),
    importRedis: async (source, target, work) =>
      new (await import('../databases/redis-url.data-importer.js')).RedisUrlImporter().importRedis(source, target, work),
  };
}

/** The composition root: the one place that knows every adapter. */
export async function startServer(config: AppConfig, overrides: Overrides = {}): Promise<RunningServer> {
  const database = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  if (config.proxy.kind !== 'none' && !overrides.proxy) await enableListenerHandover(log);
  const docker = new Docker({ socketPath: config.dockerSocket });
  const runtime: RuntimeDeps = overrides.runtime ?? {
    engine: new DockerodeContainerEngine(docker),
    git: new GitCliSource(),
    forwarder: new TcpPortForwarder(),
    health: new NetHealthProbe(),
    databaseAdmin: databaseAdmin(),
    storageServer: new S3StorageServer(),
    // Behind Caddy, cutovers move traffic through the packet filter instead of reloading it.
    ...(config.proxy.kind !== 'none' && !overrides.proxy
      ? { gate: new IptablesTrafficGate({ instanceId: config.platform.instanceId, gatePort: config.proxy.gatePort }) }
      : {}),
  };
  const mailer = config.accounts.smtpUrl ? new SmtpMailer(config.accounts.smtpUrl, config.accounts.mailFrom) : null;
  // Reset links point at APP_URL, else at this API's own address once it listens.
  let ownUrl = '';
  const services = createServices(
    {
      store: database.store,
      secrets: SecretBox.fromSecret(config.secretKey),
      proxy: overrides.proxy ?? reverseProxy(config, runtime.engine),
      runtimeLogs: overrides.runtimeLogs ?? new DockerRuntimeLogs(docker),
      portProbe: overrides.portProbe ?? new NetPortProbe(),
      clock: offsetClock(systemClock, config.clockOffsetMs),
      logBus: new LogBus(),
      config: config.platform,
    },
    {
      runtime,
      log,
      imports: { importer: dataImporter(docker) },
      tls: { issuer: new OpensslCertificateIssuer() },
      accounts: {
        mailer,
        mailerFor: (smtp) => new SmtpMailer(smtp.url, smtp.from),
        sessionTtlMs: config.accounts.sessionTtlMs,
        appUrl: () => config.accounts.appUrl ?? ownUrl,
      },
      backups: {
        files: new DiskBackupFiles(config.platform.backups.dir),
        objectStores: (store) => new S3ObjectStore(store),
        ...(overrides.runtime ? {} : { dump: new DockerExecDatabaseDump(docker) }),
        drills: {
          ...(overrides.runtime
            ? {}
            : { scratch: new DockerScratchDatabases(docker, config.platform.instanceId, config.platform.resourcePrefix) }),
          disk: statfsDiskUsage(config.platform.backups.dir),
        },
        ...overrides.backups,
      },
      dnsProviders: [
        new CloudflareDnsProvider({ baseUrl: config.dnsApiUrls.cloudflare }),
        new DigitalOceanDnsProvider({ baseUrl: config.dnsApiUrls.digitalocean }),
        new HetznerDnsProvider({ baseUrl: config.dnsApiUrls.hetzner }),
      ],
      aiProviders: [new OpenAiAdapter(), new AnthropicAdapter()],
      // Tests that bring their own runtime run without the sampler (their containers are fakes).
      ...(overrides.runtime ? {} : { containerStats: new DockerStatsSource(docker, config.platform.instanceId) }),
      ...(config.proxy.kind === 'none' ? {} : { requestLog: new CaddyAccessLog(path.join(config.proxy.accessLogDir, 'access.log')) }),
      terminals: { engine: overrides.terminalEngine ?? new DockerodeTerminalEngine(docker), limits: config.terminals },
    },
  );
  await services.settings.load();
  let initialApiKey: string | null = null;
  if (config.bootstrapApiKey) await services.apiKeys.bootstrap(config.bootstrapApiKey);
  else if (database.fresh && (await database.store.apiKeys.count()) === 0) {
    // Without it, a first start leaves no way in over HTTP. Only its id and prefix are logged.
    const { apiKey, token } = await services.apiKeys.mint('initial', 'write', null);
    log('initial API key created (all projects, write); its token is printed once, outside the log records', {
      id: apiKey.id,
      prefix: apiKey.prefix,
    });
    initialApiKey = token;
  }

  const limiter = createRateLimiter({
    requestsPerMinute: config.rateLimitPerMinute,
    authFailuresPerMinute: config.authFailuresPerMinute,
    authLimits: config.accounts.authLimits,
    store: () => database.store.authLimits,
  });
  const createContext = (req: IncomingMessage, res: ServerResponse): Context => ({
    services,
    // A bearer token wins over the cookie: a script's explicit credential is the one it means.
    token: bearerToken(req.headers.authorization) ?? cookieToken(req, config.trustProxy),
    ip: clientIp(req, config.trustProxy),
    limiter,
    cookie: sessionCookie(req, res, config.trustProxy),
  });
  const sse = new SseBridge();
  const mcp = new McpEndpoint({ createContext, publicUrl: config.publicUrl, bodyLimitBytes: config.bodyLimitBytes, version: '1.0.0' });
  const app = createKoaApp({ router: appRouter, createContext, sse, mcp, bodyLimitBytes: config.bodyLimitBytes, log });
  // Node would answer a request without a Host header with a bare 400: the app answers it with the error body (koa-app.ts).
  const server = createServer({ requireHostHeader: false }, app.callback());
  // An upgrade has no response to set a cookie on: the context gets one that is never sent.
  const terminals = new TerminalSockets({
    createContext: (req) => createContext(req, new ServerResponse(req)),
    publicUrl: config.publicUrl,
    log,
  });
  server.on('upgrade', (req, socket, head) => void terminals.upgrade(req, socket, head));
  server.keepAliveTimeout = 65_000;
  answerParserRejections(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => resolve());
  });
  // Deployments start once the API answers; a Docker engine that is down only delays them. Routes
  // load once the runner knows which containers serve: a table before that would send all to 503.
  void (async () => {
    await services.runner?.start();
    services.routing.start();
    services.sampler?.start();
  })();
  // Imports a previous process left running are failed (with the reason) before new ones are claimed.
  void services.imports.startRunner().catch((error: Error) => log('imports left running could not be settled', { error: error.message }));
  startBackups(services);
  const address = server.address() as AddressInfo;
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
  ownUrl = `http://${host}:${address.port}`;

  let closing: Promise<void> | undefined;
  return {
    server,
    url: `http://${host}:${address.port}`,
    services,
    database,
    initialApiKey,
    close() {
      // In-flight requests finish; streams are told to end; then the database closes.
      closing ??= (async () => {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()));
        sse.closeAll();
        await services.sampler?.stop();
        mcp.closeAll();
        // Terminals' processes are killed before the platform exits (Docker would keep them running).
        await terminals.closeAll();
        await services.backupScheduler.stop();
        await services.drills.stop();
        await services.backupRunner.stop();
        await services.runner?.stop();
        await services.imports.stop();
        // The proxy keeps serving the loaded routes while the platform is down.
        await services.routing.stop();
        await runtime.forwarder.closeAll();
        await runtime.databaseAdmin?.closeAll();
        // Keep-alive connections turn idle as their last response goes out: close them as they do.
        const idleSweep = setInterval(() => server.closeIdleConnections(), 100);
        server.closeIdleConnections();
        const forced = setTimeout(() => server.closeAllConnections(), 10_000);
        await closed;
        clearInterval(idleSweep);
        clearTimeout(forced);
        mailer?.close();
        await database.close();
      })();
      return closing;
    },
  };
}

/**
 * Backups run once what a previous process left running is settled (failed, with the reason); the
 * recovery is tried again every 5 s while the database does not answer.
 */
function startBackups(services: Services): void {
  services.backupRunner.start();
  const recover = () => {
    if (services.backupRunner.stopping) return;
    services.backupRunner.recover().then(
      () => {
        services.backupScheduler.start();
        // Drills left running end failed, their scratch containers go; then queued and scheduled ones run.
        services.drills
          .recover()
          .catch((error: Error) => log('drill recovery failed', { error: error.message }))
          .finally(() => services.drills.start());
      },
      (error: Error) => {
        log('backup recovery failed; trying again', { error: error.message });
        setTimeout(recover, 5_000).unref();
      },
    );
  };
  recover();
}

function reverseProxy(config: AppConfig, engine: ContainerEngine): ReverseProxy {
  const proxy = config.proxy;
  if (proxy.kind === 'none') return new UnconfiguredReverseProxy();
  if (proxy.kind === 'external') return new CaddyReverseProxy(proxy);
  const container = new CaddyContainer(engine, {
    prefix: config.platform.resourcePrefix,
    image: proxy.image,
    adminPort: proxy.adminPort,
    routesDir: proxy.routesDir,
    accessLogDir: proxy.accessLogDir,
    log,
  });
  return new CaddyReverseProxy({
    ...proxy,
    adminUrl: container.adminUrl,
    host: container,
    caddyRoutesDir: container.routesMount,
    caddyAccessLogDir: container.logsMount,
  });
}

const SESSION_COOKIE = 'slipway_session';

/** One cookie's value from a Cookie header; undefined when absent or malformed. */
function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) {
      const value = part.slice(eq + 1).trim();
      return /^[\w-]{1,200}$/.test(value) ? value : undefined;
    }
  }
  return undefined;
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * The session cookie's token, honoured for a state change only when the request comes from this
 * origin. SameSite=Lax keeps other sites' POSTs from carrying it, but apps deployed under the same
 * registrable domain (ROOT_DOMAIN) are the same *site*: their pages could still post with it. A
 * browser says where a request comes from (Sec-Fetch-Site, Origin); from anywhere else the cookie
 * is ignored, so the request is anonymous (401). Scripts send the bearer header and are unaffected.
 */
function cookieToken(req: IncomingMessage, trustProxy: boolean): string | undefined {
  const token = cookieValue(req.headers.cookie, SESSION_COOKIE);
  if (!token || SAFE_METHODS.has(req.method ?? 'GET')) return token;
  const site = req.headers['sec-fetch-site'];
  if (site && site !== 'same-origin' && site !== 'none') return undefined;
  const origin = req.headers.origin;
  if (origin && origin !== ownOrigin(req, trustProxy)) return undefined;
  return token;
}

function ownOrigin(req: IncomingMessage, trustProxy: boolean): string {
  const first = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value)?.split(',')[0]?.trim();
  const proto = (req.socket as TLSSocket).encrypted ? 'https' : (trustProxy && first(req.headers['x-forwarded-proto'])) || 'http';
  const host = (trustProxy && first(req.headers['x-forwarded-host'])) || req.headers.host || '';
  return `${proto}://${host}`;
}

/**
 * The session cookie: HttpOnly (scripts on the page cannot read it), SameSite=Lax (no cross-site
 * POST carries it), Secure when the request came over HTTPS (directly, or per X-Forwarded-Proto
 * from a trusted proxy). Its lifetime is the session's; the server slides the session itself.
 */
function sessionCookie(req: IncomingMessage, res: ServerResponse, trustProxy: boolean) {
  const forwardedProto = trustProxy
    ? String(req.headers['x-forwarded-proto'] ?? '')
        .split(',')[0]
        ?.trim()
    : undefined;
  const secure = (req.socket as TLSSocket).encrypted === true || forwardedProto === 'https';
  const attributes = `Path=/; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;
  const append = (cookie: string) => {
    if (res.headersSent) return;
    const existing = res.getHeader('Set-Cookie');
    res.setHeader('Set-Cookie', [...(Array.isArray(existing) ? existing : existing ? [String(existing)] : []), cookie]);
  };
  return {
    set: (token: string, expiresAt: Date) =>
      append(
        `${SESSION_COOKIE}=${token}; ${attributes}; Expires=${expiresAt.toUTCString()}; Max-Age=${Math.max(0, Math.floor((expiresAt.getTime() - Date.now()) / 1000))}`,
      ),
    clear: () => append(`${SESSION_COOKIE}=; ${attributes}; Expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0`),
  };
}

function bearerToken(header: string | undefined): string | undefined {
  const match = header ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
  return match?.[1];
}

function clientIp(req: IncomingMessage, trustProxy: boolean): string {
  if (trustProxy) {
    const forwarded = req.headers['x-forwarded-for'];
    const first = (Array.isArray(forwarded) ? forwarded[0] : forwarded)?.split(',')[0]?.trim();
    if (first) return first;
  }
  return req.socket.remoteAddress ?? 'unknown';
}
