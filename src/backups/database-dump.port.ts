import type { Readable } from 'node:stream';
import type { DatabaseEngine } from '../domain/database-engines.js';
import type { BackupFormat } from './backup.records.js';

/** The database's container and what its tools log in with (the service's resolved env). */
export interface DumpTarget {
  engine: DatabaseEngine;
  containerId: string;
  env: Record<string, string>;
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
}
