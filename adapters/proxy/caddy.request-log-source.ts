import { open, stat } from 'node:fs/promises';
import type { RequestCount, RequestLogSource } from '../../src/metrics/request-log.port.js';

/** Read at most this much per drain: a burst is counted over the next drains, memory stays bounded. */
const MAX_BYTES_PER_DRAIN = 16 * 1024 * 1024;
const CHUNK_BYTES = 256 * 1024;
/** A line longer than this is not an access line of ours: skipped. */
const MAX_LINE_BYTES = 64 * 1024;

/**
 * Caddy's access log (JSON lines, written by the `slipway_access` logger of the configuration, see
 * caddy-config.ts) read from where the last drain stopped. Caddy rolls the file by renaming it and
 * starting a new one: a new inode (or a file shorter than the offset) is read from its start, and
 * what the old file got after the last drain is not counted.
 */
export class CaddyRequestLogSource implements RequestLogSource {
  private position: { inode: number; offset: number } | null = null;

  constructor(private readonly file: string) {}

  async drain(signal?: AbortSignal): Promise<RequestCount[]> {
    const info = await stat(this.file).catch(() => null);
    if (!info) {
      // Not written yet (Caddy opens it at its first line): once it is, it is read from its start.
      this.position = { inode: -1, offset: 0 };
      return [];
    }
    if (!this.position) {
      // The first drain of this process: what is already there was counted before (or predates it).
      this.position = { inode: info.ino, offset: info.size };
      return [];
    }
    if (info.ino !== this.position.inode || info.size < this.position.offset) this.position = { inode: info.ino, offset: 0 };
    const end = Math.min(info.size, this.position.offset + MAX_BYTES_PER_DRAIN);
    if (end <= this.position.offset) return [];
    const counts = new Map<string, RequestCount>();
    const handle = await open(this.file, 'r');
    try {
      let offset = this.position.offset;
      let carry = Buffer.alloc(0);
      while (offset < end) {
        signal?.throwIfAborted();
        const buffer = Buffer.alloc(Math.min(CHUNK_BYTES, end - offset));
        const { bytesRead } = await handle.read(buffer, 0, buffer.length, offset);
        if (bytesRead === 0) break;
        offset += bytesRead;
        let data = carry.length ? Buffer.concat([carry, buffer.subarray(0, bytesRead)]) : buffer.subarray(0, bytesRead);
        let newline = data.indexOf(10);
        while (newline !== -1) {
          count(counts, data.subarray(0, newline));
          data = data.subarray(newline + 1);
          newline = data.indexOf(10);
        }
        carry = data.length > MAX_LINE_BYTES ? Buffer.alloc(0) : Buffer.from(data);
      }
      // A line still being written is read again, whole, by the next drain.
      this.position.offset = offset - carry.length;
    } finally {
      await handle.close();
    }
    return [...counts.values()];
  }
}

function count(counts: Map<string, RequestCount>, line: Buffer): void {
  if (line.length === 0 || line.length > MAX_LINE_BYTES) return;
  let entry: { request?: { host?: unknown }; status?: unknown };
  try {
    entry = JSON.parse(line.toString('utf8'));
  } catch {
    return;
  }
  const host = typeof entry.request?.host === 'string' ? hostnameOf(entry.request.host) : '';
  if (!host || typeof entry.status !== 'number') return;
  let tally = counts.get(host);
  if (!tally) {
    tally = { hostname: host, requests: 0, errors5xx: 0 };
    counts.set(host, tally);
  }
  tally.requests++;
  if (entry.status >= 500 && entry.status < 600) tally.errors5xx++;
}

/** The Host header without its port (`[v6]:port` keeps the brackets' content), as the routes match it: lower case, no root dot. */
function hostnameOf(host: string): string {
  const bracket = /^\[([^\]]+)\](?::\d+)?$/.exec(host);
  if (bracket) return bracket[1]!.toLowerCase();
  return host.replace(/:\d+$/, '').replace(/\.$/, '').toLowerCase();
}
