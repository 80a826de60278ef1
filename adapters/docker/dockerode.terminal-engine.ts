import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { posix } from 'node:path';
import type Docker from 'dockerode';
import type { ExecRequest, TerminalEngine, TerminalProcess } from '../../src/terminals/terminal-engine.port.js';
import type { ReplicaEngines } from './replica-engines.js';

const CALL_TIMEOUT_MS = 10_000;
/**
 * Ends a terminal's processes inside a container on another server, whose PIDs the platform cannot signal: every
 * process carrying the terminal's mark in its environment (the shell and what it started inherit it). A constant
 * script; the mark reaches it as `SLIPWAY_TERMINAL_KILL` in its own environment, never in the script's text.
 */
const KILL_MARKED = [
  'for d in /proc/[0-9]*; do',
  '  if tr "\\000" "\\n" < "$d/environ" 2>/dev/null | grep -qx "SLIPWAY_TERMINAL=$SLIPWAY_TERMINAL_KILL"; then kill -9 "${d#/proc/}" 2>/dev/null; fi',
  'done',
  'true',
].join('\n');
const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';
/** Go's os.ModeDir, as the engine reports a path's mode. */
const MODE_DIR = 2 ** 31;

/**
 * Interactive `docker exec` with a TTY. The engine has no call to end an exec process, and it keeps
 * running when the attach connection closes (moby#9098): kill() signals it by its host PID, which the
 * engine reports, so the platform must share the host's PID namespace (it does outside a container;
 * in one, only with `pid: host`; docs/terminals-and-mcp.md).
 *
 * A task on another node of the cluster (or a database placed there) is exec'd into through that node's engine over
 * mutual TLS (ReplicaEngines); its PIDs are another host's, so kill() there ends the terminal's processes from inside
 * the container: each carries a random mark in its environment, and a constant script run by a second exec kills
 * the processes with that mark (an image without `sh`, `tr` and `grep` keeps them running; docs/cluster.md).
 */
export class DockerodeTerminalEngine implements TerminalEngine {
  constructor(
    private readonly docker: Docker,
    /** The cluster's nodes' engines; without it, the local engine only. */
    private readonly replicas: ReplicaEngines | null = null,
    /** The engine of a container the platform runs on another server (a database placed there); the platform's own otherwise. */
    private readonly placed: ((containerId: string) => Docker) | null = null,
  ) {}

  /** The engine that runs the container: the platform's own unless it is a task on another node (or a database placed on one). */
  private async engineOf(nodeId: string | null | undefined, containerId: string): Promise<Docker> {
    if (!nodeId) return this.placed?.(containerId) ?? this.docker;
    if (!this.replicas) throw new Error('This platform reaches no other server\u2019s engine');
    return this.replicas.dockerOf(nodeId);
  }

  async resolveCommand(containerId: string, command: string, signal: AbortSignal, nodeId?: string | null): Promise<string | null> {
    const container = (await this.engineOf(nodeId, containerId)).getContainer(containerId);
    let candidates: string[];
    if (command.startsWith('/')) candidates = [posix.normalize(command)];
    else if (command.includes('/')) return null;
    else {
      const info = (await container.inspect({
        abortSignal: timeout(signal),
      } as Docker.ContainerInspectOptions)) as Docker.ContainerInspectInfo;
      const pathVar = (info.Config.Env ?? []).find((e) => e.startsWith('PATH='))?.slice(5) || DEFAULT_PATH;
      candidates = pathVar
        .split(':')
        .filter((dir) => dir.startsWith('/'))
        .map((dir) => posix.join(dir, command));
    }
    for (const candidate of candidates) if (await this.isExecutable(container, candidate, signal)) return candidate;
    return null;
  }

