import { Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Duplex } from 'node:stream';
import type Docker from 'dockerode';
import { ImportFailure, type ImportTarget, type ImportWork } from '../../src/imports/data-importer.port.js';

/** Lines of a tool's stderr kept for the failure message. */
const STDERR_TAIL = 20;

/**
 * PostgreSQL imports where the tools are: `pg_dump -Fc` of the source and `pg_restore` into the
 * service both run in the service's own container (its image has both, of its own major version),
 * as two execs with argv only. The dump's stdout is streamed into the restore's stdin through this
 * process with backpressure, so neither the dump nor a copy of it is ever whole anywhere.
 *
 * The source's credentials reach pg_dump through its exec's environment (PGHOST, PGPASSWORD...),
 * never its argv (which `ps` shows) or a log line; the restore logs in over TCP with the service's own.
 */
export class DockerExecPostgresImporter {
  /** The engine client of the target's container: the platform's own, or the server's a database runs on. */
  private readonly docker: (containerId: string) => Docker;

  constructor(docker: Docker | ((containerId: string) => Docker)) {
    this.docker = typeof docker === 'function' ? docker : () => docker;
  }

  async importPostgres(source: URL, target: ImportTarget, work: ImportWork): Promise<void> {
    const container = this.docker(target.containerId).getContainer(target.containerId);
    const dumpEnv = sourceEnv(source, work.connectTimeoutMs);
    const restoreEnv = {
      PGHOST: '127.0.0.1',
      PGPORT: String(target.port),
      PGUSER: target.env.POSTGRES_USER ?? 'postgres',
      PGPASSWORD: target.env.POSTGRES_PASSWORD ?? '',
      PGDATABASE: target.env.POSTGRES_DB ?? target.env.POSTGRES_USER ?? 'postgres',
    };
    work.log('Starting pg_dump (custom format) of the source, streamed into pg_restore');
    const dump = await container.exec({
      Cmd: ['pg_dump', '--format=custom', '--no-owner', '--no-privileges'],
      Env: envList(dumpEnv),
      AttachStdout: true,
      AttachStderr: true,
    });
    const restore = await container.exec({
      // One transaction: a restore that fails leaves the database as it was.
      Cmd: [
        'pg_restore',
        '--no-owner',
        '--no-privileges',
        '--clean',
        '--if-exists',
        '--single-transaction',
        '--dbname',
        restoreEnv.PGDATABASE,
      ],
      Env: envList(restoreEnv),
      AttachStdin: true,
      AttachStdout: true,
      AttachStderr: true,
    });
    const dumpErr: string[] = [];
    const restoreErr: string[] = [];
    const restoreStream = (await restore.start({ hijack: true, stdin: true })) as Duplex;
    const restoreOutput = drain(restoreStream, (line) => pushTail(restoreErr, line));
    const dumpStream = (await dump.start({ hijack: true, stdin: false })) as Duplex;
    let bytes = 0;
    const counter = new Transform({
      transform(chunk: Buffer, _enc, done) {
        bytes += chunk.length;
        done(null, chunk);
      },
    });
    const stop = () => {
      dumpStream.destroy();
      restoreStream.destroy();
    };
    work.signal.addEventListener('abort', stop, { once: true });
    let cut: Error | null = null;
    try {
      const demux = new StdoutOnly((line) => pushTail(dumpErr, line));
      // Ending the restore's stdin (half-close) is what tells pg_restore the archive is complete.
      await pipeline(dumpStream, demux, counter, endOnFinish(restoreStream), { signal: work.signal });
    } catch (error) {
      if (work.signal.aborted) throw work.signal.reason;
      cut = error as Error;
      restoreStream.end();
    }
    try {
      // The tools' own words say more than a broken pipe: wait for them before judging. An abort
      // destroys the stream, which ends this wait.
      const output = restoreOutput.catch(() => undefined);
      await (cut ? Promise.race([output, new Promise((r) => setTimeout(r, 5_000))]) : output);
    } finally {
      work.signal.removeEventListener('abort', stop);
    }
    if (work.signal.aborted) throw work.signal.reason;
    const dumped = await exitCode(dump);
    const restored = await exitCode(restore);
    for (const line of dumpErr) work.log(`pg_dump: ${line}`, 'stderr');
    for (const line of restoreErr) work.log(`pg_restore: ${line}`, 'stderr');
    if (dumped !== 0)
      throw new ImportFailure(`pg_dump could not dump the source (exit ${dumped}): ${dumpErr.at(-1) ?? 'no message'}`.trim());
    if (restored !== 0)
      throw new ImportFailure(`pg_restore could not restore the dump (exit ${restored}): ${restoreErr.at(-1) ?? 'no message'}`.trim());
    if (cut) throw new ImportFailure(`The copy was cut: ${cut.message}`);
    work.log(`Restored ${formatBytes(bytes)} of dump`);
  }
}

