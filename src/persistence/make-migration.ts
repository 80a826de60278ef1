/**
 * Writes the next migration for both dialects from the difference between the entities and the
 * schema the committed migrations build. Run `npm run migration:create` after changing an
 * entity (needs DATABASE_URL of a scratch PostgreSQL for the PostgreSQL half), then list the new
 * classes in migrations/<dialect>/index.ts.
 */
import { MikroORM } from '@mikro-orm/core';
import { ormOptions } from './database.js';

async function make(databaseUrl: string | undefined, path: string): Promise<void> {
  const options = await ormOptions({ databaseUrl, dataDir: ':memory:' });
  const orm = await MikroORM.init({ ...options, migrations: { ...options.migrations, path, emit: 'ts', snapshot: false } });
  try {
    if (databaseUrl) await orm.schema.drop({ dropMigrationsTable: true });
    await orm.migrator.up();
    const result = await orm.migrator.create(path, false, false);
    console.log(result.fileName ? `${path}/${result.fileName}` : `${path}: no changes`);
  } finally {
    await orm.close(true);
  }
}

const pgUrl = process.env.DATABASE_URL;
if (!pgUrl) throw new Error('Set DATABASE_URL to a scratch PostgreSQL database (its schema is dropped)');
await make(undefined, 'src/persistence/migrations/sqlite');
await make(pgUrl, 'src/persistence/migrations/postgresql');