  /** A stat of the path through the archive API: works in images without a shell or any tool. */
  private async isExecutable(container: Docker.Container, file: string, signal: AbortSignal): Promise<boolean> {
    try {
      const response = (await container.infoArchive({ path: file, abortSignal: timeout(signal) } as never)) as {
        headers?: Record<string, string | undefined>;
        resume?: () => void;
      };
      response.resume?.();
      const header = response.headers?.['x-docker-container-path-stat'];
      if (!header) return true;
      const stat = JSON.parse(Buffer.from(header, 'base64').toString('utf8')) as { mode?: number; linkTarget?: string };
      const mode = stat.mode ?? 0;
      // A symbolic link (/bin/sh -> busybox) reports the link's own mode: executable enough to try.
      return (mode & MODE_DIR) === 0 && (mode & 0o111) !== 0;
    } catch (error) {
      if ((error as { statusCode?: number }).statusCode === 404) return false;
      throw error;
    }
  }

  async exec(request: ExecRequest): Promise<TerminalProcess> {
    const docker = await this.engineOf(request.nodeId, request.containerId);
    const container = docker.getContainer(request.containerId);
    // The host's PIDs are ours to signal only for a container on the platform's own engine.
    const local = docker === this.docker;
    // The mark that finds this terminal's processes on another server (KILL_MARKED).
    const mark = randomBytes(12).toString('hex');
    const exec = await container.exec({
      Cmd: request.cmd,
      AttachStdin: true,
      AttachStdout: true,
      AttachStderr: true,
      Tty: true,
      Env: ['TERM=xterm-256color', ...(local ? [] : [`SLIPWAY_TERMINAL=${mark}`])],
      abortSignal: timeout(request.signal),
    } as never);
    // No abort signal on the attach: aborting it later would destroy the hijacked socket it became.
    const stream = await exec.start({ hijack: true, stdin: true, Tty: true } as never);
    const inspect = (): Promise<Docker.ExecInspectInfo> => exec.inspect({ abortSignal: timeout() } as Docker.ExecInspectOptions);
    const resize = async (cols: number, rows: number) => {
      await exec.resize({ w: cols, h: rows, abortSignal: timeout() } as never);
    };
    // The first size is set once the process exists; a failed resize of a process that already ended is fine.
    await resize(request.cols, request.rows).catch(() => {});
    return {
      stream,
      resize,
      async exitCode() {
        // The engine records the exit code a moment after the output ends.
        for (let attempt = 0; attempt < 50; attempt++) {
          const info = await inspect();
          if (!info.Running) return info.ExitCode;
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
        return null;
      },
      async running() {
        return (await inspect()).Running;
      },
      async kill() {
        stream.destroy();
        if (!local) {
          // Another server's PIDs: its processes end from inside the container, found by their mark.
          const killer = await container
            .exec({
              Cmd: ['sh', '-c', KILL_MARKED],
              Env: [`SLIPWAY_TERMINAL_KILL=${mark}`],
              AttachStdout: true,
              AttachStderr: true,
              abortSignal: timeout(),
            } as never)
            .catch(() => null);
          const out = (await killer?.start({ abortSignal: timeout() } as never).catch(() => null)) as NodeJS.ReadableStream | null;
          if (out)
            await new Promise<void>((resolve) =>
              out
                .on('end', resolve)
                .on('error', () => resolve())
                .resume(),
            );
          return;
        }
        const info = await inspect().catch(() => null);
        if (!info?.Running || !info.Pid) return;
        // The PID must still be this container's process: it may have ended and the number been reused.
        const cgroup = await readFile(`/proc/${info.Pid}/cgroup`, 'utf8').catch(() => '');
        if (!info.ContainerID || !cgroup.includes(info.ContainerID)) return;
        // Its process group first (what it started in the foreground), then the process itself.
        for (const target of [-info.Pid, info.Pid]) {
          try {
            process.kill(target, 'SIGKILL');
          } catch {
            // Gone already, or not in our PID namespace (see the class comment).
          }
        }
      },
    };
  }
}

function timeout(signal?: AbortSignal, ms = CALL_TIMEOUT_MS): AbortSignal {
  return signal ? AbortSignal.any([signal, AbortSignal.timeout(ms)]) : AbortSignal.timeout(ms);
}
