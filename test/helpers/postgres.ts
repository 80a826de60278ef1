import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';

const ROOT = path.resolve(import.meta.dirname, '../..');

/**
 * A fresh database on the test PostgreSQL server (started by test/provision/postgres.sh, which
 * installs it when missing). Never skipped: without a server this throws.
 */
export async function createScratchDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const serverUrl =
    process.env.PG_TEST_URL ?? execFileSync('bash', [path.join(ROOT, 'test/provision/postgres.sh')], { encoding: 'utf8' }).trim();
  const name = `slipway_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: serverUrl });
      await client.connect();
      await client.query(`drop database if exists ${name} with (force)`);
      await client.end();
    },
  };
}
