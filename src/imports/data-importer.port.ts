import type { DatabaseEngine } from '../domain/database-engines.js';
import type { LogStream } from '../domain/types.js';

/** The database service an import writes into: its current container, where it answers, and its env. */
export interface ImportTarget {
  serviceId: string;
  engine: DatabaseEngine;
  /** The container of the service's current deployment (PostgreSQL: the dump and the restore run in it). */
  containerId: string;
  /** Its address on the project network. */
  host: string;
  port: number;
  env: Record<string, string>;
}

export interface ImportWork {
  /** Lines for the import's log; the caller masks the secrets it knows of before storing them. */
  log(line: string, stream?: LogStream): void;
  /** Aborted when the import is stopped or times out; every step honours it. */
  signal: AbortSignal;
  /** Reaching the source gives up after this long. */
  connectTimeoutMs: number;
}

/**
 * Copies a source database into a service. The source URL carries the password: an adapter never
 * logs it, never puts it in a process's argv and never keeps it. A failure rejects with a message for
 * the user (an ImportFailure, or the engine's own words).
 */
export interface DataImporter {
  /** `pg_dump -Fc` of the source, streamed into `pg_restore` into the service's database. */
  importPostgres(source: URL, target: ImportTarget, work: ImportWork): Promise<void>;
  /** Every key of every logical database with its TTL (SCAN + DUMP / RESTORE REPLACE). */
  importRedis(source: URL, target: ImportTarget, work: ImportWork): Promise<void>;
}

/** What went wrong, in words for the user (never with a secret in them). */
export class ImportFailure extends Error {}
