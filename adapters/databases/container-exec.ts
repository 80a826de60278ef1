import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { PassThrough, Readable, Transform, Writable, type Duplex, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { StringDecoder } from 'node:string_decoder';
import type Docker from 'dockerode';

const STDERR_TAIL = 4_000;
const EXIT_WAIT_MS = 10_000;
const CREATE_TIMEOUT_MS = 30_000;
/** What `run` keeps of a command's stdout: the small answers of helper commands. */
const OUTPUT_MAX = 1024 * 1024;

/**
 * The engine client that reaches a container: the platform's own, or (on the cluster) the engine of the server a
 * database runs on (PlacedContainerEngine.dockerOfContainer).
 */
export type DockerOf = (containerId: string) => Docker;

/** One engine for every container, or a lookup per container. */
export function dockerOf(docker: Docker | DockerOf): DockerOf {
  return typeof docker === 'function' ? docker : () => docker;
}

/** A command started in the container: its stdout, and how it ended (rejects with the tool's own message). */
export interface ExecRun {
  stdout: Readable;
  done: Promise<void>;
  /** The last lines it wrote on stderr (read once `stdout` ended). */
  stderr(): string;
}

export interface ExecOptions {
  /** The command's environment: where passwords go, never argv. */
  env?: Record<string, string>;
  /** Fed to the command's stdin, then closed (the tool's end of input). */
  stdin?: Readable;
}

/**
 * Commands run with `docker exec` in one container (argv, never a shell string): stdout streamed with
 * backpressure, stderr to the log line by line, the exit code checked. The signal ends whatever runs.
 */
export class ContainerExec {
  constructor(
    private readonly docker: Docker,
    readonly containerId: string,
    readonly signal: AbortSignal,
    readonly log: (line: string) => void,
  ) {}

  /** The same container with another signal (a step that must finish once begun). */
  withSignal(signal: AbortSignal): ContainerExec {
    return new ContainerExec(this.docker, this.containerId, signal, this.log);
  }

  /** Starts `cmd`; the caller reads `stdout` (nobody reading holds the tool, as a full pipe does). */
  async stream(cmd: string[], options: ExecOptions = {}): Promise<ExecRun> {
    const signal = this.signal;
    // The input may fail before the exec exists: its error is read from the stream once piped, never thrown as uncaught.
    options.stdin?.on('error', () => undefined);
    if (signal.aborted) throw abortReason(signal);
    const exec = await this.docker.getContainer(this.containerId).exec({
      Cmd: cmd,
      Env: Object.entries(options.env ?? {}).map(([k, v]) => `${k}=${v}`),
      AttachStdin: !!options.stdin,
      AttachStdout: true,
      AttachStderr: true,
      abortSignal: AbortSignal.any([signal, AbortSignal.timeout(CREATE_TIMEOUT_MS)]),
    } as Docker.ExecCreateOptions);
    const raw = (await exec.start({ hijack: true, stdin: !!options.stdin })) as Duplex;
    const onAbort = () => raw.destroy(abortReason(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    const demux = new DockerStreamDemux(this.log);
    raw.on('error', (error) => demux.destroy(error));
    // A connection closed early (input that failed, see below) ends the output too: nothing more comes.
    raw.once('close', () => {
      if (!demux.writableEnded && !demux.destroyed) demux.end();
    });
    // A reader that gave up (a failed upload, a full disk) ends the exec too: the tool gets EPIPE and stops.
    demux.once('close', () => raw.destroy());
    raw.pipe(demux);
    const ended = new Promise<void>((resolve, reject) => {
      demux.once('end', resolve);
      demux.once('error', reject);
      demux.once('close', () => resolve());
    });
    // Half-closing the connection is the tool's end of input.
    const writing = options.stdin
      ? pipeline(
          options.stdin,
          new Writable({
            highWaterMark: 1 << 20,
            write: (chunk, _enc, cb) => void raw.write(chunk, cb),
            final: (cb) => {
              raw.end();
              cb();
            },
          }),
        )
      : Promise.resolve();
    // Input that failed ends the tool: its stdin closes, and it does not wait for more.
    writing.catch(() => raw.destroy());
    const tool = cmd[0]!;
    const done = (async () => {
      try {
        const [output, input] = await Promise.allSettled([ended, writing]);
        // The tool's own exit says most: a tool that failed also broke the pipe its input came through.
        await checkExit(exec, tool, demux.stderrTail(), signal);
        if (output.status === 'rejected') throw output.reason;
        if (input.status === 'rejected') throw input.reason;
      } finally {
        signal.removeEventListener('abort', onAbort);
        options.stdin?.destroy();
      }
    })();
    done.catch(() => undefined);
    return { stdout: demux, done, stderr: () => demux.stderrTail() };
  }

  /** Runs `cmd` to its end; resolves with its stdout (the first MiB), rejects with its message. */
  async run(cmd: string[], options: ExecOptions = {}): Promise<string> {
    const started = await this.stream(cmd, options);
    const chunks: Buffer[] = [];
    let kept = 0;
    const collecting = pipeline(
      started.stdout,
      new Writable({
        write(chunk: Buffer, _enc, cb) {
          if (kept < OUTPUT_MAX) chunks.push(chunk.subarray(0, OUTPUT_MAX - kept));
          kept += chunk.length;
          cb();
        },
      }),
    );
    const [collected] = await Promise.allSettled([collecting, started.done]);
    await started.done;
    if (collected.status === 'rejected') throw collected.reason;
    return Buffer.concat(chunks).toString('utf8');
  }

  /**
   * A file only the exec's user can read (mode 600), for what a tool must not get in argv (a password
   * in an option file): put into the container's /tmp through the archive API, never through a
   * command line, and removed by `remove` (the container's own disk, not its data volume).
   */
  async secretFile(suffix: string, content: string): Promise<{ path: string; remove(): Promise<void> }> {
    const [uid, gid] = (await Promise.all([this.run(['id', '-u']), this.run(['id', '-g'])])).map((s) => Number(s.trim()));
    const name = `slipway-${randomBytes(8).toString('hex')}${suffix}`;
    const archive = tarOf(name, Buffer.from(content, 'utf8'), { mode: 0o600, uid: uid ?? 0, gid: gid ?? 0 });
    await this.docker.getContainer(this.containerId).putArchive(archive, {
      path: '/tmp',
      abortSignal: AbortSignal.any([this.signal, AbortSignal.timeout(CREATE_TIMEOUT_MS)]),
    } as never);
    const path = `/tmp/${name}`;
    return {
      path,
      // Removed even when the work was aborted: its own short timeout, not the work's signal.
      remove: () =>
        this.withSignal(AbortSignal.timeout(CREATE_TIMEOUT_MS))
          .run(['rm', '-f', path])
          .then(
            () => undefined,
            (error: Error) => this.log(`Could not remove ${path} from the container: ${error.message}`),
          ),
    };
  }

  /** Restarts the container (stop within `graceSeconds`, then start), as `docker restart` does. */
  async restart(graceSeconds: number): Promise<void> {
    await this.docker.getContainer(this.containerId).restart({
      t: graceSeconds,
      abortSignal: AbortSignal.any([this.signal, AbortSignal.timeout((graceSeconds + 60) * 1000)]),
    } as never);
  }
}

/** Writes `chunk`, waiting while the stream is full; rejects once the stream was destroyed. */
export async function writeWithBackpressure(stream: Writable, chunk: Buffer): Promise<void> {
  if (stream.destroyed) throw stream.errored ?? new Error('the stream was closed');
  if (stream.write(chunk)) return;
  const closed = new AbortController();
  try {
    await Promise.race([
      once(stream, 'drain', { signal: closed.signal }),
      once(stream, 'close', { signal: closed.signal }).then(() => {
        throw stream.errored ?? new Error('the stream was closed');
      }),
    ]);
  } finally {
    closed.abort();
  }
}

/** A Readable fed by `fill` (which writes with backpressure), and `fill`'s end; its failure destroys the stream. */
export function produced(fill: (out: PassThrough) => Promise<void>, highWaterMark = 1 << 20): { stream: PassThrough; done: Promise<void> } {
  const stream = new PassThrough({ highWaterMark });
  const done = fill(stream).then(
    () => void stream.end(),
    (error: unknown) => {
      const failure = error instanceof Error ? error : new Error(String(error));
      stream.destroy(failure);
      throw failure;
    },
  );
  done.catch(() => undefined);
  return { stream, done };
}

function abortReason(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error('aborted');
}

/** How the tool ended: a non-zero exit is an error with what it wrote on stderr. */
async function checkExit(exec: Docker.Exec, tool: string, stderr: string, signal: AbortSignal): Promise<void> {
  if (signal.aborted) throw abortReason(signal);
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

/** One regular file as a POSIX tar archive (a 512-byte ustar header, the content padded, two zero blocks). */
export function tarOf(name: string, content: Buffer, owner: { mode: number; uid: number; gid: number }): Buffer {
  const header = Buffer.alloc(512);
  const field = (offset: number, length: number, value: string) => header.write(value, offset, length, 'ascii');
  const octal = (offset: number, length: number, value: number) =>
    field(offset, length, `${value.toString(8).padStart(length - 1, '0')}\0`);
  if (Buffer.byteLength(name) > 99) throw new Error('tar entry name too long');
  header.write(name, 0, 100, 'utf8');
  octal(100, 8, owner.mode);
  octal(108, 8, owner.uid);
  octal(116, 8, owner.gid);
  octal(124, 12, content.length);
  octal(136, 12, Math.floor(Date.now() / 1000));
  field(148, 8, '        ');
  field(156, 1, '0');
  field(257, 6, 'ustar\0');
  field(263, 2, '00');
  let sum = 0;
  for (const byte of header) sum += byte;
  field(148, 8, `${sum.toString(8).padStart(6, '0')}\0 `);
  const padding = Buffer.alloc((512 - (content.length % 512)) % 512);
  return Buffer.concat([header, content, padding, Buffer.alloc(1024)]);
}

/**
 * Docker's multiplexed exec stream (8-byte frame headers) to the tool's stdout, as a stream with
 * backpressure; stderr goes to the log, line by line, and its tail is kept for the error message.
 * Stdout payloads are passed on as views of the chunks read, never copied: pg_dump writes 4 KiB
 * blocks, so pieces are small, yet copying them into larger ones doubles the memory allocated outside
 * V8's heap, which is what sets off its full collections (measured with a platform-sized heap: more
 * CPU in the collector than the fewer pieces save).
 */
export class DockerStreamDemux extends Transform {
  private readonly header = Buffer.alloc(8);
  private headerFill = 0;
  private remaining = 0;
  private kind = 0;
  private readonly decoder = new StringDecoder('utf8');
  private stderrText = '';
  private stderrLine = '';

  constructor(private readonly log: (line: string) => void) {
    super({ highWaterMark: 1 << 20 });
  }

  stderrTail(): string {
    return (this.stderrText + this.stderrLine).slice(-STDERR_TAIL);
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    let offset = 0;
    while (offset < chunk.length) {
      if (this.remaining === 0) {
        const take = Math.min(8 - this.headerFill, chunk.length - offset);
        chunk.copy(this.header, this.headerFill, offset, offset + take);
        this.headerFill += take;
        offset += take;
        if (this.headerFill < 8) break;
        this.headerFill = 0;
        this.kind = this.header[0]!;
        this.remaining = this.header.readUInt32BE(4);
        continue;
      }
      const take = Math.min(this.remaining, chunk.length - offset);
      const payload = chunk.subarray(offset, offset + take);
      offset += take;
      this.remaining -= take;
      if (this.kind === 1) this.push(payload);
      else this.stderr(this.decoder.write(payload));
    }
    callback();
  }

  override _flush(callback: TransformCallback): void {
    const rest = this.stderrLine + this.decoder.end();
    if (rest.trim()) {
      this.log(rest);
      this.stderrText = `${this.stderrText}${rest}`.slice(-STDERR_TAIL);
    }
    this.stderrLine = '';
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

/** Bytes of a stream read as lines and exact counts, with backpressure (nothing read ahead of a chunk). */
export class ByteReader {
  private readonly iterator: AsyncIterator<Buffer>;
  private buffer: Buffer = Buffer.alloc(0);

  constructor(stream: Readable) {
    this.iterator = stream[Symbol.asyncIterator]();
  }

  /** More bytes into the buffer; false at the end of the stream. */
  private async more(): Promise<boolean> {
    const { value, done } = await this.iterator.next();
    if (done) return false;
    this.buffer = this.buffer.length > 0 ? Buffer.concat([this.buffer, value]) : value;
    return true;
  }

  /** The next line without its `\n`; null at the end of the stream; throws past `max` bytes. */
  async line(max: number): Promise<string | null> {
    for (;;) {
      const end = this.buffer.indexOf(0x0a);
      if (end >= 0) {
        const text = this.buffer.subarray(0, end).toString('utf8');
        this.buffer = this.buffer.subarray(end + 1);
        return text;
      }
      if (this.buffer.length > max) throw new Error(`a line of over ${max} bytes`);
      if (!(await this.more())) {
        if (this.buffer.length > 0) throw new Error('the stream ends inside a line');
        return null;
      }
    }
  }

  /** Exactly `n` bytes, handed out in pieces as they come (views of the chunks read). */
  async *bytes(n: number): AsyncGenerator<Buffer> {
    let left = n;
    while (left > 0) {
      if (this.buffer.length === 0 && !(await this.more())) throw new Error(`the stream ends ${left} bytes early`);
      const piece = this.buffer.subarray(0, Math.min(left, this.buffer.length));
      this.buffer = this.buffer.subarray(piece.length);
      left -= piece.length;
      yield piece;
    }
  }

  async atEnd(): Promise<boolean> {
    return this.buffer.length === 0 && !(await this.more());
  }
}

/** A readable of a few bytes (a small file's content for a command's stdin). */
export function bytesOf(text: string): Readable {
  return Readable.from([Buffer.from(text, 'utf8')]);
}
