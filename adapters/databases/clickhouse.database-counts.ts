import type { EngineCounts } from '../../src/index.js';
import type { ContainerExec } from './container-exec.js';
import { ClickHouseClient, DATA_ENGINES, quoteIdentifier } from './clickhouse.database-dump.js';

/** ClickHouse: `clickhouse-client`, `SELECT count()` of every table that holds rows (the ones the dump copies). */
export async function countClickHouse(exec: ContainerExec, env: Record<string, string>): Promise<EngineCounts> {
  const client = await ClickHouseClient.open(exec, env);
  try {
    const counts: Record<string, number> = {};
    for (const table of (await client.tables()).filter((t) => DATA_ENGINES.test(t.engine))) {
      const count = Number((await client.query(`SELECT count() FROM ${quoteIdentifier(table.name)} FORMAT TSV`)).trim());
      if (!Number.isSafeInteger(count)) throw new Error(`an unreadable count of ${table.name}`);
      counts[`${client.database}.${table.name}`] = count;
    }
    return { unit: 'rows', counts };
  } finally {
    await client.close();
  }
}
