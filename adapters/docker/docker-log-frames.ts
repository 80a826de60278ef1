import type { LogStream } from '../../src/domain/types.js';

export interface LogFrame {
  stream: LogStream;
  text: string;
}

/**
 * Splits Docker's multiplexed log stream (8-byte header: stream type, 3 zero bytes, big-endian
 * length) into frames, across chunk boundaries. Containers are started without a TTY, so their
 * logs are always framed.
 */
export class DockerFrameParser {
  private buffer: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): LogFrame[] {
    this.buffer = this.buffer.length ? Buffer.concat([this.buffer, chunk]) : chunk;
    const frames: LogFrame[] = [];
    while (this.buffer.length >= 8) {
      const size = this.buffer.readUInt32BE(4);
      if (this.buffer.length < 8 + size) break;
      const type = this.buffer[0];
      frames.push({ stream: type === 2 ? 'stderr' : 'stdout', text: this.buffer.subarray(8, 8 + size).toString('utf8') });
      this.buffer = this.buffer.subarray(8 + size);
    }
    return frames;
  }
}

/** `2026-11-21T12:00:00.123456789Z message` -> its time and text (Docker's `timestamps: true`). */
export function splitTimestamp(line: string): { timestamp: string; createdAt: Date; text: string } {
  const space = line.indexOf(' ');
  const timestamp = space > 0 ? line.slice(0, space) : '';
  const createdAt = new Date(timestamp);
  if (Number.isNaN(createdAt.getTime())) return { timestamp: '', createdAt: new Date(), text: line };
  return { timestamp, createdAt, text: line.slice(space + 1) };
}
