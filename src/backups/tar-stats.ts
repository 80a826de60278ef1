import { Transform, type TransformCallback } from 'node:stream';
import type { VolumeStats } from './volume-archive.port.js';

const BLOCK = 512;

/** A tar header's size field: octal digits, or GNU's base-256 (first byte 0x80) for sizes past 8 GiB. */
function sizeOf(header: Buffer): number {
  const field = header.subarray(124, 136);
  if (field[0]! & 0x80) {
    let value = 0;
    for (let i = 1; i < field.length; i++) value = value * 256 + field[i]!;
    return value;
  }
  const text = field.toString('ascii').replace(/\0.*$/s, '').trim();
  return text ? Number.parseInt(text, 8) : 0;
}

/**
 * Counts what a tar holds as it passes (nothing is held back): regular files (`0`, NUL, `7`) and hard
 * links (`1`) are files; the bytes are the regular files' (a hard link's are its target's). A pax header's
 * `size=` overrides the next entry's. The checks of a volume backup's drill compare these with find's.
 */
export class TarStats extends Transform {
  private pending = Buffer.alloc(0);
  /** Bytes of the current entry's data (and padding) still to skip. */
  private skip = 0;
  /** The pax extended header being read (its records apply to the next entry). */
  private pax: Buffer[] | null = null;
  private paxLeft = 0;
  private paxSize: number | null = null;
  private ended = false;
  readonly stats: VolumeStats = { files: 0, bytes: 0 };

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.scan(chunk);
    callback(null, chunk);
  }

  private scan(chunk: Buffer): void {
    let offset = 0;
    while (offset < chunk.length && !this.ended) {
      if (this.skip > 0) {
        const take = Math.min(this.skip, chunk.length - offset);
        if (this.pax && this.paxLeft > 0) {
          const part = chunk.subarray(offset, offset + Math.min(take, this.paxLeft));
          this.pax.push(Buffer.from(part));
          this.paxLeft -= part.length;
        }
        this.skip -= take;
        offset += take;
        if (this.skip === 0 && this.pax) this.endPax();
        continue;
      }
      const need = BLOCK - this.pending.length;
      const take = Math.min(need, chunk.length - offset);
      this.pending = Buffer.concat([this.pending, chunk.subarray(offset, offset + take)]);
      offset += take;
      if (this.pending.length < BLOCK) continue;
      const header = this.pending;
      this.pending = Buffer.alloc(0);
      this.header(header);
    }
  }

  private header(header: Buffer): void {
    if (header.every((b) => b === 0)) {
      // Two zero blocks end the archive; one alone is read as the first of them.
      this.ended = true;
      return;
    }
    const type = String.fromCharCode(header[156]!);
    const size = this.paxSize ?? sizeOf(header);
    if (type !== 'x' && type !== 'g') this.paxSize = null;
    if (type === '0' || type === '\0' || type === '7') {
      this.stats.files++;
      this.stats.bytes += size;
    } else if (type === '1') {
      this.stats.files++;
    }
    const dataSize = type === 'x' || type === 'g' ? sizeOf(header) : size;
    // Links, directories and devices carry no data (a hard link's size field is 0 in GNU and pax tars).
    const hasData = !['1', '2', '3', '4', '5', '6'].includes(type);
    this.skip = hasData ? Math.ceil(dataSize / BLOCK) * BLOCK : 0;
    if (type === 'x') {
      this.pax = [];
      this.paxLeft = dataSize;
      if (this.skip === 0) this.endPax();
    }
  }

  /** `<length> size=<n>\n` records of a pax header: its size applies to the next entry. */
  private endPax(): void {
    const text = Buffer.concat(this.pax ?? []).toString('utf8');
    this.pax = null;
    const size = /(?:^|\n)\d+ size=(\d+)\n/.exec(text)?.[1];
    this.paxSize = size ? Number(size) : null;
  }
}
