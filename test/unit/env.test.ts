import { beforeEach, describe, expect, it } from 'vitest';
import { NotFoundError, ValidationError } from '../../src/domain/errors.js';
import type { ServiceRecord } from '../../src/domain/types.js';
import { freshHarnessPerTest, admin, PASSWORD_ALPHABET, h, repo, database, project, record } from '../helpers/unit-harness.js';

/** Environment variables (src/env): values, secrets, references. */
freshHarnessPerTest();

describe('environment variables', () => {
  let projectId: string;
  let web: ServiceRecord;
  beforeEach(async () => {
    projectId = (await project()).id;
    web = await record((await h.services.services.create(admin, projectId, repo('web'))).id);
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
    const other = await h.services.services.create(admin, projectId, repo('other'));
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
    const db = await h.services.services.create(admin, projectId, database('db', 'postgres'));
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
    const api = await h.services.services.create(admin, projectId, repo('api'));
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
    const db = await h.services.services.create(admin, projectId, database('db', 'redis'));
    const [row] = await h.database.store.env.list([db.id]);
    const password = h.secrets.decrypt(row!.valueEncrypted);
    expect(password).toMatch(PASSWORD_ALPHABET);
    expect(row!.valueEncrypted).not.toContain(password);
  });
});
