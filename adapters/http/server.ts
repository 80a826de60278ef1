import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Docker from 'dockerode';
import { createServices, type RuntimeDeps, type Services } from '../../src/index.js';
import { DockerodeContainerEngine } from '../docker/dockerode.container-engine.js';
import { CloudflareDnsProvider } from '../dns/cloudflare.dns-provider.js';
import { DigitalOceanDnsProvider } from '../dns/digitalocean.dns-provider.js';
import { HetznerDnsProvider } from '../dns/hetzner.dns-provider.js';
import { GitCliSource } from '../git/git-cli.git-source.js';
import { NetHealthProbe } from '../net/net-health-probe.js';
import { IptablesTrafficGate } from '../net/iptables.traffic-gate.js';
import { TcpPortForwarder } from '../net/tcp-port-forwarder.js';
import { EngineDatabaseAdmin } from '../databases/engine-database-admin.js';
import { lazyDatabaseAdmin } from '../databases/lazy-database-admin.js';
import { DockerExecDatabaseDump } from '../databases/docker-exec.database-dump.js';
import { DiskBackupFiles } from '../backups/disk.backup-files.js';
import { S3ObjectStore } from '../object-store/s3.object-store.js';
import { openDatabase, type Database } from '../../src/persistence/database.js';
import { systemClock } from '../../src/platform/clock.port.js';
import type { ReverseProxy } from '../../src/routing/reverse-proxy.port.js';
import type { RuntimeLogSource } from '../../src/deployments/runtime-logs.port.js';
import type { PortProbe } from '../../src/projects/port-probe.port.js';
import { LogBus } from '../../src/platform/log-bus.js';
import { SecretBox } from '../../src/platform/secret-box.js';
import { appRouter } from '../../routers/app.router.js';
import type { Context } from '../../routers/trpc.js';
import { DockerRuntimeLogs } from '../docker/docker-runtime-logs.js';
import type { ContainerEngine } from '../../src/deployments/container-engine.port.js';
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

export interface Overrides {
  proxy?: ReverseProxy;
  runtimeLogs?: RuntimeLogSource;
  portProbe?: PortProbe;
  runtime?: RuntimeDeps;
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
function databaseAdmin(): EngineDatabaseAdmin {
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
    // Behind Caddy, cutovers move traffic through the packet filter instead of reloading it.
    ...(config.proxy.kind !== 'none' && !overrides.proxy
      ? { gate: new IptablesTrafficGate({ instanceId: config.platform.instanceId, gatePort: config.proxy.gatePort }) }
      : {}),
  };
  const services = createServices(
    {
      store: database.store,
      secrets: SecretBox.fromSecret(config.secretKey),
      proxy: overrides.proxy ?? reverseProxy(config, runtime.engine),
      runtimeLogs: overrides.runtimeLogs ?? new DockerRuntimeLogs(docker),
      portProbe: overrides.portProbe ?? new NetPortProbe(),
      clock: systemClock,
      logBus: new LogBus(),
      config: config.platform,
    },
    {
      runtime,
      log,
      backups: {
        files: new DiskBackupFiles(config.platform.backups.dir),
        objectStores: (store) => new S3ObjectStore(store),
        ...(overrides.runtime ? {} : { dump: new DockerExecDatabaseDump(docker) }),
        ...overrides.backups,
      },
      dnsProviders: [
        new CloudflareDnsProvider({ baseUrl: config.dnsApiUrls.cloudflare }),
        new DigitalOceanDnsProvider({ baseUrl: config.dnsApiUrls.digitalocean }),
        new HetznerDnsProvider({ baseUrl: config.dnsApiUrls.hetzner }),
      ],
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

  const limiter = createRateLimiter({ requestsPerMinute: config.rateLimitPerMinute, authFailuresPerMinute: config.authFailuresPerMinute });
  const createContext = (req: IncomingMessage): Context => ({
    services,
    token: bearerToken(req.headers.authorization),
    ip: clientIp(req, config.trustProxy),
    limiter,
  });
  const sse = new SseBridge();
  const app = createKoaApp({ router: appRouter, createContext, sse, bodyLimitBytes: config.bodyLimitBytes, log });
  const server = createServer(app.callback());
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
  })();
  startBackups(services);
  const address = server.address() as AddressInfo;
  const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;

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
        await services.backupScheduler.stop();
        await services.backupRunner.stop();
        await services.runner?.stop();
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
      () => services.backupScheduler.start(),
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
    log,
  });
  return new CaddyReverseProxy({ ...proxy, adminUrl: container.adminUrl, host: container, caddyRoutesDir: container.routesMount });
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
