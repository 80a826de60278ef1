import { createHash } from 'node:crypto';
import { PassThrough, Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { quoteIdentifier } from '../../adapters/databases/clickhouse.database-dump.js';
import { ByteReader, DockerStreamDemux, tarOf } from '../../adapters/databases/container-exec.js';
import { optionValue } from '../../adapters/databases/mysql.database-dump.js';
import { RdbEofMarkTrim, transferredBytes } from '../../adapters/databases/redis.database-dump.js';
// @ts-expect-error: plain JavaScript of the stand-in image, without types
import { Crc64, parseArgs, readConfig } from '../standins/mongo-wire/tools.mjs';
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

  it('keeps a frame header split across chunks, a multi-byte character split across frames, and a last line without newline', async () => {
    const lines: string[] = [];
    const demux = new DockerStreamDemux((line) => lines.push(line));
    const check = Buffer.from('Transfer ✓ done');
    const bytes = Buffer.concat([
      frame(1, Buffer.alloc(70_000, 7)),
      frame(2, check.subarray(0, 10)),
      frame(2, check.subarray(10)),
      frame(1, Buffer.from('end')),
    ]);
    // Every split position: 3 bytes into a header, inside a payload, inside the multi-byte character.
    const pieces = [bytes.subarray(0, 3), bytes.subarray(3, 40_000), bytes.subarray(40_000, 70_011), bytes.subarray(70_011)];
    const out: Buffer[] = [];
    await pipeline(
      Readable.from(pieces),
      demux,
      new Writable({
        write(chunk, _e, cb) {
          out.push(chunk);
          cb();
        },
      }),
    );
    expect(Buffer.concat(out).equals(Buffer.concat([Buffer.alloc(70_000, 7), Buffer.from('end')]))).toBe(true);
    expect(lines).toEqual(['Transfer ✓ done']);
    expect(demux.stderrTail()).toBe('Transfer ✓ done');
  });
});

