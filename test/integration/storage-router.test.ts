import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DatabaseDump, ObjectStore, ObjectStoreConfig } from '../../src/index.js';
import { errorOf } from '../helpers/caller-errors.js';
import { createHarness, type Harness } from '../helpers/harness.js';

/**
 * The storage router (/api/storage) and a storage instance as a database's backup destination,
 * through createCaller on SQLite in memory; the object stores are fakes keyed by endpoint, so each
 * call shows which store it reached (the real server: test/e2e/storage.test.ts).
 */

/** One fake bucket per endpoint: whether it answers, and what was uploaded to it. */
class Buckets {
  readonly configs: ObjectStoreConfig[] = [];
  readonly objects = new Map<string, Map<string, Buffer>>();
  readonly down = new Set<string>();
  factory = (config: ObjectStoreConfig): ObjectStore => {
    this.configs.push(config);
    const objects = this.objects.get(config.endpoint) ?? new Map<string, Buffer>();
    this.objects.set(config.endpoint, objects);
    const reachable = () => {
      if (this.down.has(config.endpoint)) throw new Error(`connect ECONNREFUSED ${config.endpoint}`);
    };
    return {
      check: async () => reachable(),
      upload: async (key, body) => {
        reachable();
        const parts: Buffer[] = [];
        for await (const chunk of body) parts.push(chunk as Buffer);
        objects.set(key, Buffer.concat(parts));
      },
      download: async (key) => Readable.from([objects.get(key)!]),
      remove: async (key) => {
        objects.delete(key);
      },
    };
  };
}

const DUMP = Buffer.from('PGDMP fake archive');
const dump: DatabaseDump = {
  formatOf: (engine) => (engine === 'postgres' ? 'custom' : null),
  dump: async () => ({ stream: Readable.from([DUMP]), done: Promise.resolve() }),
  restore: async () => undefined,
};

let h: Harness;
let buckets: Buckets;
beforeEach(async () => {
  buckets = new Buckets();
  h = await createHarness({ backups: { dump, objectStores: buckets.factory, locate: async () => ({ containerId: 'c0ffee' }) } });
  h.services.backupRunner.start();
  await h.services.backupRunner.recover();
});
afterEach(async () => {
  await h.services.backupRunner.stop();
  await h.close();
});

async function fixture() {
  const api = h.caller();
  const { project } = await api.projects.create({ name: 'Shop' });
  const { project: other } = await api.projects.create({ name: 'Other' });
  return { api, project, other };
}

