import { beforeEach, describe, expect, it } from 'vitest';
import { NotFoundError, ValidationError } from '../../src/domain/errors.js';
import type { ServiceRecord } from '../../src/domain/types.js';
import { freshHarnessPerTest, admin, PASSWORD_ALPHABET, h, repo, database, project, record, rejection } from '../helpers/unit-harness.js';

/** Environment variables (src/env): values, secrets, references. */
freshHarnessPerTest();

describe('environment variables', () => {
  let projectId: string;
  let web: ServiceRecord;
  beforeEach(async () => {
    projectId = (await project()).id;
    web = await record((await h.services.serviceCreation.create(admin, projectId, repo('web'))).id);
  });

  it('creates, then updates a variable in place', async () => {
    await h.services.env.set(admin, web.id, { key: 'GREETING', value: 'hello' });
    const [first] = await h.services.env.listForService(web);
    expect(first).toMatchObject({ key: 'GREETING', value: 'hello', resolvedValue: 'hello', hasValue: true, secret: false, problems: [] });
    await h.services.env.set(admin, web.id, { key: 'GREETING', value: 'bonjour' });
    const listed = await h.services.env.listForService(web);
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ id: first!.id, key: 'GREETING', value: 'bonjour' });
  });

  it('concurrent sets of the same new key both succeed: one creates, the other updates', async () => {
    const results = await Promise.allSettled([
      h.services.env.set(admin, web.id, { key: 'RACE', value: 'one' }),
      h.services.env.set(admin, web.id, { key: 'RACE', value: 'two' }),
    ]);
    expect(results.filter((r) => r.status === 'rejected').map((r) => String((r as PromiseRejectedResult).reason))).toEqual([]);
    const rows = await h.database.store.env.list([web.id]);
    expect(rows.map((r) => r.key)).toEqual(['RACE']);
    expect(['one', 'two']).toContain(h.secrets.decrypt(rows[0]!.valueEncrypted));
  });

  it('reports an empty value as hasValue false', async () => {
    await h.services.env.set(admin, web.id, { key: 'EMPTY', value: '' });
    expect((await h.services.env.listForService(web))[0]).toMatchObject({ key: 'EMPTY', value: '', hasValue: false });
  });

  it('refuses an invalid key', async () => {
    await expect(h.services.env.set(admin, web.id, { key: 'bad-key', value: 'x' })).rejects.toBeInstanceOf(ValidationError);
    expect(await h.database.store.env.list([web.id])).toHaveLength(0);
  });

  it('deletes a variable; an unknown or foreign id is not found', async () => {
    await h.services.env.set(admin, web.id, { key: 'A', value: '1' });
    const [a] = await h.services.env.listForService(web);
    const other = await h.services.serviceCreation.create(admin, projectId, repo('other'));
    await expect(h.services.env.delete(admin, other.id, a!.id)).rejects.toBeInstanceOf(NotFoundError);
    await h.services.env.delete(admin, web.id, a!.id);
    expect(await h.services.env.listForService(web)).toEqual([]);
    await expect(h.services.env.delete(admin, web.id, a!.id)).rejects.toBeInstanceOf(NotFoundError);
  });

  it('masks secret values in the list, and keeps them secret on update', async () => {
    await h.services.env.set(admin, web.id, { key: 'API_TOKEN', value: 'tok-123', secret: true });
    expect((await h.services.env.listForService(web))[0]).toMatchObject({
      key: 'API_TOKEN',
      secret: true,
      value: '',
      resolvedValue: '',
      hasValue: true,
    });
    await h.services.env.set(admin, web.id, { key: 'API_TOKEN', value: 'tok-456' });
    expect((await h.services.env.listForService(web))[0]).toMatchObject({ secret: true, value: '', resolvedValue: '' });
    expect((await h.services.env.resolvedFor(web)).env).toEqual({ API_TOKEN: 'tok-456' });
  });

  it('masks the resolved value of a variable that references a secret, directly or through another reference', async () => {
    const db = await h.services.serviceCreation.create(admin, projectId, database('db', 'postgres'));
    await h.services.env.set(admin, web.id, { key: 'DATABASE_URL', value: 'postgres://${db.POSTGRES_USER}:${db.POSTGRES_PASSWORD}@db/x' });
    await h.services.env.set(admin, web.id, { key: 'INDIRECT', value: 'url=${web.DATABASE_URL}' });
    await h.services.env.set(admin, web.id, { key: 'DB_USER', value: '${db.POSTGRES_USER}' });
    const byKey = Object.fromEntries((await h.services.env.listForService(web)).map((v) => [v.key, v]));
    // The raw value is a reference, not a secret: it is shown; what it resolves to is not.
    expect(byKey.DATABASE_URL).toMatchObject({
      secret: false,
      value: 'postgres://${db.POSTGRES_USER}:${db.POSTGRES_PASSWORD}@db/x',
      resolvedValue: '',
    });
    expect(byKey.INDIRECT).toMatchObject({ value: 'url=${web.DATABASE_URL}', resolvedValue: '' });
    // A reference to a non-secret value resolves in the list.
    expect(byKey.DB_USER).toMatchObject({ value: '${db.POSTGRES_USER}', resolvedValue: 'db' });
    const password = (await h.envValues(db.id)).POSTGRES_PASSWORD!;
    for (const v of Object.values(byKey)) {
      expect(JSON.stringify(v)).not.toContain(password);
    }
  });

  it('resolvedFor returns every value resolved in clear, and the problems', async () => {
    const api = await h.services.serviceCreation.create(admin, projectId, repo('api'));
    await h.services.env.set(admin, api.id, { key: 'HOST', value: 'api.internal' });
    await h.services.env.set(admin, api.id, { key: 'TOKEN', value: 's3cr3t', secret: true });
    await h.services.env.set(admin, web.id, { key: 'API_URL', value: 'http://${api.HOST}:8080' });
    await h.services.env.set(admin, web.id, { key: 'API_TOKEN', value: '${api.TOKEN}' });
    await h.services.env.set(admin, web.id, { key: 'BROKEN', value: '${ghost.KEY}' });
    await h.services.env.set(admin, web.id, { key: 'MISSING', value: '${api.NOPE}' });
    await h.services.env.set(admin, web.id, { key: 'LOOP', value: '${web.LOOP}' });
    const resolved = await h.services.env.resolvedFor(web);
    expect(resolved.env).toEqual({
      API_URL: 'http://api.internal:8080',
      API_TOKEN: 's3cr3t',
      BROKEN: '${ghost.KEY}',
      MISSING: '${api.NOPE}',
      LOOP: '${web.LOOP}',
    });
    expect(resolved.problems).toHaveLength(3);
    expect(resolved.problems.find((p) => p.startsWith('BROKEN:'))).toContain('ghost');
    expect(resolved.problems.find((p) => p.startsWith('MISSING:'))).toContain('NOPE');
    expect(resolved.problems.find((p) => p.startsWith('LOOP:'))).toContain('cycle');
    // The list reports the same problems per variable, without throwing.
    const listed = Object.fromEntries((await h.services.env.listForService(web)).map((v) => [v.key, v]));
    expect(listed.BROKEN!.problems).toHaveLength(1);
    expect(listed.LOOP!.problems).toHaveLength(1);
    expect(listed.API_URL!.problems).toEqual([]);
  });

  it('stores values encrypted at rest', async () => {
    const plain = 'very-recognisable-plaintext-value';
    await h.services.env.set(admin, web.id, { key: 'PLAIN', value: plain });
    await h.services.env.set(admin, web.id, { key: 'SECRET', value: `${plain}-secret`, secret: true });
    const rows = await h.database.store.env.list([web.id]);
    expect(rows).toHaveLength(2);
    for (const row of rows) {
      expect(row.valueEncrypted).not.toContain(plain);
      expect(row.valueEncrypted).not.toContain(Buffer.from(plain).toString('base64url').slice(0, 12));
      expect(h.secrets.decrypt(row.valueEncrypted)).toBe(row.key === 'PLAIN' ? plain : `${plain}-secret`);
    }
  });

  it('encrypts generated database passwords at rest too', async () => {
    const db = await h.services.serviceCreation.create(admin, projectId, database('db', 'redis'));
    const [row] = await h.database.store.env.list([db.id]);
    const password = h.secrets.decrypt(row!.valueEncrypted);
    expect(password).toMatch(PASSWORD_ALPHABET);
    expect(row!.valueEncrypted).not.toContain(password);
  });
});

