import { X509Certificate, createPrivateKey } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { OpensslCertificateIssuer } from '../../adapters/tls/openssl.certificate-issuer.js';
import { ImportFailure, type DataImporter, type ImportTarget, type ImportWork } from '../../src/imports/data-importer.port.js';
import { errorOf } from '../helpers/caller-errors.js';
import { createHarness, type Harness } from '../helpers/harness.js';

/**
 * The imports and TLS routers through createCaller, on SQLite in memory: imports with a fake of the
 * DataImporter port (the adapters run against real servers in test/e2e/database-imports.test.ts), TLS
 * with the real openssl issuer.
 */
const SOURCE_PASSWORD = 'S0urce-Pa55word-xyz';
const SOURCE_URL = `postgres://importer:${SOURCE_PASSWORD}@old-db.example.test:5433/shop?sslmode=require`;

class FakeImporter implements DataImporter {
  readonly calls: Array<{ kind: string; source: string; target: ImportTarget }> = [];
  /** What the next import does: resolves, rejects, or waits for its signal. */
  behaviour: 'succeed' | 'fail' | 'hang' = 'succeed';

  importPostgres(source: URL, target: ImportTarget, work: ImportWork): Promise<void> {
    return this.run('postgres', source, target, work);
  }
  importRedis(source: URL, target: ImportTarget, work: ImportWork): Promise<void> {
    return this.run('redis', source, target, work);
  }
  private async run(kind: string, source: URL, target: ImportTarget, work: ImportWork): Promise<void> {
    this.calls.push({ kind, source: source.href, target });
    // An adapter that forgets itself: the writer masks what it is told of.
    work.log(`connecting to ${source.href} with ${decodeURIComponent(source.password)}`);
    if (this.behaviour === 'fail') throw new ImportFailure(`password authentication failed for "${decodeURIComponent(source.password)}"`);
    if (this.behaviour === 'hang')
      await new Promise((_, reject) => work.signal.addEventListener('abort', () => reject(work.signal.reason), { once: true }));
  }
}

let h: Harness;
let importer: FakeImporter;
let running: boolean;

beforeEach(async () => {
  importer = new FakeImporter();
  running = true;
  h = await createHarness({
    imports: { importer, locator: { locate: async () => (running ? { containerId: 'c0ffee', host: '10.1.2.3' } : null) } },
    tls: { issuer: new OpensslCertificateIssuer() },
  });
  await h.services.imports.startRunner();
});
afterEach(async () => {
  await h.services.imports.stop();
  await h.close();
});

async function databaseService(engine = 'postgres', extra: Record<string, unknown> = {}) {
  const api = h.caller();
  const { project } = await api.projects.create({ name: `P ${Math.random()}` });
  const { service } = await api.services.create({
    projectId: project.id,
    name: `${engine} db`,
    repoUrl: 'database',
    repoFullName: `database:${engine}`,
    branch: 'main',
    ...extra,
  });
  return service;
}

