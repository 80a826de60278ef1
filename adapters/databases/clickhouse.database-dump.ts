import { PassThrough, type Readable } from 'node:stream';
import { ByteReader, produced, writeWithBackpressure, type ContainerExec } from './container-exec.js';
import type { DumpFamily } from './dump-family.js';

export const NATIVE_MAGIC = 'SLIPWAY-CLICKHOUSE-NATIVE 1';
const LINE_MAX = 16 * 1024 * 1024;
/** Engines whose rows live in the table itself: the ones read and written back. */
export const DATA_ENGINES = /MergeTree$|^(TinyLog|StripeLog|Log|Memory)$/;
/** Created after the rows are in: a materialized view made earlier would see the rows inserted again. */
const VIEW_ENGINES = /^(View|MaterializedView|LiveView|WindowView|Dictionary)$/;

/** A table of the dump's prelude. */
export interface NativeTable {
  name: string;
  engine: string;
  create: string;
  /** Its rows follow in the dump. */
  data: boolean;
}

/**
 * ClickHouse, with the image's own `clickhouse-client` (the same in 18.16 and 24): the tables of the
 * service's database (CLICKHOUSE_DB), each one's `SHOW CREATE TABLE`, and the rows of those that hold
 * them (the MergeTree family, Log engines, Memory) as `SELECT * ... FORMAT Native`, framed into one
 * stream (the `native` format, docs/backups.md):
 *
 *   SLIPWAY-CLICKHOUSE-NATIVE 1\n
 *   {"name","engine","create","data"}\n ... one JSON line per table (tables, then views by creation)
 *   {"prelude":"end","tables":N}\n
 *   then per table with rows: {"rows":"<name>"}\n, chunks `<hex length>\n<bytes>`, and `0\n`
 *   {"end":true}\n
 *
 * The restore drops the dump's tables (views first), creates the tables, inserts each one's rows
 * (`INSERT ... FORMAT Native` from stdin), then creates the views. The password is in a client config
 * file (mode 600, removed after); the database is the `--database` argument, never spliced into SQL.
 */
export const ClickHouseDump: DumpFamily = {
  format: 'native',
  async dump(exec, env) {
    const client = await ClickHouseClient.open(exec, env);
    try {
      exec.log(`Listing the tables of ${client.database} with clickhouse-client`);
      const tables = await client.tables();
      exec.log(`${tables.length} tables: ${tables.map((t) => `${t.name} (${t.engine})`).join(', ') || 'none'}`);
      return produced(async (out) => {
        try {
          await writeWithBackpressure(out, Buffer.from(`${NATIVE_MAGIC}\n`));
          for (const table of tables) await writeWithBackpressure(out, jsonLine(table));
          await writeWithBackpressure(out, jsonLine({ prelude: 'end', tables: tables.length }));
          for (const table of tables.filter((t) => t.data)) {
            exec.log(`Dumping the rows of ${table.name}`);
            await writeWithBackpressure(out, jsonLine({ rows: table.name }));
            const run = await client.stream(`SELECT * FROM ${quoteIdentifier(table.name)} FORMAT Native`);
            for await (const chunk of run.stdout as AsyncIterable<Buffer>) {
              await writeWithBackpressure(out, Buffer.from(`${chunk.length.toString(16)}\n`));
              await writeWithBackpressure(out, chunk);
            }
            await run.done;
            await writeWithBackpressure(out, Buffer.from('0\n'));
          }
          await writeWithBackpressure(out, jsonLine({ end: true }));
        } finally {
          await client.close();
        }
      });
    } catch (error) {
      await client.close();
      throw error;
    }
  },

  async restore(exec, env, input) {
    const reader = new ByteReader(input);
    if ((await reader.line(LINE_MAX)) !== NATIVE_MAGIC) throw new Error('this is not a ClickHouse dump of the platform');
    const tables: NativeTable[] = [];
    for (;;) {
      const line = await reader.line(LINE_MAX);
      if (line === null) throw new Error('the dump ends inside its list of tables');
      const record = JSON.parse(line) as NativeTable | { prelude: string; tables: number };
      if ('prelude' in record) {
        if (record.tables !== tables.length) throw new Error('the dump lists another number of tables than it holds');
        break;
      }
      tables.push(record);
    }
    const client = await ClickHouseClient.open(exec, env);
    try {
      for (const table of [...tables].reverse()) await client.query(`DROP TABLE IF EXISTS ${quoteIdentifier(table.name)}`);
      const views = tables.filter((t) => VIEW_ENGINES.test(t.engine));
      for (const table of tables.filter((t) => !VIEW_ENGINES.test(t.engine))) {
        exec.log(`Creating ${table.name} (${table.engine})`);
        await client.query(table.create);
      }
      const withRows = new Set(tables.filter((t) => t.data).map((t) => t.name));
      for (;;) {
        const line = await reader.line(LINE_MAX);
        if (line === null) throw new Error('the dump ends before its end mark');
        const record = JSON.parse(line) as { rows?: string; end?: boolean };
        if (record.end) break;
        if (!record.rows || !withRows.delete(record.rows)) throw new Error(`the dump has rows of an unlisted table ${record.rows}`);
        // Started at the first chunk: a table without rows has none, and an INSERT of nothing is an error.
        let insert: { rows: PassThrough; done: Promise<string> } | null = null;
        try {
          for (;;) {
            const size = Number.parseInt((await reader.line(32)) ?? '', 16);
            if (!Number.isInteger(size) || size < 0) throw new Error(`the rows of ${record.rows} are not framed as the dump format says`);
            if (size === 0) break;
            if (!insert) {
              exec.log(`Inserting the rows of ${record.rows}`);
              const rows = new PassThrough({ highWaterMark: 1 << 20 });
              insert = { rows, done: client.run(`INSERT INTO ${quoteIdentifier(record.rows)} FORMAT Native`, rows) };
              insert.done.catch(() => undefined);
            }
            for await (const piece of reader.bytes(size)) await writeWithBackpressure(insert.rows, piece);
          }
          insert?.rows.end();
        } catch (error) {
          if (insert) {
            insert.rows.destroy(error as Error);
            await insert.done.catch(() => undefined);
          }
          throw error;
        }
        await insert?.done;
      }
      if (withRows.size > 0) throw new Error(`the dump ends without the rows of ${[...withRows].join(', ')}`);
      if (!(await reader.atEnd())) throw new Error('the dump goes on after its end mark');
      for (const view of views) {
        exec.log(`Creating ${view.name} (${view.engine})`);
        await client.query(view.create);
      }
    } finally {
      await client.close();
    }
  },
};

