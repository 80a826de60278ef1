import type { DatabaseEngine } from '../../src/domain/database-engines.js';
import type { DatabaseAdmin, DatabaseEndpoint } from '../../src/databases/database-admin.port.js';

/** One DatabaseAdmin for the platform: each call goes to the adapter of the endpoint's engine family. */
export class EngineDatabaseAdmin implements DatabaseAdmin {
  private readonly families: DatabaseAdmin[];

  constructor(private readonly byEngine: Record<DatabaseEngine, DatabaseAdmin>) {
    this.families = [...new Set(Object.values(byEngine))];
  }

  private of(db: DatabaseEndpoint): DatabaseAdmin {
    return this.byEngine[db.engine];
  }

  checkReady: DatabaseAdmin['checkReady'] = (db, signal) => this.of(db).checkReady(db, signal);
  listTables: DatabaseAdmin['listTables'] = (db, options, signal) => this.of(db).listTables(db, options, signal);
  readRows: DatabaseAdmin['readRows'] = (db, table, page, signal) => this.of(db).readRows(db, table, page, signal);
  query: DatabaseAdmin['query'] = (db, text, limits, signal) => this.of(db).query(db, text, limits, signal);
  insertRow: DatabaseAdmin['insertRow'] = (db, table, values, signal) => this.of(db).insertRow(db, table, values, signal);
  updateRow: DatabaseAdmin['updateRow'] = (db, table, key, values, signal) => this.of(db).updateRow(db, table, key, values, signal);
  deleteRow: DatabaseAdmin['deleteRow'] = (db, table, key, signal) => this.of(db).deleteRow(db, table, key, signal);

  async release(serviceId: string): Promise<void> {
    await Promise.all(this.families.map((family) => family.release(serviceId)));
  }

  async closeAll(): Promise<void> {
    await Promise.all(this.families.map((family) => family.closeAll()));
  }
}