async function settled(serviceId: string, id: string) {
  for (let i = 0; i < 200; i++) {
    const { imports } = await h.caller().databaseImports.list({ serviceId });
    const found = imports.find((x) => x.id === id)!;
    if (found.status !== 'running') return found;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('import still running');
}

/** The rows imports and TLS write (imports, their logs, the CA setting), as text: where a secret must never be. */
async function everyRow(serviceId?: string): Promise<string> {
  const store = h.database.store;
  const imports = serviceId ? await store.imports.list(serviceId) : [];
  const logs = await Promise.all(imports.map((i) => store.imports.listLogs(i.id, 1_000)));
  return JSON.stringify({ imports, logs, ca: await store.settings.get('database_tls_ca') });
}

describe('imports', () => {
  it('answers running at once, runs in the background, and ends succeeded with a masked log', async () => {
    const service = await databaseService();
    const { result } = await h.caller().databaseImports.postgresUrl({ serviceId: service.id, sourceUrl: SOURCE_URL });
    expect(Object.keys(result).sort()).toEqual(['createdAt', 'id', 'source', 'status']);
    expect(result).toMatchObject({ status: 'running', source: 'postgres-url' });

    const done = await settled(service.id, result.id);
    expect(done).toMatchObject({
      serviceId: service.id,
      engine: 'postgres',
      source: 'postgres-url',
      sourceLabel: 'old-db.example.test:5433/shop',
      status: 'succeeded',
      error: null,
    });
    expect(done.startedAt).not.toBeNull();
    expect(done.finishedAt).not.toBeNull();
    expect(importer.calls[0]!.source).toBe(SOURCE_URL);
    expect(importer.calls[0]!.target).toMatchObject({ serviceId: service.id, containerId: 'c0ffee', host: '10.1.2.3', port: 5432 });
    expect(Object.keys(importer.calls[0]!.target.env)).toEqual(expect.arrayContaining(['POSTGRES_PASSWORD']));

    const { logs } = await h.caller().databaseImports.logs({ serviceId: service.id, importId: result.id });
    const text = logs.map((l) => l.line).join('\n');
    expect(text).toContain('connecting to ******** with ********');
    expect(text).toContain('Import succeeded');
    expect(text).not.toContain(SOURCE_PASSWORD);
    expect(await everyRow(service.id)).not.toContain(SOURCE_PASSWORD);
    expect(await everyRow(service.id)).toContain('old-db.example.test:5433/shop');
  });

  it('ends failed with the reason, the password masked in it', async () => {
    importer.behaviour = 'fail';
    const service = await databaseService();
    const { result } = await h.caller().databaseImports.postgresUrl({ serviceId: service.id, sourceUrl: SOURCE_URL });
    const done = await settled(service.id, result.id);
    expect(done.status).toBe('failed');
    expect(done.error).toBe('password authentication failed for "********"');
    expect(await everyRow(service.id)).not.toContain(SOURCE_PASSWORD);
  });

  it('copies Redis into Redis services only, and Postgres into postgres and timescale', async () => {
    const redis = await databaseService('redis');
    const { result } = await h.caller().databaseImports.redisUrl({ serviceId: redis.id, sourceUrl: 'redis://:pw-pw-pw@cache.test:6380/2' });
    expect((await settled(redis.id, result.id)).sourceLabel).toBe('cache.test:6380/2');
    expect(importer.calls[0]!.kind).toBe('redis');

    const wrong = await errorOf(h.caller().databaseImports.postgresUrl({ serviceId: redis.id, sourceUrl: SOURCE_URL }));
    expect(wrong.body).toMatchObject({ error: 'validation_error', details: { field: 'serviceId' } });
    const timescale = await databaseService('timescale');
    await h.caller().databaseImports.postgresUrl({ serviceId: timescale.id, sourceUrl: SOURCE_URL });
    const mysql = await databaseService('mysql');
    expect((await errorOf(h.caller().databaseImports.redisUrl({ serviceId: mysql.id, sourceUrl: 'redis://h' }))).code).toBe('BAD_REQUEST');
  });

  it('refuses a bad URL without echoing it, an unknown field, a stopped database, a second import and a read key', async () => {
    const service = await databaseService();
    const api = h.caller();
    for (const sourceUrl of ['not a url', `mysql://u:${SOURCE_PASSWORD}@h/db`, 'postgres:///nohost']) {
      const bad = await errorOf(api.databaseImports.postgresUrl({ serviceId: service.id, sourceUrl }));
      expect(bad.body).toMatchObject({ error: 'validation_error', details: { field: 'sourceUrl' } });
      expect(JSON.stringify(bad.body)).not.toContain(SOURCE_PASSWORD);
    }
    const unknown = await errorOf(api.databaseImports.postgresUrl({ serviceId: service.id, sourceUrl: SOURCE_URL, force: true } as never));
    expect(unknown.body.details).toEqual({ field: 'force' });

    running = false;
    expect((await errorOf(api.databaseImports.postgresUrl({ serviceId: service.id, sourceUrl: SOURCE_URL }))).body.error).toBe(
      'not_running',
    );
    running = true;

    importer.behaviour = 'hang';
    const first = await api.databaseImports.postgresUrl({ serviceId: service.id, sourceUrl: SOURCE_URL });
    expect((await errorOf(api.databaseImports.postgresUrl({ serviceId: service.id, sourceUrl: SOURCE_URL }))).body.error).toBe('conflict');

    const reader = h.caller(await h.mintKey('read'));
    expect((await errorOf(reader.databaseImports.postgresUrl({ serviceId: service.id, sourceUrl: SOURCE_URL }))).code).toBe('FORBIDDEN');
    expect((await reader.databaseImports.list({ serviceId: service.id })).imports.map((i) => i.id)).toEqual([first.result.id]);

    const web = (await api.services.create({ projectId: service.projectId, name: 'web', repoFullName: 'acme/web' })).service;
    expect((await errorOf(api.databaseImports.list({ serviceId: web.id }))).code).toBe('NOT_FOUND');
    const scoped = h.caller(await h.mintKey('write', []));
    expect((await errorOf(scoped.databaseImports.list({ serviceId: service.id }))).code).toBe('NOT_FOUND');
  });

  it('stops a running import when its service is deleted, and forgets its rows', async () => {
    importer.behaviour = 'hang';
    const service = await databaseService();
    const { result } = await h.caller().databaseImports.postgresUrl({ serviceId: service.id, sourceUrl: SOURCE_URL });
    for (let i = 0; i < 100 && importer.calls.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(importer.calls).toHaveLength(1);
    await h.caller().services.delete({ serviceId: service.id });
    expect(await h.database.store.imports.get(result.id)).toBeNull();
    expect(await h.database.store.imports.listLogs(result.id, 10)).toEqual([]);
  });

  it('fails, with the reason, an import a previous process left running', async () => {
    const service = await databaseService();
    const now = new Date();
    await h.database.store.imports.insert({
      id: 'leftoverimport00',
      serviceId: service.id,
      engine: 'postgres',
      source: 'postgres-url',
      sourceLabel: 'old:5432/db',
      status: 'running',
      error: null,
      createdAt: now,
      startedAt: now,
      finishedAt: null,
    });
    await h.services.imports.stop();
    await h.services.imports.startRunner();
    const left = await h.database.store.imports.get('leftoverimport00');
    expect(left).toMatchObject({ status: 'failed' });
    expect(left!.error).toMatch(/server stopped while this import ran/);
    expect(left!.finishedAt).not.toBeNull();
  });
});

describe('tls', () => {
  it('answers 400 for a service that does not speak PostgreSQL, 404 for one the key cannot see', async () => {
    const redis = await databaseService('redis');
    const info = await errorOf(h.caller().databaseTls.info({ serviceId: redis.id }));
    expect(info.body).toMatchObject({ error: 'validation_error', details: { field: 'serviceId' } });
    expect((await errorOf(h.caller().databaseTls.ca({ serviceId: redis.id }))).code).toBe('BAD_REQUEST');
    const pg = await databaseService();
    expect((await errorOf(h.caller(await h.mintKey('read', [])).databaseTls.info({ serviceId: pg.id }))).code).toBe('NOT_FOUND');
  });

  it('makes one CA, sealed, and server certificates it signs for the public hostname and the slug', async () => {
    const pg = await databaseService('postgres', { databasePublicHostname: 'db.example.test' });
    expect((await h.caller().databaseTls.info({ serviceId: pg.id })).tls).toEqual({
      active: false,
      caCertAvailable: false,
      publicHostname: 'db.example.test',
      publicPort: pg.hostPort,
    });
    expect((await errorOf(h.caller().databaseTls.ca({ serviceId: pg.id }))).code).toBe('NOT_FOUND');

    const record = (await h.database.store.projects.getService(pg.id))!;
    const [mount, again] = await Promise.all([h.services.tls.mountFor(record), h.services.tls.mountFor(record)]);
    const { body: caPem } = await h.caller().databaseTls.ca({ serviceId: pg.id });
    expect((await h.caller().databaseTls.info({ serviceId: pg.id })).tls.caCertAvailable).toBe(true);

    const ca = new X509Certificate(caPem);
    expect(ca.ca).toBe(true);
    for (const m of [mount!, again!]) {
      const cert = new X509Certificate(m.files.find((f) => f.path.endsWith('server.crt'))!.content);
      expect(cert.verify(ca.publicKey)).toBe(true);
      expect(cert.checkHost('db.example.test')).toBe('db.example.test');
      expect(cert.checkHost(pg.slug)).toBe(pg.slug);
      expect(cert.checkHost('other.example.test')).toBeUndefined();
      expect(cert.checkIP('127.0.0.1')).toBe('127.0.0.1');
      expect(m.files.find((f) => f.path.endsWith('ca.crt'))!.content).toBe(caPem);
    }
    const key = mount!.files.find((f) => f.path.endsWith('server.key'))!;
    expect(key).toMatchObject({ mode: 0o600, owner: 'postgres' });
    expect(createPrivateKey(key.content).asymmetricKeyType).toBe('ec');
    expect(mount!.args).toEqual([
      '-c',
      'ssl=on',
      '-c',
      'ssl_cert_file=/etc/slipway-tls/server.crt',
      '-c',
      'ssl_key_file=/etc/slipway-tls/server.key',
    ]);
    const rows = await everyRow();
    expect(rows).toContain('BEGIN CERTIFICATE');
    expect(rows).not.toContain('PRIVATE KEY');

    const redis = await databaseService('redis');
    expect(await h.services.tls.mountFor((await h.database.store.projects.getService(redis.id))!)).toBeNull();
  });
});