function jsonLine(value: unknown): Buffer {
  return Buffer.from(`${JSON.stringify(value)}\n`);
}

/** A ClickHouse identifier in backquotes (backslash and backquote escaped): names come from the server's own list. */
export function quoteIdentifier(name: string): string {
  return `\`${name.replace(/[\\`]/g, (c) => `\\${c}`)}\``;
}

/** `clickhouse-client` in the container, logged in through a config file, on the service's database. */
export class ClickHouseClient {
  private constructor(
    private readonly exec: ContainerExec,
    readonly database: string,
    private readonly config: { path: string; remove(): Promise<void> },
  ) {}

  static async open(exec: ContainerExec, env: Record<string, string>): Promise<ClickHouseClient> {
    const user = env.CLICKHOUSE_USER || 'default';
    const config = await exec.secretFile(
      '.xml',
      `<config>\n  <user>${xmlText(user)}</user>\n  <password>${xmlText(env.CLICKHOUSE_PASSWORD ?? '')}</password>\n</config>\n`,
    );
    return new ClickHouseClient(exec, env.CLICKHOUSE_DB || 'default', config);
  }

  private argv(query: string): string[] {
    return ['clickhouse-client', `--config-file=${this.config.path}`, `--database=${this.database}`, '--query', query];
  }

  stream(query: string) {
    return this.exec.stream(this.argv(query));
  }

  run(query: string, stdin?: Readable): Promise<string> {
    return this.exec.run(this.argv(query), stdin ? { stdin } : {});
  }

  query(query: string): Promise<string> {
    return this.run(query);
  }

  /** Tables with rows first (by name), then the rest in creation order: views after what they read. */
  async tables(): Promise<NativeTable[]> {
    const listed = (
      await this.query(
        "SELECT name, engine FROM system.tables WHERE database = currentDatabase() AND name NOT LIKE '.inner%' ORDER BY metadata_modification_time, name FORMAT JSONEachRow",
      )
    )
      .split('\n')
      .filter((line) => line.trim())
      .map((line) => JSON.parse(line) as { name: string; engine: string });
    const ordered = [...listed.filter((t) => !VIEW_ENGINES.test(t.engine)), ...listed.filter((t) => VIEW_ENGINES.test(t.engine))];
    const tables: NativeTable[] = [];
    for (const { name, engine } of ordered) {
      const create = (await this.query(`SHOW CREATE TABLE ${quoteIdentifier(name)} FORMAT TSVRaw`)).replace(/\n$/, '');
      tables.push({ name, engine, create, data: DATA_ENGINES.test(engine) });
    }
    return tables;
  }

  close(): Promise<void> {
    return this.config.remove();
  }
}

function xmlText(value: string): string {
  return value.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]!);
}