describe("a storage instance's connection as references", () => {
  let projectId: string;
  let web: ServiceRecord;
  let files: { id: string; accessKeyId: string; secretAccessKey: string };
  const REFS = {
    S3_URL: '${files.AWS_ENDPOINT_URL_S3}',
    AWS_ACCESS_KEY_ID: '${files.AWS_ACCESS_KEY_ID}',
    AWS_SECRET_ACCESS_KEY: '${files.AWS_SECRET_ACCESS_KEY}',
    AWS_REGION: '${files.AWS_REGION}',
    BUCKET: '${files.BUCKET_NAME}',
  };
  beforeEach(async () => {
    projectId = (await project()).id;
    web = await record((await h.services.serviceCreation.create(admin, projectId, repo('web'))).id);
    const created = await h.services.storage.create(admin, projectId, { name: 'files', bucket: 'uploads' });
    files = { id: created.storage.id, ...created.credentials };
    for (const [key, value] of Object.entries(REFS)) await h.services.env.set(admin, web.id, { key, value });
  });

  it('resolves to the instance: endpoint, key pair, region and bucket, none of them stored as a variable', async () => {
    expect((await h.services.env.resolvedFor(web)).env).toEqual({
      S3_URL: 'http://files:7070',
      AWS_ACCESS_KEY_ID: files.accessKeyId,
      AWS_SECRET_ACCESS_KEY: files.secretAccessKey,
      AWS_REGION: 'us-east-1',
      BUCKET: 'uploads',
    });
    expect((await h.services.env.resolvedFor(web)).problems).toEqual([]);
    expect(await h.database.store.env.list([files.id])).toEqual([]);
  });

  it('counts the secret as a secret: masked in lists, not resolved by reveal, in the values a deployment log masks', async () => {
    const listed = Object.fromEntries((await h.services.env.listForService(web)).map((v) => [v.key, v]));
    expect(listed.AWS_SECRET_ACCESS_KEY).toMatchObject({ value: '${files.AWS_SECRET_ACCESS_KEY}', resolvedValue: '', problems: [] });
    expect(listed.AWS_ACCESS_KEY_ID).toMatchObject({ resolvedValue: files.accessKeyId });
    expect(listed.S3_URL).toMatchObject({ resolvedValue: 'http://files:7070' });
    // Reveal, the deliberate read of a secret, does not open the instance's: shown once, at create.
    const revealed = await h.services.env.reveal(admin, web.id, listed.AWS_SECRET_ACCESS_KEY!.id);
    expect(revealed).toEqual({ key: 'AWS_SECRET_ACCESS_KEY', value: '${files.AWS_SECRET_ACCESS_KEY}', resolvedValue: '' });
    await h.services.env.set(admin, web.id, { key: 'DSN', value: 's3://${web.AWS_SECRET_ACCESS_KEY}@files' });
    const dsn = (await h.services.env.listForService(web)).find((v) => v.key === 'DSN')!;
    expect(dsn.resolvedValue).toBe('');
    expect((await h.services.env.reveal(admin, web.id, dsn.id)).resolvedValue).toBe('');
    expect(JSON.stringify(await h.services.env.listForService(web))).not.toContain(files.secretAccessKey);
    expect(await h.services.env.secretValues(web)).toContain(files.secretAccessKey);
    // Any service of the environment masks it, referencing it or not.
    const other = await record((await h.services.serviceCreation.create(admin, projectId, repo('other'))).id);
    expect(await h.services.env.secretValues(other)).toContain(files.secretAccessKey);
  });

  it('cannot be shadowed: its names are refused on the instance, and the derived ones win over stored and shared ones', async () => {
    for (const key of ['AWS_SECRET_ACCESS_KEY', 'BUCKET_NAME', 'AWS_ENDPOINT_URL_S3']) {
      const error = await rejection(h.services.env.set(admin, files.id, { key, value: 'mine' }));
      expect(error).toBeInstanceOf(ValidationError);
      expect(error).toMatchObject({ details: { field: 'key' } });
    }
    // Another name is the instance's own variable, as for any service.
    await h.services.env.set(admin, files.id, { key: 'NOTE', value: 'kept' });
    // A stored one of those names (written before this release, say) and shared ones change nothing.
    const now = new Date();
    await h.database.store.env.insert({
      id: 'old-secret',
      serviceId: files.id,
      key: 'AWS_SECRET_ACCESS_KEY',
      valueEncrypted: h.secrets.encrypt('stored-not-secret'),
      secret: false,
      createdAt: now,
      updatedAt: now,
    });
    await h.services.env.replaceShared(admin, projectId, { BUCKET_NAME: { value: 'shared-bucket' }, AWS_REGION: { value: 'eu-1' } });
    expect((await h.services.env.resolvedFor(web)).env).toMatchObject({
      AWS_SECRET_ACCESS_KEY: files.secretAccessKey,
      BUCKET: 'uploads',
      AWS_REGION: 'us-east-1',
    });
    const own = await h.services.env.list(admin, files.id);
    // The stored value is its own to see; what it resolves to is the instance's secret: masked.
    expect(own.find((v) => v.key === 'AWS_SECRET_ACCESS_KEY')).toMatchObject({ value: 'stored-not-secret', resolvedValue: '' });
    expect(JSON.stringify(own)).not.toContain(files.secretAccessKey);
    expect((await h.services.env.reveal(admin, files.id, 'old-secret')).resolvedValue).toBe('stored-not-secret');
    await expect(h.services.env.updateById(admin, files.id, 'old-secret', { value: 'again' })).rejects.toBeInstanceOf(ValidationError);
  });

  it('resolves per environment: a clone references its own instance, with its own key pair', async () => {
    const clone = await h.services.environments.clone(admin, projectId, { name: 'staging' });
    const copyOf = (slug: string) => clone.services.find((s) => s.slug === slug)!;
    expect(clone.storageCredentials).toHaveLength(1);
    const keys = clone.storageCredentials[0]!;
    expect(keys.storageId).toBe(copyOf('files').id);
    expect(keys.accessKeyId).not.toBe(files.accessKeyId);
    expect(keys.secretAccessKey).not.toBe(files.secretAccessKey);
    const stagingWeb = await record(copyOf('web').id);
    expect((await h.services.env.resolvedFor(stagingWeb)).env).toMatchObject({
      AWS_ACCESS_KEY_ID: keys.accessKeyId,
      AWS_SECRET_ACCESS_KEY: keys.secretAccessKey,
      BUCKET: 'uploads',
      S3_URL: 'http://files:7070',
    });
    // Production's secret is not among the clone's, nor is the clone's in production's.
    expect(await h.services.env.secretValues(stagingWeb)).not.toContain(files.secretAccessKey);
    expect(await h.services.env.secretValues(web)).not.toContain(keys.secretAccessKey);
    expect((await h.services.env.resolvedFor(web)).env.AWS_SECRET_ACCESS_KEY).toBe(files.secretAccessKey);
  });

  it('an environment without the instance reports the reference as unknown', async () => {
    const empty = await h.services.environments.create(admin, projectId, { name: 'preview' });
    const lone = await h.services.serviceCreation.createInEnvironment(admin, empty.id, repo('lone'));
    await h.services.env.set(admin, lone.id, { key: 'KEY', value: '${files.AWS_ACCESS_KEY_ID}' });
    const resolved = await h.services.env.resolvedFor(await record(lone.id));
    expect(resolved.env.KEY).toBe('${files.AWS_ACCESS_KEY_ID}');
    expect(resolved.problems).toEqual([expect.stringContaining('no service with slug "files"')]);
  });
});
