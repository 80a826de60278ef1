import type { DatabaseAdmin } from '../../src/databases/database-admin.port.js';

/**
 * An engine family's adapter loaded on first use: its driver (pg, mysql2, ioredis, mongodb, the ClickHouse
 * client) costs memory from the start otherwise, on installs that may never run that engine.
 */
export function lazyDatabaseAdmin(load: () => Promise<DatabaseAdmin>): DatabaseAdmin {
  let loaded: Promise<DatabaseAdmin> | null = null;
  const admin = () => {
    loaded ??= load().catch((error: unknown) => {
      loaded = null;
      throw error;
    });
    return loaded;
  };
  return {
    checkReady: async (db, signal) => (await admin()).checkReady(db, signal),
    listTables: async (db, options, signal) => (await admin()).listTables(db, options, signal),
    readRows: async (db, table, page, signal) => (await admin()).readRows(db, table, page, signal),
    query: async (db, text, limits, signal) => (await admin()).query(db, text, limits, signal),
    insertRow: async (db, table, values, signal) => (await admin()).insertRow(db, table, values, signal),
    updateRow: async (db, table, key, values, signal) => (await admin()).updateRow(db, table, key, values, signal),
    deleteRow: async (db, table, key, signal) => (await admin()).deleteRow(db, table, key, signal),
    // Nothing loaded holds nothing to release.
    release: async (serviceId) => {
      if (loaded) await (await loaded).release(serviceId);
    },
    closeAll: async () => {
      if (loaded) await (await loaded).closeAll();
    },
  };
}