describe("the engines' dump helpers", () => {
  const collect = async (stream: Readable) => {
    const parts: Buffer[] = [];
    for await (const chunk of stream) parts.push(chunk as Buffer);
    return Buffer.concat(parts);
  };

  it('cuts the 40-byte end mark redis-cli leaves after a diskless RDB, and only that', async () => {
    const rdb = Buffer.concat([Buffer.from('REDIS0010'), Buffer.alloc(100_000, 1), Buffer.from([0xff, 1, 2, 3, 4, 5, 6, 7, 8])]);
    const mark = Buffer.from('a'.repeat(40));
    const chunked = (b: Buffer) => [b.subarray(0, 7), b.subarray(7, 65_536), b.subarray(65_536, b.length - 20), b.subarray(b.length - 20)];
    // Diskless: the tool reports the RDB's size; the mark after it goes.
    const diskless = new RdbEofMarkTrim(() => rdb.length);
    expect((await collect(Readable.from(chunked(Buffer.concat([rdb, mark]))).pipe(diskless))).equals(rdb)).toBe(true);
    // A disk-based transfer has no mark: everything is the RDB.
    const plain = new RdbEofMarkTrim(() => rdb.length);
    expect((await collect(Readable.from(chunked(rdb)).pipe(plain))).equals(rdb)).toBe(true);
    // Bytes missing, or no report at all: the dump fails.
    await expect(collect(Readable.from(chunked(rdb.subarray(0, 5000))).pipe(new RdbEofMarkTrim(() => rdb.length)))).rejects.toThrow(
      /incomplete/,
    );
    await expect(collect(Readable.from([rdb]).pipe(new RdbEofMarkTrim(() => null)))).rejects.toThrow(/did not report/);
    expect(transferredBytes('SYNC sent to master\nTransfer finished with success after 196 bytes')).toBe(196);
    expect(transferredBytes('nothing')).toBeNull();
  });

  it('quotes a MySQL option value so its reader gets it back exactly', () => {
    expect(optionValue('plain')).toBe('"plain"');
    expect(optionValue('p"a\\ss#w\n')).toBe('"p\\"a\\\\ss#w\\n"');
  });

  it('quotes ClickHouse identifiers', () => {
    expect(quoteIdentifier('events')).toBe('`events`');
    expect(quoteIdentifier('we`ird\\name')).toBe('`we\\`ird\\\\name`');
  });

  it('writes a tar archive of one file that tar reads back, with its mode and owner', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'slipway-tar-'));
    try {
      const content = Buffer.from('[client]\npassword="x"\n'.repeat(40));
      writeFileSync(path.join(dir, 'one.tar'), tarOf('slipway-1.cnf', content, { mode: 0o600, uid: 0, gid: 0 }));
      expect(execFileSync('tar', ['-tvf', path.join(dir, 'one.tar')], { encoding: 'utf8' })).toMatch(
        /^-rw------- 0\/0 +880 .+ slipway-1\.cnf$/m,
      );
      execFileSync('tar', ['-xf', 'one.tar', '--no-same-owner'], { cwd: dir });
      expect(readFileSync(path.join(dir, 'slipway-1.cnf')).equals(content)).toBe(true);
      expect(statSync(path.join(dir, 'slipway-1.cnf')).mode & 0o777).toBe(0o600);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reads lines and exact byte counts across chunks', async () => {
    const reader = new ByteReader(Readable.from([Buffer.from('head'), Buffer.from('er\n3\nabc'), Buffer.from('def\n')]));
    expect(await reader.line(100)).toBe('header');
    expect(await reader.line(100)).toBe('3');
    const parts: Buffer[] = [];
    for await (const piece of reader.bytes(3)) parts.push(piece);
    expect(Buffer.concat(parts).toString()).toBe('abc');
    expect(await reader.line(100)).toBe('def');
    expect(await reader.atEnd()).toBe(true);
    expect(await reader.line(100)).toBeNull();
    const short = new ByteReader(Readable.from([Buffer.from('ab')]));
    await expect(
      (async () => {
        for await (const _ of short.bytes(5)) void _;
      })(),
    ).rejects.toThrow(/ends 3 bytes early/);
    await expect(new ByteReader(Readable.from([Buffer.alloc(300, 65)])).line(100)).rejects.toThrow(/over 100 bytes/);
  });
});

describe('the mongodump/mongorestore stand-ins', () => {
  it('checksum each namespace with CRC-64/ECMA as Go computes it (the check value of "123456789")', () => {
    const crc = new Crc64();
    crc.update(Buffer.from('12345'));
    crc.update(Buffer.from('6789'));
    expect(crc.value().toUnsigned().toString(16)).toBe('995dc9bbdf1939fa');
  });

  it("take the platform's arguments and refuse others, the password from the config file only", () => {
    const args = [
      '--archive',
      '--host=127.0.0.1',
      '--port=27017',
      '--username=root',
      '--authenticationDatabase=admin',
      '--config=/tmp/x.yaml',
    ];
    expect(parseArgs('dump', args)).toMatchObject({ archive: '-', host: '127.0.0.1', port: '27017', config: '/tmp/x.yaml' });
    expect(parseArgs('restore', [...args, '--drop', '--stopOnError'])).toMatchObject({ drop: true, stopOnError: true });
    expect(() => parseArgs('dump', [...args, '--drop'])).toThrow(/unknown option "drop"/);
    expect(() => parseArgs('restore', ['--host=x'])).toThrow(/--archive/);
    const dir = mkdtempSync(path.join(tmpdir(), 'slipway-mongo-'));
    try {
      writeFileSync(path.join(dir, 'c.yaml'), `password: ${JSON.stringify('p"w\\d #1')}\n`);
      expect(readConfig(path.join(dir, 'c.yaml'))).toEqual({ password: 'p"w\\d #1' });
      writeFileSync(path.join(dir, 'bad.yaml'), 'uri: mongodb://x\n');
      expect(() => readConfig(path.join(dir, 'bad.yaml'))).toThrow(/only password/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
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
