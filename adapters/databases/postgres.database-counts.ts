import type { EngineCounts } from '../../src/index.js';
import type { ContainerExec } from './container-exec.js';

/**
 * Every table's exact row count in one statement: `count(*)` of each ordinary and partitioned table of
 * the database's own schemas, run through query_to_xml with the names quoted by format('%I'). The
 * system schemas and TimescaleDB's catalog are left out (a hypertable is counted as itself).
 */
const COUNT_TABLES = `SELECT n.nspname || '.' || c.relname,
  (xpath('/row/n/text()', query_to_xml(format('SELECT count(*) AS n FROM %I.%I', n.nspname, c.relname), false, true, '')))[1]::text
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition
  AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%'
  AND n.nspname NOT LIKE '\\_timescaledb%' AND n.nspname NOT LIKE 'timescaledb\\_%'
ORDER BY 1`;

/**
 * How long the count waits for a table's lock. A session holding one (a migration, an `ACCESS EXCLUSIVE`
 * lock) must not hold up the backup behind the count: past this the count fails, the backup goes on
 * without counts (its log says so) and pg_dump waits for the lock as it would have without a count.
 */
export const COUNT_LOCK_TIMEOUT_MS = 3_000;

/** PostgreSQL and TimescaleDB: `psql` in the container, as the service's user, the password in PGPASSWORD. */
export async function countPostgres(exec: ContainerExec, env: Record<string, string>): Promise<EngineCounts> {
  const out = await exec.run(
    [
      'psql',
      '-X',
      '-q',
      '-A',
      '-t',
      '-F',
      '\t',
      '-v',
      'ON_ERROR_STOP=1',
      '-U',
      env.POSTGRES_USER ?? 'postgres',
      '-d',
      env.POSTGRES_DB ?? 'postgres',
      '-c',
      COUNT_TABLES,
    ],
    { env: { PGPASSWORD: env.POSTGRES_PASSWORD ?? '', PGOPTIONS: `-c lock_timeout=${COUNT_LOCK_TIMEOUT_MS}` } },
  );
  return { unit: 'rows', counts: tabSeparatedCounts(out) };
}

/** `name\tcount` lines into a record (a table named with a tab or newline is not one psql can print unambiguously: refused). */
export function tabSeparatedCounts(out: string): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const line of out.split('\n')) {
    if (!line) continue;
    const at = line.lastIndexOf('\t');
    const count = Number(line.slice(at + 1));
    if (at < 0 || !Number.isSafeInteger(count)) throw new Error(`an unreadable count line: ${JSON.stringify(line.slice(0, 200))}`);
    counts[line.slice(0, at)] = count;
  }
  return counts;
}
