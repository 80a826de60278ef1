/** The six database engines a service can be, with what the spec says they start with. */
export const DATABASE_ENGINES = ['postgres', 'timescale', 'mysql', 'redis', 'mongodb', 'clickhouse'] as const;
export type DatabaseEngine = (typeof DATABASE_ENGINES)[number];

interface EngineSpec {
  image: string;
  internalPort: number;
  /** Where the engine keeps its data: a named volume is mounted there. */
  dataDir: string;
  /** The container command, when the image's own does not read the env we generate. */
  command?: (opts: { logicalReplication: boolean }) => string[] | null;
  /** Initial env keys, in order, with how a missing value is generated. */
  initialEnv: ReadonlyArray<{ key: string; generate: (serviceSlug: string, password: () => string) => string }>;
  /**
   * A connection URL for other services of the project, `host` being the service slug on the
   * project network; `v(KEY)` supplies each part (a URL-encoded value, or a `${slug.KEY}` reference).
   */
  connectionUrl: (v: (key: string) => string, host: string, port: number) => string;
  urlKey: string;
}

const user = (slug: string) => slug.replace(/-/g, '_').slice(0, 32) || 'app';

/** PostgreSQL and what is built on it share their image layout, env and URL. */
function postgresLike(image: string, extraEnv: EngineSpec['initialEnv']): EngineSpec {
  return {
    image,
    internalPort: 5432,
    dataDir: '/var/lib/postgresql/data',
    command: ({ logicalReplication }) => (logicalReplication ? ['postgres', '-c', 'wal_level=logical'] : null),
    initialEnv: [
      { key: 'POSTGRES_DB', generate: user },
      { key: 'POSTGRES_USER', generate: user },
      { key: 'POSTGRES_PASSWORD', generate: (_s, pw) => pw() },
      ...extraEnv,
    ],
    connectionUrl: (v, h, p) => `postgres://${v('POSTGRES_USER')}:${v('POSTGRES_PASSWORD')}@${h}:${p}/${v('POSTGRES_DB')}`,
    urlKey: 'DATABASE_URL',
  };
}

export const ENGINE_SPECS: Record<DatabaseEngine, EngineSpec> = {
  postgres: postgresLike('postgres:17', []),
  timescale: postgresLike('timescale/timescaledb:latest-pg17', [{ key: 'TIMESCALEDB_TELEMETRY', generate: () => 'off' }]),
  mysql: {
    image: 'mysql:8.4',
    internalPort: 3306,
    dataDir: '/var/lib/mysql',
    initialEnv: [
      { key: 'MYSQL_DATABASE', generate: user },
      { key: 'MYSQL_USER', generate: user },
      { key: 'MYSQL_PASSWORD', generate: (_s, pw) => pw() },
      { key: 'MYSQL_ROOT_PASSWORD', generate: (_s, pw) => pw() },
    ],
    connectionUrl: (v, h, p) => `mysql://${v('MYSQL_USER')}:${v('MYSQL_PASSWORD')}@${h}:${p}/${v('MYSQL_DATABASE')}`,
    urlKey: 'DATABASE_URL',
  },
  redis: {
    image: 'redis:7',
    internalPort: 6379,
    dataDir: '/data',
    // The redis image ignores REDIS_PASSWORD: pass it as an argument, read from the env at start.
    command: () => ['sh', '-c', 'exec redis-server --appendonly yes --requirepass "$REDIS_PASSWORD"'],
    initialEnv: [{ key: 'REDIS_PASSWORD', generate: (_s, pw) => pw() }],
    connectionUrl: (v, h, p) => `redis://default:${v('REDIS_PASSWORD')}@${h}:${p}/0`,
    urlKey: 'REDIS_URL',
  },
  mongodb: {
    image: 'mongo:7',
    internalPort: 27017,
    dataDir: '/data/db',
    initialEnv: [
      { key: 'MONGO_INITDB_ROOT_USERNAME', generate: user },
      { key: 'MONGO_INITDB_ROOT_PASSWORD', generate: (_s, pw) => pw() },
    ],
    connectionUrl: (v, h, p) =>
      `mongodb://${v('MONGO_INITDB_ROOT_USERNAME')}:${v('MONGO_INITDB_ROOT_PASSWORD')}@${h}:${p}/?authSource=admin`,
    urlKey: 'MONGO_URL',
  },
  clickhouse: {
    image: 'clickhouse/clickhouse-server:24',
    internalPort: 8123,
    dataDir: '/var/lib/clickhouse',
    initialEnv: [
      { key: 'CLICKHOUSE_DB', generate: user },
      { key: 'CLICKHOUSE_USER', generate: user },
      { key: 'CLICKHOUSE_PASSWORD', generate: (_s, pw) => pw() },
      { key: 'CLICKHOUSE_DEFAULT_ACCESS_MANAGEMENT', generate: () => '1' },
    ],
    connectionUrl: (v, h, p) => `clickhouse://${v('CLICKHOUSE_USER')}:${v('CLICKHOUSE_PASSWORD')}@${h}:${p}/${v('CLICKHOUSE_DB')}`,
    urlKey: 'CLICKHOUSE_URL',
  },
};

/** A password the engine's container is started with (a generated one, or the user's): always a secret variable. */
export function isEnginePassword(engine: DatabaseEngine, key: string): boolean {
  return ENGINE_SPECS[engine].initialEnv.some((e) => e.key === key && /PASSWORD/.test(key));
}

export function isDatabaseEngine(value: string): value is DatabaseEngine {
  return (DATABASE_ENGINES as readonly string[]).includes(value);
}

/** The wire's `database:<engine>` (a create input's repoFullName) -> engine, or null for anything else. */
export function engineOf(repoFullName: string | null): DatabaseEngine | null {
  if (!repoFullName?.startsWith('database:')) return null;
  const engine = repoFullName.slice('database:'.length);
  return isDatabaseEngine(engine) ? engine : null;
}

/** The engine of a database service, null for any other (any service's source fits: only a database's has an engine). */
export function databaseEngineOf(service: { source: { kind: string; engine?: DatabaseEngine } }): DatabaseEngine | null {
  return service.source.kind === 'database' ? (service.source.engine ?? null) : null;
}

/** How to reach one running database service, with the credentials from its own env. */
export interface DatabaseEndpoint {
  /** Connections are pooled per service: the pool's key starts with it. */
  serviceId: string;
  engine: DatabaseEngine;
  host: string;
  port: number;
  /** The service's env (`POSTGRES_USER`, `REDIS_PASSWORD`, ...): each adapter reads its engine's keys. */
  env: Readonly<Record<string, string>>;
}

/** A database server's readiness: what a deployment waits for, and the first call of its administration (DatabaseAdmin). */
export interface DatabaseReadiness {
  /** The engine's own readiness check (a query, PING, hello): resolves with what answered, for the log. */
  checkReady(db: DatabaseEndpoint, signal: AbortSignal): Promise<string>;
}
