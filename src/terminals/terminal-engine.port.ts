import type { Duplex } from 'node:stream';

export interface ExecRequest {
  containerId: string;
  /** The swarm node whose engine runs the container (a task on the cluster); null or absent: the platform's own engine. */
  nodeId?: string | null;
  /** argv, never a shell string. */
  cmd: string[];
  cols: number;
  rows: number;
  signal: AbortSignal;
}

/** An interactive process with a TTY: one byte stream each way (a TTY merges stdout and stderr). */
export interface TerminalProcess {
  stream: Duplex;
  resize(cols: number, rows: number): Promise<void>;
  /** The exit code once the process has ended (waits briefly for the engine to record it); null when unknown. */
  exitCode(): Promise<number | null>;
  /** Ends the process and everything it started in its terminal; fine when it already ended. */
  kill(): Promise<void>;
  /** Whether the engine still runs it. */
  running(): Promise<boolean>;
}

/** What a container terminal needs of the engine. Implemented over dockerode's exec. */
export interface TerminalEngine {
  /** The absolute path `command` resolves to inside the running container (an absolute path, or a name on its PATH); null when it has none. */
  resolveCommand(containerId: string, command: string, signal: AbortSignal, nodeId?: string | null): Promise<string | null>;
  exec(request: ExecRequest): Promise<TerminalProcess>;
}
