import type { EngineCounts } from '../../src/index.js';
import type { ContainerExec } from './container-exec.js';
import { tabSeparatedCounts } from './postgres.database-counts.js';
import { optionValue } from './mysql.database-dump.js';

/** A MySQL identifier in backquotes (a backquote doubled): names come from the server's own list. */
function quoted(name: string): string {
  return `\`${name.replace(/`/g, '``')}\``;
}

/**
 * MySQL and MariaDB: the `mysql` client as root (an option file, as the dump's), the database's base
 * tables listed, then one `SELECT COUNT(*)` per table in a single UNION ALL (information_schema's
 * TABLE_ROWS is an estimate for InnoDB).
 */
export async function countMysql(exec: ContainerExec, env: Record<string, string>): Promise<EngineCounts> {
  const database = env.MYSQL_DATABASE ?? 'mysql';
  const options = await exec.secretFile('.cnf', `[client]\nuser=root\npassword=${optionValue(env.MYSQL_ROOT_PASSWORD ?? '')}\n`);
  try {
    const client = (sql: string) =>
      exec.run(['mysql', `--defaults-extra-file=${options.path}`, '--batch', '--skip-column-names', '--raw', database, '-e', sql]);
    const tables = (await client("SHOW FULL TABLES WHERE Table_type = 'BASE TABLE'"))
      .split('\n')
      .filter((line) => line)
      .map((line) => line.split('\t')[0]!);
    if (tables.length === 0) return { unit: 'rows', counts: {} };
    const counts: Record<string, number> = {};
    // In batches: one statement per hundred tables keeps each under the server's packet size.
    for (let i = 0; i < tables.length; i += 100) {
      const batch = tables.slice(i, i + 100);
      const sql = batch.map((t, j) => `SELECT ${i + j}, COUNT(*) FROM ${quoted(t)}`).join(' UNION ALL ');
      for (const [index, count] of Object.entries(tabSeparatedCounts(await client(sql))))
        counts[`${database}.${tables[Number(index)]}`] = count;
    }
    return { unit: 'rows', counts };
  } finally {
    await options.remove();
  }
}
