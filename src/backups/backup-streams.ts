import { createHash, type Hash } from 'node:crypto';
import { Transform, Writable, type Readable, type TransformCallback } from 'node:stream';

/**
 * A few MiB between the dump and its destinations: enough that a slow write does not stall the dump
 * tool at once (it waits on its pipe otherwise), bounded whatever the backup's size.
 */
export const STREAM_BUFFER_BYTES = 4 * 1024 * 1024;

/** Counts and hashes the bytes passing through: the checksum is of exactly what was stored. */
export class HashingStream extends Transform {
  private readonly hash: Hash = createHash('sha256');
  private digest: string | null = null;
  bytes = 0;

  constructor() {
    super({ highWaterMark: STREAM_BUFFER_BYTES });
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.hash.update(chunk);
    this.bytes += chunk.length;
    callback(null, chunk);
  }

  /** `sha256:<hex>`, once the stream ended. */
  checksum(): string {
    this.digest ??= `sha256:${this.hash.digest('hex')}`;
    return this.digest;
  }
}

/**
 * Writes every chunk to each target and takes the next once none is full: the slowest destination
 * sets the pace, so nothing piles up beyond its buffer. A target is not waited for chunk by chunk:
 * a file stream gathers what came while it wrote and writes it at once (one writev, not one
 * thread-pool write per 4 KiB block of pg_dump).
 */
export class FanOut extends Writable {
  private failure: Error | null = null;

  constructor(private readonly targets: Writable[]) {
    super({ highWaterMark: STREAM_BUFFER_BYTES });
    for (const target of targets) target.on('error', (error: Error) => this.fail(error));
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    if (this.failure) {
      callback(this.failure);
      return;
    }
    // A failed write is also an 'error' event, which the constructor's listener turns into this.fail.
    const full = this.targets.filter((target) => !target.write(chunk));
    if (full.length === 0) {
      callback();
      return;
    }
    let waiting = full.length;
    let done = false;
    const settle = (error?: Error | null) => {
      if (done) return;
      if (error || --waiting === 0) {
        done = true;
        for (const target of full) {
          target.off('drain', onDrain);
          target.off('close', onClose);
        }
        callback(error ?? this.failure);
      }
    };
    const onDrain = () => settle();
    const onClose = () => settle(this.failure ?? new Error('a destination of the backup closed'));
    for (const target of full) {
      target.once('drain', onDrain);
      target.once('close', onClose);
    }
  }

  private fail(error: Error): void {
    if (this.failure) return;
    this.failure = error;
    this.destroy(error);
  }

  override _final(callback: (error?: Error | null) => void): void {
    Promise.all(this.targets.map((target) => endOf(target))).then(() => callback(), callback);
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    // Without the error: the fan-out reports it once, as its own 'error', not again through every target.
    for (const target of this.targets) if (!target.destroyed) target.destroy();
    callback(error);
  }
}

/** Ends a writable and resolves when it has flushed (a PassThrough: when its reader took the rest). */
function endOf(target: Writable): Promise<void> {
  return new Promise((resolve, reject) => {
    target.once('error', reject);
    target.end(() => resolve());
  });
}

/** Reads a stream to its end, hashing it: what a stored file's checksum is checked against. */
export async function hashOf(stream: Readable): Promise<{ checksum: string; bytes: number }> {
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of stream) {
    hash.update(chunk as Buffer);
    bytes += (chunk as Buffer).length;
  }
  return { checksum: `sha256:${hash.digest('hex')}`, bytes };
}