/** libpq's environment for the source: every part of the URL, the password only here. */
function sourceEnv(source: URL, connectTimeoutMs: number): Record<string, string> {
  const decode = (value: string) => {
    try {
      return decodeURIComponent(value);
    } catch {
      return value;
    }
  };
  const env: Record<string, string> = {
    PGHOST: source.hostname.replace(/^\[(.*)\]$/, '$1'),
    PGPORT: source.port || '5432',
    PGCONNECT_TIMEOUT: String(Math.max(1, Math.ceil(connectTimeoutMs / 1000))),
  };
  if (source.username) env.PGUSER = decode(source.username);
  if (source.password) env.PGPASSWORD = decode(source.password);
  const database = decode(source.pathname.replace(/^\//, ''));
  if (database) env.PGDATABASE = database;
  // The query parameters libpq knows as environment variables (sslmode and its friends).
  const known: Record<string, string> = {
    sslmode: 'PGSSLMODE',
    sslrootcert: 'PGSSLROOTCERT',
    application_name: 'PGAPPNAME',
    options: 'PGOPTIONS',
    target_session_attrs: 'PGTARGETSESSIONATTRS',
  };
  for (const [key, value] of source.searchParams) if (known[key]) env[known[key]] = value;
  return env;
}

function envList(env: Record<string, string>): string[] {
  return Object.entries(env).map(([key, value]) => `${key}=${value}`);
}

function pushTail(lines: string[], line: string): void {
  if (!line.trim()) return;
  lines.push(line.slice(0, 2000));
  if (lines.length > STDERR_TAIL) lines.shift();
}

/**
 * Docker's multiplexed exec output (8-byte frames: stream, 3 zeros, big-endian length) to its stdout
 * bytes, with stderr handed to `onStderr` line by line. A Transform, so backpressure reaches the dump.
 */
export class StdoutOnly extends Transform {
  private buffer: Buffer = Buffer.alloc(0);
  private stderrText = '';
  constructor(private readonly onStderr: (line: string) => void) {
    super();
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.buffer = this.buffer.length ? Buffer.concat([this.buffer, chunk]) : chunk;
    while (this.buffer.length >= 8) {
      const size = this.buffer.readUInt32BE(4);
      if (this.buffer.length < 8 + size) break;
      const payload = this.buffer.subarray(8, 8 + size);
      if (this.buffer[0] === 2) this.stderr(payload.toString('utf8'));
      else this.push(payload);
      this.buffer = this.buffer.subarray(8 + size);
    }
    done();
  }
  override _flush(done: TransformCallback): void {
    if (this.stderrText) this.onStderr(this.stderrText);
    done();
  }
  private stderr(text: string): void {
    const lines = (this.stderrText + text).split('\n');
    this.stderrText = lines.pop() ?? '';
    for (const line of lines) this.onStderr(line);
  }
}

/** The restore's stdin as a pipeline's end: written to with backpressure, half-closed at the end. */
function endOnFinish(socket: Duplex): Transform {
  const sink = new Transform({
    transform(chunk: Buffer, _enc, done) {
      if (socket.write(chunk)) done();
      else socket.once('drain', () => done());
    },
    flush(done) {
      socket.end();
      done();
    },
  });
  sink.resume();
  return sink;
}

/** Reads the restore's output to its end (pg_restore writes only to stderr), its stderr lines to `onStderr`. */
function drain(socket: Duplex, onStderr: (line: string) => void): Promise<void> {
  const demux = new StdoutOnly(onStderr);
  return new Promise<void>((resolve, reject) => {
    socket.on('error', reject);
    socket.on('end', () => {
      demux.end();
      resolve();
    });
    socket.on('close', () => resolve());
    socket.on('data', (chunk: Buffer) => demux.write(chunk));
    demux.resume();
  });
}

/** An exec's exit code, once Docker has it (it may lag the stream's end by a moment). */
async function exitCode(exec: Docker.Exec): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const info = await exec.inspect();
    if (!info.Running && info.ExitCode !== null) return info.ExitCode;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new ImportFailure('The import tools did not exit within 10 s of the end of the copy');
}

function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}
