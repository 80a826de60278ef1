import { DEFAULT_PLATFORM_CONFIG, type PlatformConfig } from '../../src/index.js';
import { createUseCases, type UseCasePorts, type UseCases } from '../../adapters/composition/use-cases.js';
import { openDatabase, type Database } from '../../src/persistence/database.js';
import type { Clock } from '../../src/platform/clock.port.js';
import type { DnsProvider } from '../../src/routing/dns-provider.port.js';
import { LogBus } from '../../src/platform/log-bus.js';
import { SecretBox } from '../../src/platform/secret-box.js';
import { createCaller } from '../../routers/app.router.js';
import type { RequestLimiter } from '../../routers/trpc.js';
import { FakePortProbe, RecordingReverseProxy, ScriptedRuntimeLogs } from './fakes.js';

export const unlimited: RequestLimiter = {
  async recordAuthFailure() {},
  assertRequestAllowed() {},
  async assertAuthAttempt() {},
  async assertWebhookDelivery() {},
};

export interface Harness {
  database: Database;
  services: UseCases;
  proxy: RecordingReverseProxy;
  portProbe: FakePortProbe;
  runtimeLogs: ScriptedRuntimeLogs;
  logBus: LogBus;
  secrets: SecretBox;
  /** A write key for all projects, minted for the test. */
  adminToken: string;
  /** A tRPC caller authenticated with `token` (the admin key by default). */
  /** A caller with the token (the admin key's by default); `signal` ends its subscriptions. */
  caller(token?: string | undefined, signal?: AbortSignal): ReturnType<typeof createCaller>;
  mintKey(access: 'read' | 'write', projectIds?: string[] | null): Promise<string>;
  /** A service's variables as stored, decrypted. */
  envValues(serviceId: string): Promise<Record<string, string>>;
  close(): Promise<void>;
}

/** The services on a real SQLite database in memory, with fakes of the outside ports. */
export async function createHarness(
  opts: {
    config?: Partial<PlatformConfig>;
    clock?: Clock;
    databaseUrl?: string;
    /** A SQLite file's directory (two harnesses on one file: two control planes); in memory by default. */
    dataDir?: string;
    dnsProviders?: DnsProvider[];
    aiProviders?: UseCasePorts['aiProviders'];
    databases?: UseCasePorts['databases'];
    imports?: UseCasePorts['imports'];
    tls?: UseCasePorts['tls'];
    accounts?: UseCasePorts['accounts'];
    backups?: UseCasePorts['backups'];
    cluster?: UseCasePorts['cluster'];
    hooks?: UseCasePorts['hooks'];
    events?: UseCasePorts['events'];
  } = {},
): Promise<Harness> {
  const database = await openDatabase({ databaseUrl: opts.databaseUrl, dataDir: opts.dataDir ?? ':memory:' });
  const proxy = new RecordingReverseProxy();
  const portProbe = new FakePortProbe();
  const runtimeLogs = new ScriptedRuntimeLogs();
  const logBus = new LogBus();
  const secrets = SecretBox.fromSecret('test-secret-key-test-secret-key-0123');
  const services = createUseCases(
    {
      store: database.store,
      secrets,
      clock: opts.clock ?? monotonicClock(),
      logBus,
      config: { ...DEFAULT_PLATFORM_CONFIG, streamPingMs: 200, ...opts.config },
    },
    {
      proxy,
      runtimeLogs,
      portProbe,
      dnsProviders: opts.dnsProviders,
      aiProviders: opts.aiProviders,
      databases: opts.databases,
      imports: opts.imports,
      tls: opts.tls,
      accounts: opts.accounts,
      backups: opts.backups,
      cluster: opts.cluster,
      hooks: opts.hooks,
      events: opts.events,
    },
  );
  const mintKey = async (access: 'read' | 'write', projectIds: string[] | null = null) =>
    (await services.apiKeys.mint(`test-${access}`, access, projectIds)).token;
  const adminToken = await mintKey('write');
  return {
    database,
    services,
    proxy,
    portProbe,
    runtimeLogs,
    logBus,
    secrets,
    adminToken,
    caller: (token = adminToken, signal?: AbortSignal) =>
      createCaller({ services, token, ip: '127.0.0.1', limiter: unlimited }, signal ? { signal } : undefined),
    mintKey,
    envValues: async (serviceId) =>
      Object.fromEntries((await database.store.env.list([serviceId])).map((v) => [v.key, secrets.decrypt(v.valueEncrypted)])),
    close: async () => {
      await services.eventLoops.stop();
      await database.close();
    },
  };
}

/**
 * Wall-clock time that never repeats a millisecond: lists sort by createdAt, then by a random id, so
 * two records created in the same millisecond (MikroORM 7 on SQLite in memory is fast enough for that)
 * would come back in a random order and make order assertions flaky.
 */
function monotonicClock(): Clock {
  let last = 0;
  return { now: () => new Date((last = Math.max(Date.now(), last + 1))) };
}
