import type { DatabaseEngine } from '../domain/database-engines.js';

export interface ScratchDatabaseSpec {
  /** Names its container, network and volume (`<prefix>-drill-<id>`). */
  id: string;
  engine: DatabaseEngine;
  /** The engine's image (its setting). */
  image: string;
  /** The original's env: the engine's init reads its users and passwords from it, as at a deployment. */
  env: Record<string, string>;
  /** The engine's command (ENGINE_SPECS), or null for the image's own. */
  cmd: string[] | null;
  /** Where the engine keeps its data: a scratch volume is mounted there. */
  dataDir: string;
}

export interface ScratchDatabase {
  containerId: string;
  /** Its address on its private network (the platform's checks reach it there). */
  host: string;
}

/**
 * Databases that exist for one drill: the engine's image on a private network (no port published, no
 * alias, no domain) with a volume of their own, removed with it when the drill ends.
 */
export interface ScratchDatabases {
  start(spec: ScratchDatabaseSpec, signal: AbortSignal, log: (line: string) => void): Promise<ScratchDatabase>;
  /** Still running (a container that exited says why, with its last lines). */
  alive(id: string): Promise<{ running: boolean; lastLines: string[] }>;
  remove(id: string): Promise<void>;
  /** Leftovers of drills a stopped platform did not remove; resolves with what it removed. */
  sweep(): Promise<string[]>;
}
