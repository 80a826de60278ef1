import { createHash } from 'node:crypto';
import { PassThrough, Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import { DockerStreamDemux } from '../../adapters/databases/docker-exec.database-dump.js';
import { parseCron } from '../../src/backups/cron.js';
import { MANAGED_SCHEDULES } from '../../src/backups/managed-schedules.js';
import { FanOut, HashingStream, hashOf } from '../../src/backups/backup-streams.js';

const frame = (kind: 1 | 2, payload: Buffer) => {
  const header = Buffer.alloc(8);
  header[0] = kind;
  header.writeUInt32BE(payload.length, 4);
  return Buffer.concat([header, payload]);
};

describe('backup streams', () => {
  it('hashes and counts exactly the bytes that pass, and writes each chunk to every target', async () => {
    const data = Buffer.alloc(3 * 1024 * 1024 + 7, 3);
    const got: Buffer[][] = [[], []];
    const targets = got.map(
      (parts) =>
        new Writable({
          write(chunk, _enc, cb) {
            parts.push(chunk);
            setImmediate(cb);
          },
        }),
    );
    const hasher = new HashingStream();
    await pipeline(Readable.from([data.subarray(0, 1000), data.subarray(1000)]), hasher, new FanOut(targets));
    expect(hasher.bytes).toBe(data.length);
    expect(hasher.checksum()).toBe(`sha256:${createHash('sha256').update(data).digest('hex')}`);
    for (const parts of got) expect(Buffer.concat(parts).equals(data)).toBe(true);
    expect(await hashOf(Readable.from([data]))).toEqual({ checksum: hasher.checksum(), bytes: data.length });
  });

  it('takes the next chunk only when the slowest target took this one', async () => {
    const slow = new PassThrough({ highWaterMark: 16 });
    let written = 0;
    const source = new Readable({
      read() {
        written++;
        this.push(written > 1000 ? null : Buffer.alloc(64 * 1024));
      },
      highWaterMark: 16,
    });
    const done = pipeline(source, new FanOut([slow, new Writable({ write: (_c, _e, cb) => cb() })]));
    await new Promise((r) => setTimeout(r, 50));
    // Nobody reads `slow`: the source stopped once the buffers between were full (~4 MiB: 64 chunks), not after all 1,000.
    expect(written).toBeLessThan(100);
    slow.resume();
    await done;
    expect(written).toBe(1001);
  });

  it('fails the pipeline when a target fails, without an uncaught error', async () => {
    const broken = new Writable({ write: (_c, _e, cb) => cb(new Error('disk full')) });
    await expect(pipeline(Readable.from([Buffer.from('x')]), new FanOut([broken, new PassThrough()]))).rejects.toThrow('disk full');
  });
});

describe('Docker exec stream demultiplexing', () => {
  it('passes stdout through, logs stderr by line, and keeps frames split across chunks', async () => {
    const lines: string[] = [];
    const demux = new DockerStreamDemux((line) => lines.push(line));
    const bytes = Buffer.concat([
      frame(1, Buffer.from('PGDMP-part1')),
      frame(2, Buffer.from('pg_dump: warn')),
      frame(2, Buffer.from('ing one\npg_dump: second\n')),
      frame(1, Buffer.from('-part2')),
    ]);
    const out: Buffer[] = [];
    await pipeline(
      Readable.from([bytes.subarray(0, 5), bytes.subarray(5, 23), bytes.subarray(23)]),
      demux,
      new Writable({
        write(chunk, _e, cb) {
          out.push(chunk);
          cb();
        },
      }),
    );
    expect(Buffer.concat(out).toString()).toBe('PGDMP-part1-part2');
    expect(lines).toEqual(['pg_dump: warning one', 'pg_dump: second']);
    expect(demux.stderrTail()).toContain('pg_dump: second');
  });
});

describe('schedule periods', () => {
  // The daily/weekly/monthly switches are configurations with these schedules: their latest slot is the period's start.
  const periodStart = (now: Date, period: keyof typeof MANAGED_SCHEDULES) => parseCron(MANAGED_SCHEDULES[period]).previous(now)!;

  it('starts days at UTC midnight, weeks on Monday and months on the 1st', () => {
    const now = new Date('2026-11-26T10:30:00Z'); // a Thursday
    expect(periodStart(now, 'daily').toISOString()).toBe('2026-11-26T00:00:00.000Z');
    expect(periodStart(now, 'weekly').toISOString()).toBe('2026-11-23T00:00:00.000Z');
    expect(periodStart(now, 'monthly').toISOString()).toBe('2026-11-01T00:00:00.000Z');
    expect(periodStart(new Date('2026-11-29T23:59:00Z'), 'weekly').toISOString()).toBe('2026-11-23T00:00:00.000Z');
    expect(periodStart(new Date('2026-11-30T00:00:00Z'), 'weekly').toISOString()).toBe('2026-11-30T00:00:00.000Z');
  });
});
