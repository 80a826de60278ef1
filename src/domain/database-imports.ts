import type { DatabaseEngine } from './database-engines.js';
import type { LogStream } from './types.js';

/** Where an import reads from: a connection URL of the same engine family as the service. */
export const IMPORT_SOURCES = ['postgres-url', 'redis-url'] as const;
export type ImportSource = (typeof IMPORT_SOURCES)[number];

/** An import is `running` from the moment it is accepted; it ends `succeeded` or `failed` (with `error`). */
export const IMPORT_STATUSES = ['running', 'succeeded', 'failed'] as const;
export type ImportStatus = (typeof IMPORT_STATUSES)[number];

/** The engines each source imports into. */
export const IMPORT_TARGETS: Record<ImportSource, readonly DatabaseEngine[]> = {
  'postgres-url': ['postgres', 'timescale'],
  'redis-url': ['redis'],
};

/** One data import into a database service. The source URL itself is never kept: only `sourceLabel`. */
export interface DatabaseImportRecord {
  id: string;
  serviceId: string;
  engine: DatabaseEngine;
  source: ImportSource;
  /** `host:port/database` of the source: no user, no password, no query. */
  sourceLabel: string;
  status: ImportStatus;
  error: string | null;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
}

export interface DatabaseImportLogRecord {
  id: number;
  importId: string;
  line: string;
  stream: LogStream;
  createdAt: Date;
}