describe('/api/storage', () => {
  it('creates, lists, shows and deletes storage instances across the projects a key sees', async () => {
    const { api, project, other } = await fixture();
    const created = await api.storage.create({ projectId: project.id, name: 'files' });
    const { storage } = created;
    expect(storage).toMatchObject({ projectId: project.id, repoUrl: 'storage', repoFullName: 'storage:s3', status: 'idle' });
    expect(created.credentials.accessKeyId).toBe(storage.s3.accessKeyId);
    const media = (await api.storage.create({ projectId: other.id, name: 'media', bucket: 'media-bucket', publicEnabled: true })).storage;
    expect((await api.storage.list()).storage.map((s) => s.id)).toEqual([storage.id, media.id]);
    const scoped = h.caller(await h.mintKey('read', [other.id]));
    expect((await scoped.storage.list()).storage.map((s) => s.id)).toEqual([media.id]);
    expect((await errorOf(scoped.storage.get({ storageId: storage.id }))).code).toBe('NOT_FOUND');
    // The same service as the apps door answers, with how to reach the bucket.
    const { s3, ...service } = (await api.storage.get({ storageId: storage.id })).storage;
    expect(service).toEqual((await api.apps.get({ appId: storage.id })).service);
    expect(s3).toEqual(storage.s3);
    expect((await api.storage.delete({ storageId: media.id })).ok).toBe(true);
    expect((await errorOf(api.storage.get({ storageId: media.id }))).code).toBe('NOT_FOUND');
  });

  it('shows the secret in the create answer only', async () => {
    const { api, project } = await fixture();
    const { storage, credentials } = await api.storage.create({ projectId: project.id, name: 'files' });
    const answers = JSON.stringify([
      await api.storage.list(),
      await api.storage.get({ storageId: storage.id }),
      await api.storage.start({ storageId: storage.id }),
      await api.services.overview({ serviceId: storage.id }),
      await api.variables.list({ serviceId: storage.id }),
      await api.projects.list(),
    ]);
    expect(answers).not.toContain(credentials.secretAccessKey);
  });

  it('refuses unknown fields, bad buckets, read keys and other kinds of service', async () => {
    const { api, project } = await fixture();
    const web = (await api.services.create({ projectId: project.id, name: 'web', repoFullName: 'acme/web' })).service;
    expect((await errorOf(api.storage.create({ projectId: project.id, name: 'x', engine: 'redis' } as never))).field).toBe('engine');
    expect((await errorOf(api.storage.create({ projectId: project.id, name: 'x', bucket: 'No' }))).field).toBe('bucket');
    expect((await errorOf(api.storage.get({ storageId: web.id }))).code).toBe('NOT_FOUND');
    expect((await errorOf(api.services.create({ projectId: project.id, name: 'x', repoUrl: 'storage' }))).field).toBe('repoUrl');
    const read = h.caller(await h.mintKey('read'));
    expect((await errorOf(read.storage.create({ projectId: project.id, name: 'x' }))).code).toBe('FORBIDDEN');
    const { storage } = await api.storage.create({ projectId: project.id, name: 'files' });
    expect((await errorOf(read.storage.stop({ storageId: storage.id }))).code).toBe('FORBIDDEN');
    expect(await errorOf(api.storage.stop({ storageId: storage.id }))).toMatchObject({ code: 'CONFLICT', error: 'not_running' });
    expect((await api.storage.start({ storageId: storage.id })).storage.status).toBe('idle');
  });
});

