import type { Readable } from 'node:stream';
import type { DatabaseEngine } from '../domain/database-engines.js';
import type { BackupFormat } from './backup.records.js';

/** The database's container and what its tools log in with (the service's resolved env). */
export interface DumpTarget {
  engine: DatabaseEngine;
  containerId: string;
  env: Record<string, string>;
}

/** Where a database's tools run, and the address its server answers on (for the engines counted over the wire). */
export interface CountTarget extends DumpTarget {
  host: string | null;
}

/**
 * What a database holds, counted with the engine's own means: rows per table (SQL engines), keys per
 * logical database (Redis), documents per collection (MongoDB). A drill compares a restored copy's counts
 * with those recorded when the backup was made.
 */
export interface EngineCounts {
  unit: 'rows' | 'keys' | 'documents';
  counts: Record<string, number>;
  /** Items whose count may fall by itself (Redis keys with a TTL): the least each may fall to. */
  floors?: Record<string, number>;
}

/** A dump under way: its bytes, and how the tool ended (rejects with the tool's own message). */
export interface RunningDump {
  stream: Readable;
  done: Promise<void>;
}

/**
 * Dumps and restores a database with the engine's own tools, run inside its container (argv, never a
 * shell string); the bytes stream through, never held whole. One implementation per engine family.
 */
export interface DatabaseDump {
  /** The format this engine's dump is in; null when the platform cannot back it up. */
  formatOf(engine: DatabaseEngine): BackupFormat | null;
  dump(target: DumpTarget, signal: AbortSignal, log: (line: string) => void): Promise<RunningDump>;
  /** Replaces the database's contents with the dump read from `input`; rejects with the tool's message. */
  restore(target: DumpTarget, input: Readable, signal: AbortSignal, log: (line: string) => void): Promise<void>;
  /** Counts what the database holds (every table, logical database or collection); absent: the platform cannot count it. */
  count?(target: CountTarget, signal: AbortSignal, log: (line: string) => void): Promise<EngineCounts>;
}
