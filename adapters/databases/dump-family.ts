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

/** What a tool needs beside its argv: its env, and what to remove once it ended (an option file). */
interface ToolRun {
  env?: Record<string, string>;
  cleanup?: () => Promise<void>;
}

/** Starts a dump tool (logged by its argv, which holds no secret); `cleanup` runs once it ended, however. */
export async function dumpWith(exec: ContainerExec, cmd: string[], { env, cleanup }: ToolRun = {}): Promise<RunningDump> {
  try {
    exec.log(`Running ${cmd.join(' ')} in the database's container`);
    const run = await exec.stream(cmd, env ? { env } : {});
    const done = cleanup ? run.done.finally(cleanup) : run.done;
    done.catch(() => undefined);
    return { stream: run.stdout, done };
  } catch (error) {
    await cleanup?.();
    throw error;
  }
}

/** Runs a restore tool with the dump on its stdin; `cleanup` runs once it ended, however. */
export async function restoreWith(exec: ContainerExec, cmd: string[], input: Readable, { env, cleanup }: ToolRun = {}): Promise<void> {
  try {
    exec.log(`Running ${cmd.join(' ')} in the database's container`);
    await exec.run(cmd, { ...(env ? { env } : {}), stdin: input });
  } finally {
    await cleanup?.();
  }
}
