import { describe, expect } from 'vitest';
import { backupRoundTrips, type Database, type EngineCase } from '../helpers/backup-round-trips.js';

/*
 * Backups end to end of a MySQL service (the mysql:8.4 stand-in: MariaDB 10.11 with its own mysqldump
 * and mysql client) and a ClickHouse service (the clickhouse-server:24 stand-in: ClickHouse 18.16 with
 * its clickhouse-client), deployed by the platform, each through every storage, compared row by row
 * through the platform's own query console.
 */

const mysql: EngineCase<unknown> = {
  engine: 'mysql',
  format: 'sql',
  passwordKey: 'MYSQL_ROOT_PASSWORD',
  // MariaDB's mysqldump starts with its sandbox-mode line, then the usual header.
  magic: (bytes) =>
    expect(bytes.subarray(0, 300).toString('utf8')).toMatch(/^(\/\*M!999999\\- enable the sandbox mode \*\/ \n)?-- (MariaDB|MySQL) dump/),
  async write(db, tag) {
    await db.query('DROP TABLE IF EXISTS ledger');
    await db.query('DROP TABLE IF EXISTS extra');
    await db.query(
      'CREATE TABLE ledger (id int PRIMARY KEY, name varchar(200) CHARACTER SET utf8mb4, amount decimal(12,2), note text, at datetime)',
    );
    await db.query(
      `INSERT INTO ledger WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 400)
       SELECT n, CONCAT('row ', n, ' ✓ ${tag} ''q'' "d"'), n * 1.25, IF(n % 3 = 0, NULL, CONCAT('note\\t', n, '\\nline')),
              TIMESTAMP('2024-01-01 00:00:00') + INTERVAL n MINUTE FROM s`,
    );
  },
  snapshot: async (db) => {
    const { rows } = await db.query('SELECT * FROM ledger ORDER BY id');
    expect(rows).toHaveLength(400);
    return rows;
  },
  async mangle(db) {
    await db.query("UPDATE ledger SET name = 'changed' WHERE id <= 100");
    await db.query('DELETE FROM ledger WHERE id > 300');
    await db.query('CREATE TABLE IF NOT EXISTS extra (id int)');
    await db.query('DROP TABLE ledger');
    // What the snapshot reads must exist for the refusal test's "current" snapshot: the table is back, emptier.
    await db.query('CREATE TABLE ledger (id int PRIMARY KEY, name text, amount decimal(12,2), note text, at datetime)');
    await db.query(
      "INSERT INTO ledger WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < 400) SELECT n, 'mangled', 0, NULL, NULL FROM s",
    );
  },
};

const clickhouse: EngineCase<unknown> = {
  engine: 'clickhouse',
  format: 'native',
  passwordKey: 'CLICKHOUSE_PASSWORD',
  magic: (bytes) => expect(bytes.subarray(0, 27).toString()).toBe('SLIPWAY-CLICKHOUSE-NATIVE 1'),
  async write(db, tag) {
    for (const table of ['events_view', 'events', 'notes', 'extra']) await db.query(`DROP TABLE IF EXISTS ${table}`);
    await db.query(
      'CREATE TABLE events (id UInt64, name String, at DateTime, tags Array(String), amount Nullable(Float64)) ENGINE = MergeTree ORDER BY id',
    );
    await db.query(
      `INSERT INTO events SELECT number, concat('event ', toString(number), ' ${tag}\\t"q"\\n✓'), toDateTime(1700000000 + number),
       [concat('t', toString(number % 7)), 'x'], if(number % 5 = 0, NULL, number / 4) FROM system.numbers LIMIT 2500`,
    );
    await db.query('CREATE TABLE notes (id UInt32, body String) ENGINE = TinyLog');
    await db.query(`INSERT INTO notes VALUES (1, 'one ${tag}'), (2, 'two')`);
    await db.query('CREATE VIEW events_view AS SELECT id, name FROM events WHERE id % 100 = 0');
  },
  snapshot: async (db) => {
    // The console answers at most 1,000 rows: read in pages.
    const events: unknown[] = [];
    for (let offset = 0; offset < 2500; offset += 1000)
      events.push(...(await db.query(`SELECT * FROM events ORDER BY id LIMIT ${offset}, 1000`)).rows);
    expect(events).toHaveLength(2500);
    return {
      events,
      notes: (await db.query('SELECT * FROM notes ORDER BY id')).rows,
      view: (await db.query('SELECT * FROM events_view ORDER BY id')).rows,
    };
  },
  async mangle(db) {
    await db.query('DROP TABLE events_view');
    await db.query('DROP TABLE events');
    await db.query('CREATE TABLE events (id UInt64, name String, at DateTime, tags Array(String), amount Nullable(Float64)) ENGINE = Log');
    await db.query("INSERT INTO events SELECT number, 'mangled', toDateTime(0), [], NULL FROM system.numbers LIMIT 2500");
    await db.query('CREATE VIEW events_view AS SELECT id, name FROM events WHERE id < 3');
    await db.query("INSERT INTO notes VALUES (3, 'after the backup')");
    await db.query('CREATE TABLE IF NOT EXISTS extra (id UInt8) ENGINE = TinyLog');
  },
  async afterRestore(db: Database) {
    // Tables made after the backup are kept, as PostgreSQL's restore keeps them.
    expect((await db.query('SELECT count() AS n FROM extra')).rows).toHaveLength(1);
  },
};

describe('backups of MySQL and ClickHouse services', () => {
  backupRoundTrips([mysql, clickhouse]);
});
