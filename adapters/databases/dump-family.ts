import type { Readable } from 'node:stream';
import type { BackupFormat, RunningDump } from '../../src/index.js';
import type { ContainerExec } from './container-exec.js';

/**
 * One engine family's backups, with its own tools in the database's container: what the dump is
 * (`format`), how it is made, and how it replaces the database's contents. `env` is the service's
 * resolved env: where the passwords come from (they reach a tool through its env or a mode-600 option
 * file, never argv).
 */
export interface DumpFamily {
  format: BackupFormat;
  dump(exec: ContainerExec, env: Record<string, string>): Promise<RunningDump>;
  restore(exec: ContainerExec, env: Record<string, string>, input: Readable): Promise<void>;
}

/** Removes what `cleanup` names once `dump` ended, however it ended. */
export function afterDump(dump: RunningDump, cleanup: () => Promise<void>): RunningDump {
  const done = dump.done.finally(cleanup);
  done.catch(() => undefined);
  return { stream: dump.stream, done };
}
