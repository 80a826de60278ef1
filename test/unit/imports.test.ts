import { afterEach, describe, expect, it } from 'vitest';
import { keyspaceOf } from '../../adapters/databases/redis-url.data-importer.js';
import { StdoutOnly } from '../../adapters/docker/docker-exec.postgres-importer.js';
import { DEFAULT_PLATFORM_CONFIG } from '../../src/index.js';
import type { DataImporter } from '../../src/imports/data-importer.port.js';
import { maskSecrets, parseSourceUrl } from '../../src/imports/source-url.js';
import { ValidationError } from '../../src/domain/errors.js';
import { createHarness, type Harness } from '../helpers/harness.js';
import { admin } from '../helpers/unit-harness.js';

describe('source URLs', () => {
  it('labels a source by host, port and database only', () => {
    expect(parseSourceUrl('postgres-url', 'postgres://u:p%40ss@db.example.com/app?sslmode=require').label).toBe('db.example.com:5432/app');
    expect(parseSourceUrl('postgres-url', 'postgresql://u@[::1]:6543').label).toBe('[::1]:6543');
    expect(parseSourceUrl('redis-url', 'rediss://default:pw@cache:7000/4').label).toBe('cache:7000/4');
    expect(parseSourceUrl('redis-url', ' redis://cache ').label).toBe('cache:6379');
  });

  it('knows the password in both spellings, and the URL itself, as secrets', () => {
    const url = 'postgres://u:p%40ss-word@db/app';
    const { secrets } = parseSourceUrl('postgres-url', url);
    expect(secrets).toEqual(expect.arrayContaining([url, 'p%40ss-word', 'p@ss-word']));
    expect(maskSecrets(`failed for ${url} (p@ss-word)`, secrets)).toBe('failed for ******** (********)');
  });

  it('refuses another scheme, no host, or no URL, naming sourceUrl and never echoing it', () => {
    for (const [source, raw] of [
      ['postgres-url', 'redis://h'],
      ['redis-url', 'postgres://u:secret-pw@h/db'],
      ['postgres-url', 'postgres:///db'],
      ['postgres-url', 'secret-pw'],
    ] as const) {
      let error: unknown;
      try {
        parseSourceUrl(source, raw);
      } catch (e) {
        error = e;
      }
      expect(error, raw).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).details).toEqual({ field: 'sourceUrl' });
      expect((error as Error).message).not.toContain('secret-pw');
    }
  });

  it("reads the databases with keys from Redis's INFO keyspace", () => {
    expect(keyspaceOf('# Keyspace\r\ndb0:keys=3,expires=1,avg_ttl=9\r\ndb12:keys=40,expires=0,avg_ttl=0\r\n')).toEqual([
      { index: 0, keys: 3 },
      { index: 12, keys: 40 },
    ]);
    expect(keyspaceOf('# Keyspace\r\n')).toEqual([]);
  });
});

describe('the import job', () => {
  let h: Harness | undefined;
  afterEach(async () => {
    await h?.services.imports.stop();
    await h?.close();
  });

  async function harnessWith(importer: DataImporter, timeoutMs: number) {
    h = await createHarness({
      config: { databases: { ...DEFAULT_PLATFORM_CONFIG.databases, importTimeoutMs: timeoutMs, importConnectTimeoutMs: 1_234 } },
      imports: { importer, locator: { locate: async () => ({ containerId: 'c', host: '10.0.0.9' }) } },
    });
    await h.services.imports.startRunner();
    const { project } = await h.caller().projects.create({ name: 'P' });
    const { service } = await h
      .caller()
      .services.create({ projectId: project.id, name: 'db', repoUrl: 'database', repoFullName: 'database:postgres', branch: 'main' });
    return service;
  }

  async function ended(serviceId: string) {
    for (let i = 0; i < 300; i++) {
      const [latest] = await h!.services.imports.list(admin, serviceId);
      if (latest && latest.status !== 'running') return latest;
      await new Promise((r) => setTimeout(r, 10));
    }
    throw new Error('still running');
  }

  it('gives the importer the connect timeout, and fails an import that outlasts its own timeout', async () => {
    let connectTimeout = 0;
    const service = await harnessWith(
      {
        importPostgres: (_source, _target, work) => {
          connectTimeout = work.connectTimeoutMs;
          return new Promise((_, reject) => work.signal.addEventListener('abort', () => reject(work.signal.reason), { once: true }));
        },
        importRedis: async () => undefined,
      },
      150,
    );
    await h!.services.imports.start(admin, service.id, 'postgres-url', 'postgres://u:pw12345@old/db');
    const done = await ended(service.id);
    expect(connectTimeout).toBe(1_234);
    expect(done).toMatchObject({ status: 'failed', error: 'The import did not finish within 150 ms' });
    expect(done.finishedAt).not.toBeNull();
  });

  it('reports an unexpected error as internal, masked', async () => {
    const service = await harnessWith(
      {
        importPostgres: async (source) => {
          throw new TypeError(`boom at ${source.href}`);
        },
        importRedis: async () => undefined,
      },
      60_000,
    );
    await h!.services.imports.start(admin, service.id, 'postgres-url', 'postgres://u:pw12345@old/db');
    expect((await ended(service.id)).error).toBe('Internal error: boom at ********');
  });
});

describe("Docker's multiplexed exec output", () => {
  const frame = (stream: 1 | 2, text: string | Buffer) => {
    const payload = typeof text === 'string' ? Buffer.from(text) : text;
    const header = Buffer.alloc(8);
    header[0] = stream;
    header.writeUInt32BE(payload.length, 4);
    return Buffer.concat([header, payload]);
  };

  it('passes stdout bytes on, split anywhere, and hands stderr over line by line', async () => {
    const stderr: string[] = [];
    const demux = new StdoutOnly((line) => stderr.push(line));
    const binary = Buffer.from([0, 1, 2, 255, 10, 13, 0]);
    const all = Buffer.concat([
      frame(1, 'PGDMP'),
      frame(2, 'pg_dump: warn'),
      frame(1, binary),
      frame(2, 'ing\nsecond\nlast'),
      frame(1, 'end'),
    ]);
    const out: Buffer[] = [];
    demux.on('data', (chunk: Buffer) => out.push(chunk));
    const done = new Promise((resolve) => demux.on('end', resolve));
    // One byte at a time: every header and payload is cut somewhere.
    for (let i = 0; i < all.length; i++) demux.write(all.subarray(i, i + 1));
    demux.end();
    await done;
    expect(Buffer.concat(out)).toEqual(Buffer.concat([Buffer.from('PGDMP'), binary, Buffer.from('end')]));
    expect(stderr).toEqual(['pg_dump: warning', 'second', 'last']);
  });
});
