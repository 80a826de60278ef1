import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { MikroORM, type Options } from '@mikro-orm/core';
import { Migrator } from '@mikro-orm/migrations';
import type { EntityManager as SqlEntityManager } from '@mikro-orm/sql';
// @mikro-orm/sqlite runs on better-sqlite3 13 (Node-API, prebuilt in the package): the
// ObjectWrap-based 11.x that @mikro-orm/better-sqlite pinned aborts on Node 24 and does not build on 26.
// Its drivers, with values bound rather than written into the SQL text (see bound-drivers.ts), load with
// the database they speak to: an install on SQLite never loads pg, one on PostgreSQL never better-sqlite3.
import { ALL_ENTITIES } from './entities.js';
import { Store } from './store.js';

export interface DatabaseConfig {
  /** `postgres://...` selects PostgreSQL; anything else (or nothing) SQLite. */
  databaseUrl?: string | undefined;
  /** Where the SQLite file lives; `:memory:` keeps it in memory (tests). */
  dataDir: string;
  debug?: boolean;
}

export function isPostgresUrl(url: string | undefined): url is string {
  return !!url && /^postgres(ql)?:\/\//.test(url);
}

/** MikroORM options for a configuration; also what `mikro-orm.config.ts` exports for the CLI. */
export async function ormOptions(config: DatabaseConfig): Promise<Partial<Options>> {
  const common = {
    entities: ALL_ENTITIES,
    debug: config.debug ?? false,
    allowGlobalContext: false,
    extensions: [Migrator],
    // Timestamps are UTC end to end.
    forceUtcTimezone: true,
  } satisfies Partial<Options>;
  if (isPostgresUrl(config.databaseUrl)) {
    const [{ BoundPostgreSqlDriver }, { postgresqlMigrations }] = await Promise.all([
      import('./bound-postgresql.driver.js'),
      import('./migrations/postgresql/index.js'),
    ]);
    return {
      ...common,
      driver: BoundPostgreSqlDriver,
      clientUrl: config.databaseUrl,
      migrations: {
        migrationsList: postgresqlMigrations,
        transactional: true,
        snapshot: false,
        silent: true,
        path: 'src/persistence/migrations/postgresql',
        emit: 'ts',
      },
    };
  }
  const dbName = config.dataDir === ':memory:' ? ':memory:' : path.join(config.dataDir, 'slipway.db');
  if (dbName !== ':memory:') mkdirSync(config.dataDir, { recursive: true });
  const [{ BoundSqliteDriver }, { sqliteMigrations }] = await Promise.all([
    import('./bound-sqlite.driver.js'),
    import('./migrations/sqlite/index.js'),
  ]);
  return {
    ...common,
    driver: BoundSqliteDriver,
    dbName,
    migrations: {
      migrationsList: sqliteMigrations,
      transactional: true,
      snapshot: false,
      silent: true,
      path: 'src/persistence/migrations/sqlite',
      emit: 'ts',
    },
  };
}

export interface Database {
  store: Store;
  kind: 'sqlite' | 'postgresql';
  /** True when this open created the schema: the first start of an empty data directory (or database). */
  fresh: boolean;
  close(): Promise<void>;
}

/** Opens the database and brings its schema up to date with the committed migrations. */
export async function openDatabase(config: DatabaseConfig): Promise<Database> {
  const orm = await MikroORM.init(await ormOptions(config));
  let fresh = false;
  try {
    if (!isPostgresUrl(config.databaseUrl)) {
      // WAL lets readers go on while the runner writes log lines.
      await orm.em.getConnection().execute('pragma journal_mode = wal');
      await orm.em.getConnection().execute('pragma busy_timeout = 5000');
      await orm.em.getConnection().execute('pragma foreign_keys = on');
    }
    fresh = (await orm.migrator.getExecuted()).length === 0;
    await orm.migrator.up();
  } catch (error) {
    await orm.close(true);
    throw error;
  }
  return {
    // Both drivers are SQL drivers: their entity manager has the query builder the store reads with.
    store: new Store(orm.em as unknown as SqlEntityManager),
    kind: isPostgresUrl(config.databaseUrl) ? 'postgresql' : 'sqlite',
    fresh,
    close: () => orm.close(true),
  };
}