describe('a storage instance as the object store of database backups', () => {
  async function setup() {
    const { api, project } = await fixture();
    const { storage } = await api.storage.create({ projectId: project.id, name: 'files' });
    const db = (await api.databaseServices.create({ projectId: project.id, name: 'main', engine: 'postgres' })).database;
    return { api, project, storage, db, endpoint: `http://127.0.0.1:${storage.hostPort}` };
  }

  it('objectStore.connected tells the truth for the store the database uses', async () => {
    const { api, storage, db, endpoint } = await setup();
    expect(endpoint).toBe(`http://127.0.0.1:${storage.hostPort}`);
    // No store at all: not connected.
    expect((await api.backups.list({ serviceId: db.id })).objectStore).toEqual({ connected: false });
    // The platform's store is down; the database uses the instance, which answers.
    await api.settings.update({
      objectStore: {
        endpoint: 'http://platform-store.test',
        region: 'us-east-1',
        bucket: 'platform-backups',
        accessKeyId: 'k',
        secretAccessKey: 'platform-secret',
        forcePathStyle: true,
      },
    });
    buckets.down.add('http://platform-store.test');
    expect((await api.backups.list({ serviceId: db.id })).objectStore.connected).toBe(false);
    const { settings } = await api.backups.updateSettings({ serviceId: db.id, storageId: storage.id, storage: 'object' });
    expect(settings).toMatchObject({ storageId: storage.id, storage: 'object' });
    expect((await api.backups.list({ serviceId: db.id })).objectStore).toEqual({ connected: true });
    expect(buckets.configs.at(-1)).toMatchObject({ endpoint, bucket: 'files', accessKeyId: storage.s3.accessKeyId, forcePathStyle: true });
    // Another instance, that does not answer: the list says so, with why, and no secret.
    const stopped = await api.storage.create({ projectId: storage.projectId, name: 'archive' });
    buckets.down.add(`http://127.0.0.1:${stopped.storage.hostPort}`);
    await api.backups.updateSettings({ serviceId: db.id, storageId: stopped.storage.id });
    const down = (await api.backups.list({ serviceId: db.id })).objectStore;
    expect(down.connected).toBe(false);
    expect(down.error).toContain('ECONNREFUSED');
    expect(down.error).not.toContain(stopped.credentials.secretAccessKey);
  });

  it("a backup goes to the instance's bucket and remembers it, whatever the settings say later", async () => {
    const { api, storage, db, endpoint } = await setup();
    await api.backups.updateSettings({ serviceId: db.id, storageId: storage.id });
    const { backup } = await api.backups.create({ serviceId: db.id, storage: 'object' });
    let done = backup;
    for (let i = 0; i < 100 && done.status === 'running'; i++) {
      await new Promise((r) => setTimeout(r, 20));
      done = (await api.backups.list({ serviceId: db.id })).backups.find((b) => b.id === backup.id)!;
    }
    expect(done).toMatchObject({ status: 'succeeded', storageId: storage.id, objectKey: `backups/${db.id}/${backup.id}.dump` });
    expect(buckets.objects.get(endpoint)?.get(done.objectKey!)).toEqual(DUMP);
    // The instance holds a backup of a database that stays: it cannot go.
    await api.backups.updateSettings({ serviceId: db.id, storageId: null });
    expect(await errorOf(api.storage.delete({ storageId: storage.id }))).toMatchObject({ code: 'CONFLICT', error: 'conflict' });
    // Deleted, the backup leaves the instance's bucket; then the instance may go.
    await api.backups.delete({ serviceId: db.id, backupId: backup.id });
    expect(buckets.objects.get(endpoint)?.size).toBe(0);
    expect((await api.storage.delete({ storageId: storage.id })).ok).toBe(true);
  });

  it('storageId must name a storage instance the key sees', async () => {
    const { api, project, db } = await setup();
    const web = (await api.services.create({ projectId: project.id, name: 'web', repoFullName: 'acme/web' })).service;
    for (const storageId of [web.id, 'nope', db.id])
      expect(await errorOf(api.backups.updateSettings({ serviceId: db.id, storageId }))).toMatchObject({
        error: 'validation_error',
        field: 'storageId',
      });
  });
});

