import { Transform, Writable, type Duplex, type Readable, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type Docker from 'dockerode';
import type { DatabaseDump, DumpTarget, RunningDump } from '../../src/index.js';

type Engine = DumpTarget['engine'];

/** What runs in the container: argv (never a shell string) and the env that carries the password. */
interface ToolCall {
  cmd: string[];
  env: Record<string, string>;
}

const STDERR_TAIL = 4_000;
const EXIT_WAIT_MS = 10_000;

/**
 * One engine family's dump and restore commands. PostgreSQL's serve TimescaleDB too; MySQL's are
 * MariaDB's as well. Redis, ClickHouse and MongoDB have none here (docs/backups.md says why).
 */
const FAMILIES: Partial<
  Record<Engine, { format: 'custom' | 'sql'; dump(env: Record<string, string>): ToolCall; restore(env: Record<string, string>): ToolCall }>
> = {};

const postgres = {
  format: 'custom' as const,
  dump: (env: Record<string, string>): ToolCall => ({
    cmd: ['pg_dump', '--format=custom', '--no-password', '-U', env.POSTGRES_USER ?? 'postgres', '-d', env.POSTGRES_DB ?? 'postgres'],
    env: { PGPASSWORD: env.POSTGRES_PASSWORD ?? '' },
  }),
  restore: (env: Record<string, string>): ToolCall => ({
    cmd: [
      'pg_restore',
      '--clean',
      '--if-exists',
      '--no-owner',
      '--single-transaction',
      '--exit-on-error',
      '--no-password',
      '-U',
      env.POSTGRES_USER ?? 'postgres',
      '-d',
      env.POSTGRES_DB ?? 'postgres',
    ],
    env: { PGPASSWORD: env.POSTGRES_PASSWORD ?? '' },
  }),
};
FAMILIES.postgres = postgres;
FAMILIES.timescale = postgres;
FAMILIES.mysql = {
  format: 'sql',
  dump: (env) => ({
    cmd: ['mysqldump', '--single-transaction', '--routines', '--triggers', '--events', '-uroot', env.MYSQL_DATABASE ?? 'mysql'],
    env: { MYSQL_PWD: env.MYSQL_ROOT_PASSWORD ?? '' },
  }),
  restore: (env) => ({ cmd: ['mysql', '-uroot', env.MYSQL_DATABASE ?? 'mysql'], env: { MYSQL_PWD: env.MYSQL_ROOT_PASSWORD ?? '' } }),
};

/** Dumps and restores with the engine's own tools, through `docker exec` in the database's container. */
export class DockerExecDatabaseDump implements DatabaseDump {
  constructor(private readonly docker: Docker) {}

  formatOf(engine: Engine): 'custom' | 'sql' | null {
    return FAMILIES[engine]?.format ?? null;
  }

  async dump(target: DumpTarget, signal: AbortSignal, log: (line: string) => void): Promise<RunningDump> {
    const family = FAMILIES[target.engine];
    if (!family) throw new Error(`no dump tool for ${target.engine}`);
    const call = family.dump(target.env);
    log(`Running ${call.cmd.join(' ')} in the database's container`);
    const exec = await this.docker.getContainer(target.containerId).exec({
      Cmd: call.cmd,
      Env: Object.entries(call.env).map(([k, v]) => `${k}=${v}`),
      AttachStdout: true,
      AttachStderr: true,
      abortSignal: AbortSignal.any([signal, AbortSignal.timeout(30_000)]),
    } as Docker.ExecCreateOptions);
    const raw = (await exec.start({ hijack: true, stdin: false })) as Duplex;
    const onAbort = () => raw.destroy(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    const demux = new DockerStreamDemux(log);
    raw.on('error', (error) => demux.destroy(error));
    // A reader that gave up (a failed upload, a full disk) ends the exec too: the tool gets EPIPE and stops.
    demux.once('close', () => raw.destroy());
    raw.pipe(demux);
    const ended = new Promise<void>((resolve, reject) => {
      demux.once('end', resolve);
      demux.once('error', reject);
      demux.once('close', () => resolve());
    });
    const done = (async () => {
      try {
        await ended;
        await checkExit(exec, call.cmd[0]!, demux.stderrTail(), signal);
      } finally {
        signal.removeEventListener('abort', onAbort);
      }
    })();
    done.catch(() => undefined);
    return { stream: demux, done };
  }

  async restore(target: DumpTarget, input: Readable, signal: AbortSignal, log: (line: string) => void): Promise<void> {
    const family = FAMILIES[target.engine];
    if (!family) throw new Error(`no restore tool for ${target.engine}`);
    const call = family.restore(target.env);
    log(`Running ${call.cmd.join(' ')} in the database's container`);
    const exec = await this.docker.getContainer(target.containerId).exec({
      Cmd: call.cmd,
      Env: Object.entries(call.env).map(([k, v]) => `${k}=${v}`),
      AttachStdin: true,
      AttachStdout: true,
      AttachStderr: true,
      abortSignal: AbortSignal.any([signal, AbortSignal.timeout(30_000)]),
    } as Docker.ExecCreateOptions);
    const raw = (await exec.start({ hijack: true, stdin: true })) as Duplex;
    const onAbort = () => raw.destroy(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    signal.addEventListener('abort', onAbort, { once: true });
    const demux = new DockerStreamDemux(log);
    try {
      const reading = pipeline(raw, demux, new Writable({ write: (_chunk, _enc, cb) => cb() }));
      // Half-closing the connection is the tool's end of input.
      const writing = pipeline(
        input,
        new Writable({
          write: (chunk, _enc, cb) => void raw.write(chunk, cb),
          final: (cb) => {
            raw.end();
            cb();
          },
        }),
      );
      await Promise.all([writing, reading]);
      await checkExit(exec, call.cmd[0]!, demux.stderrTail(), signal);
    } finally {
      signal.removeEventListener('abort', onAbort);
      input.destroy();
    }
  }
}

/** How the tool ended: a non-zero exit is an error with what it wrote on stderr. */
async function checkExit(exec: Docker.Exec, tool: string, stderr: string, signal: AbortSignal): Promise<void> {
  if (signal.aborted) throw signal.reason instanceof Error ? signal.reason : new Error('aborted');
  const deadline = Date.now() + EXIT_WAIT_MS;
  for (;;) {
    const info: Docker.ExecInspectInfo = await exec.inspect({
      abortSignal: AbortSignal.timeout(10_000),
    } as never as Docker.ExecInspectOptions);
    if (!info.Running && info.ExitCode !== null) {
      if (info.ExitCode === 0) return;
      if (info.ExitCode === 126 || info.ExitCode === 127)
        throw new Error(`${tool} is not in this database's image (exit ${info.ExitCode}): ${stderr.trim()}`);
      throw new Error(`${tool} exited with ${info.ExitCode}: ${stderr.trim() || 'no message'}`);
    }
    if (Date.now() > deadline) throw new Error(`${tool} did not end`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Docker's multiplexed exec stream (8-byte frame headers) to the tool's stdout, as a stream with
 * backpressure; stderr goes to the log, line by line, and its tail is kept for the error message.
 */
export class DockerStreamDemux extends Transform {
  private pending = Buffer.alloc(0);
  private stderrText = '';
  private stderrLine = '';

  constructor(private readonly log: (line: string) => void) {
    super({ highWaterMark: 1 << 20 });
  }

  stderrTail(): string {
    return (this.stderrText + this.stderrLine).slice(-STDERR_TAIL);
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    let buffer = this.pending.length > 0 ? Buffer.concat([this.pending, chunk]) : chunk;
    while (buffer.length >= 8) {
      const size = buffer.readUInt32BE(4);
      if (buffer.length < 8 + size) break;
      const kind = buffer[0];
      const payload = buffer.subarray(8, 8 + size);
      if (kind === 1) this.push(payload);
      else this.stderr(payload.toString('utf8'));
      buffer = buffer.subarray(8 + size);
    }
    this.pending = Buffer.from(buffer);
    callback();
  }

  override _flush(callback: TransformCallback): void {
    if (this.stderrLine) this.log(this.stderrLine);
    callback();
  }

  private stderr(text: string): void {
    const lines = (this.stderrLine + text).split('\n');
    this.stderrLine = lines.pop() ?? '';
    for (const line of lines) {
      if (!line.trim()) continue;
      this.log(line);
      this.stderrText = `${this.stderrText}${line}\n`.slice(-STDERR_TAIL);
    }
  }
}