describe("a storage instance's connection, referenced by the services of its environment", () => {
  const KEYS = ['AWS_ENDPOINT_URL_S3', 'AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_REGION', 'BUCKET_NAME'];

  it('is suggested as ${files.KEY} references, the secret among them by name only', async () => {
    const { api, project } = await fixture();
    const { storage, credentials } = await api.storage.create({ projectId: project.id, name: 'files' });
    const web = (await api.services.create({ projectId: project.id, name: 'web', repoFullName: 'acme/web' })).service;
    const { suggestions, databaseVariables } = await api.services.suggestionKeys({ serviceId: web.id });
    expect(suggestions.map((s) => s.key)).toEqual(expect.arrayContaining(KEYS.map((k) => `files.${k}`)));
    const references = KEYS.map((key) => ({ key, value: `\${files.${key}}`, label: expect.stringContaining('storage "files"') }));
    expect(databaseVariables).toEqual(references);
    expect((await api.projects.databaseVariableSuggestions({ projectId: project.id })).suggestions).toEqual(references);
    // The storage instance's own suggestions list them too (a reference to itself resolves as well).
    expect((await api.services.suggestionKeys({ serviceId: storage.id })).suggestions.map((s) => s.key)).toEqual(
      expect.arrayContaining(KEYS.map((k) => `files.${k}`)),
    );
    const answers = JSON.stringify([
      suggestions,
      databaseVariables,
      await api.projects.databaseVariableSuggestions({ projectId: project.id }),
    ]);
    expect(answers).toContain('AWS_SECRET_ACCESS_KEY');
    expect(answers).not.toContain(credentials.secretAccessKey);
  });

  it('resolves in the variables of a service, the secret masked and not revealed; the instance cannot hold those names', async () => {
    const { api, project } = await fixture();
    const { storage, credentials } = await api.storage.create({ projectId: project.id, name: 'files', bucket: 'uploads' });
    const web = (await api.services.create({ projectId: project.id, name: 'web', repoFullName: 'acme/web' })).service;
    await api.env.set({ serviceId: web.id, key: 'AWS_SECRET_ACCESS_KEY', value: '${files.AWS_SECRET_ACCESS_KEY}' });
    const { variable } = await api.variables.create({ serviceId: web.id, key: 'BUCKET', value: '${files.BUCKET_NAME}' });
    expect(variable).toMatchObject({ value: '${files.BUCKET_NAME}', resolvedValue: 'uploads', problems: [] });
    const { variables } = await api.variables.list({ serviceId: web.id });
    const secret = variables.find((v) => v.key === 'AWS_SECRET_ACCESS_KEY')!;
    expect(secret).toMatchObject({ value: '${files.AWS_SECRET_ACCESS_KEY}', resolvedValue: '', problems: [] });
    expect((await api.env.reveal({ serviceId: web.id, envId: secret.id })).resolvedValue).toBe('');
    for (const refused of [
      api.env.set({ serviceId: storage.id, key: 'AWS_SECRET_ACCESS_KEY', value: 'x' }),
      api.variables.create({ serviceId: storage.id, key: 'AWS_ACCESS_KEY_ID', value: 'x' }),
    ])
      expect(await errorOf(refused)).toMatchObject({ code: 'BAD_REQUEST', error: 'validation_error', field: 'key' });
    expect((await api.variables.list({ serviceId: storage.id })).variables).toEqual([]);
    expect(JSON.stringify(await api.services.overview({ serviceId: web.id }))).not.toContain(credentials.secretAccessKey);
  });

  it('a clone answers its copies a new key pair once, and their references resolve to it', async () => {
    const { api, project } = await fixture();
    const { storage, credentials } = await api.storage.create({ projectId: project.id, name: 'files' });
    const web = (await api.services.create({ projectId: project.id, name: 'web', repoFullName: 'acme/web' })).service;
    await api.env.set({ serviceId: web.id, key: 'AWS_ACCESS_KEY_ID', value: '${files.AWS_ACCESS_KEY_ID}' });
    const clone = await api.environments.clone({ environmentId: project.id, name: 'staging' });
    const copy = clone.services.find((s) => s.slug === 'files')!;
    const webCopy = clone.services.find((s) => s.slug === 'web')!;
    expect(clone.storageCredentials).toEqual([
      { storageId: copy.id, accessKeyId: expect.stringMatching(/^SLW/), secretAccessKey: expect.any(String) },
    ]);
    const [keys] = clone.storageCredentials;
    expect(keys!.accessKeyId).not.toBe(credentials.accessKeyId);
    expect(keys!.secretAccessKey).not.toBe(credentials.secretAccessKey);
    // The copy is a storage instance of its own: same bucket, its access key id shown, its secret not.
    const shown = (await api.storage.get({ storageId: copy.id })).storage;
    expect(shown.s3).toMatchObject({ bucket: 'files', accessKeyId: keys!.accessKeyId, endpoint: 'http://files:7070' });
    expect((await api.storage.get({ storageId: storage.id })).storage.s3.accessKeyId).toBe(credentials.accessKeyId);
    const resolvedIn = async (serviceId: string) =>
      (await api.variables.list({ serviceId })).variables.find((v) => v.key === 'AWS_ACCESS_KEY_ID')!.resolvedValue;
    expect(await resolvedIn(webCopy.id)).toBe(keys!.accessKeyId);
    expect(await resolvedIn(web.id)).toBe(credentials.accessKeyId);
    const later = JSON.stringify([
      await api.storage.list(),
      await api.environments.get({ environmentId: clone.environment.id }),
      await api.apps.listInEnvironment({ environmentId: clone.environment.id }),
      await api.variables.list({ serviceId: webCopy.id }),
    ]);
    expect(later).not.toContain(keys!.secretAccessKey);
  });
});
