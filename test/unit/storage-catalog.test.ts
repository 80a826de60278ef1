import { afterEach, describe, expect, it } from 'vitest';
import type { Actor } from '../../src/index.js';
import { SecretBox } from '../../src/platform/secret-box.js';
import { createRuntimeHarness, FakeStorageServer, runnerSteps, type RuntimeHarness } from '../helpers/runtime-fakes.js';

/**
 * Storage instances (src/storage/storage-catalog.service.ts) over fakes of the runtime: what creating
 * one makes, how it is deployed (image, command, volume, key pair, readiness), stop and start,
 * deletion, its object-store settings for backups, routing, and what it refuses.
 */
const admin: Actor = { keyId: 'admin', access: 'write', projectIds: null };
const noDbScope: Actor = { keyId: 'pat', access: 'write', projectIds: null, via: 'token', scopes: ['project:write', 'project:read'] };

let h: RuntimeHarness;
let server: FakeStorageServer;
const { finished, container, logs } = runnerSteps(() => h, admin, 5000);

afterEach(async () => {
  await h?.close();
});

async function harness(opts: Parameters<typeof createRuntimeHarness>[0] = {}, script?: Array<string | Error>) {
  server = new FakeStorageServer(script);
  h = await createRuntimeHarness({ storageServer: server, ...opts });
  await h.runner.start();
  return h.services.projects.create(admin, { name: 'Shop', description: '' });
}

async function codeOf(promise: Promise<unknown>): Promise<{ code: string; field?: string }> {
  try {
    await promise;
  } catch (error) {
    const e = error as { code: string; details?: { field?: string } };
    return { code: e.code, ...(e.details?.field ? { field: e.details.field } : {}) };
  }
  throw new Error('expected a rejection');
}

async function deployed(name = 'files', extra: { bucket?: string; publicEnabled?: boolean } = {}) {
  const p = await harness();
  const created = await h.services.storage.create(admin, p.id, { name, ...extra });
  const d = await finished((await h.services.deployments.create(admin, created.storage.id)).id);
  expect(d.status, (await logs(d.id)).join('\n')).toBe('succeeded');
  return { p, created, d, c: container(d.containerName) };
}

describe('creating a storage instance', () => {
  it('answers the instance and its key pair once; the secret is stored sealed, in no variable and no later answer', async () => {
    const p = await harness();
    const { storage, credentials } = await h.services.storage.create(admin, p.id, { name: 'Files' });
    expect(credentials.accessKeyId).toMatch(/^SLW[A-Z2-7]{17}$/);
    expect(credentials.secretAccessKey).toMatch(/^[A-Za-z0-9]{40}$/);
    expect(storage).toMatchObject({
      projectId: p.id,
      name: 'Files',
      slug: 'files',
      repoUrl: 'storage',
      repoFullName: 'storage:s3',
      containerImage: null,
      runtimeMode: 'web',
      internalPort: 7070,
      status: 'idle',
      primaryUrl: '',
      s3: {
        bucket: 'files',
        region: 'us-east-1',
        accessKeyId: credentials.accessKeyId,
        endpoint: 'http://files:7070',
        publicEndpoint: null,
        publicEnabled: false,
        forcePathStyle: true,
      },
    });
    const record = await h.database.store.projects.getService(storage.id);
    expect(record?.source.kind).toBe('storage');
    const sealed = record?.source.kind === 'storage' ? record.source.secretAccessKeyEncrypted : '';
    expect(sealed).not.toContain(credentials.secretAccessKey);
    expect(SecretBox.fromSecret('test-secret-key-test-secret-key-0123').decrypt(sealed)).toBe(credentials.secretAccessKey);
    expect(await h.services.env.list(admin, storage.id)).toEqual([]);
    const later = JSON.stringify([
      await h.services.storage.get(admin, storage.id),
      await h.services.storage.list(admin),
      await h.services.serviceReader.overview(admin, storage.id),
      await h.services.projects.list(admin),
    ]);
    expect(later).not.toContain(credentials.secretAccessKey);
    expect(later).toContain(credentials.accessKeyId);
  });

  it('takes a bucket name by S3 rules, and each instance has a key pair of its own', async () => {
    const p = await harness();
    const a = await h.services.storage.create(admin, p.id, { name: 'media', bucket: 'user-uploads.v2' });
    const b = await h.services.storage.create(admin, p.id, { name: 'x' });
    expect(a.storage.s3.bucket).toBe('user-uploads.v2');
    expect(b.storage.s3.bucket).toBe('x-bucket');
    expect(a.credentials.accessKeyId).not.toBe(b.credentials.accessKeyId);
    expect(a.credentials.secretAccessKey).not.toBe(b.credentials.secretAccessKey);
    for (const bucket of ['ab', 'Uploads', 'under_score', '-start', 'a..b', '192.168.1.1', 'x'.repeat(64)])
      expect(await codeOf(h.services.storage.create(admin, p.id, { name: 'bad', bucket })), bucket).toEqual({
        code: 'validation_error',
        field: 'bucket',
      });
  });

  it('needs db:manage, a write key and a visible project; the detailed API cannot make one (its secret would never be shown)', async () => {
    const p = await harness();
    expect((await codeOf(h.services.storage.create(noDbScope, p.id, { name: 'files' }))).code).toBe('insufficient_scope');
    expect((await codeOf(h.services.storage.create({ ...admin, access: 'read' }, p.id, { name: 'files' }))).code).toBe('forbidden');
    expect((await codeOf(h.services.storage.create({ ...admin, projectIds: ['other'] }, p.id, { name: 'files' }))).code).toBe('not_found');
    expect(
      await codeOf(h.services.serviceCreation.create(admin, p.id, { name: 'files', repoUrl: 'storage', repoFullName: 'storage:s3' })),
    ).toEqual({ code: 'validation_error', field: 'repoUrl' });
    expect(await h.services.storage.list(admin)).toEqual([]);
  });

  it('the storage paths answer 404 for a service that is not a storage instance, and the instance stays web', async () => {
    const p = await harness();
    const web = await h.services.serviceCreation.create(admin, p.id, { name: 'web', repoFullName: 'acme/web' });
    const { storage } = await h.services.storage.create(admin, p.id, { name: 'files' });
    expect((await codeOf(h.services.storage.get(admin, web.id))).code).toBe('not_found');
    expect((await codeOf(h.services.storage.stop(admin, web.id))).code).toBe('not_found');
    expect((await codeOf(h.services.storage.delete(admin, web.id))).code).toBe('not_found');
    expect((await h.services.storage.list(admin)).map((s) => s.id)).toEqual([storage.id]);
    expect(await codeOf(h.services.serviceChanges.update(admin, storage.id, { runtimeMode: 'worker' }))).toEqual({
      code: 'validation_error',
      field: 'runtimeMode',
    });
    expect((await codeOf(h.services.removal.deleteService(noDbScope, storage.id))).code).toBe('insufficient_scope');
  });
});

describe('deploying a storage instance', () => {
  it('runs the storage image with `posix /data` on its data volume, its key pair in the env, ready once its bucket answers', async () => {
    const { created, d, c } = await deployed();
    const { storage, credentials } = created;
    expect(c.image).toBe(d.imageTag);
    expect(h.engine.pulls).toEqual(['versity/versitygw:v1.8.0']);
    expect(c.cmd).toEqual(['posix', '/data']);
    expect(c.volumes).toEqual([{ name: `slipway-${storage.id}-data`, target: '/data' }]);
    expect(c.aliases).toEqual(['files']);
    expect(c.env).toMatchObject({
      ROOT_ACCESS_KEY: credentials.accessKeyId,
      ROOT_SECRET_KEY: credentials.secretAccessKey,
      VGW_PORT: ':7070',
      VGW_REGION: 'us-east-1',
    });
    expect(server.checks).toEqual([
      {
        host: c.ip,
        port: 7070,
        region: 'us-east-1',
        bucket: 'files',
        accessKeyId: credentials.accessKeyId,
        secretAccessKey: credentials.secretAccessKey,
      },
    ]);
    const lines = (await logs(d.id)).join('\n');
    expect(lines).toContain('Waiting for the storage server to answer its readiness check on port 7070');
    expect(lines).toContain('Storage server ready: bucket answers HeadBucket');
    expect(lines).not.toContain(credentials.secretAccessKey);
    expect(await h.services.storage.get(admin, storage.id)).toMatchObject({ status: 'active', reachable: true });
  });

  it('the image is a setting (STORAGE_IMAGE)', async () => {
    const p = await harness({ config: { storage: { image: 'registry.example.com/s3/versitygw:v1.9.0' } } });
    const { storage } = await h.services.storage.create(admin, p.id, { name: 'files' });
    const d = await finished((await h.services.deployments.create(admin, storage.id)).id);
    expect(d.status).toBe('succeeded');
    expect(h.engine.pulls).toEqual(['registry.example.com/s3/versitygw:v1.9.0']);
  });

  it('a redeploy stops the previous server before the next takes the volume, and keeps the volume', async () => {
    const { created, c } = await deployed();
    const d2 = await finished((await h.services.deployments.create(admin, created.storage.id)).id);
    expect(d2.status, (await logs(d2.id)).join('\n')).toBe('succeeded');
    const next = container(d2.containerName);
    expect(h.journal.indexOf(`engine.stopContainer ${c.name}`)).toBeLessThan(h.journal.indexOf(`engine.run ${next.name}`));
    expect(next.volumes).toEqual(c.volumes);
    expect((await logs(d2.id)).join('\n')).toContain('a data volume takes one server at a time');
  });

  it('a server whose bucket never answers fails the deployment, saying why', async () => {
    const p = await harness({}, [new Error('object store bucket files failed (HTTP 403): SignatureDoesNotMatch')]);
    const { storage } = await h.services.storage.create(admin, p.id, { name: 'files' });
    const d = await finished((await h.services.deployments.create(admin, storage.id)).id);
    expect(d.status).toBe('failed');
    expect((await logs(d.id)).join('\n')).toMatch(/The storage server did not pass its readiness check within .*SignatureDoesNotMatch/);
  });
});

describe('stop, start and delete', () => {
  it('stop stops the container and keeps it and its volume; start runs the same container again', async () => {
    const { created, c } = await deployed();
    const id = created.storage.id;
    expect(await h.services.storage.stop(admin, id)).toMatchObject({ status: 'stopped', reachable: false });
    expect(c.running).toBe(false);
    expect(h.engine.volumes.has(`slipway-${id}-data`)).toBe(true);
    expect((await h.services.storage.stop(admin, id)).status).toBe('stopped');
    expect((await h.services.storage.start(admin, id)).status).toBe('active');
    expect(c.running).toBe(true);
  });

  it('stop of an instance that does not run is 409 not_running', async () => {
    const p = await harness();
    const { storage } = await h.services.storage.create(admin, p.id, { name: 'files' });
    expect((await codeOf(h.services.storage.stop(admin, storage.id))).code).toBe('not_running');
  });

  it('delete removes its container and its volume', async () => {
    const { created, c } = await deployed();
    const id = created.storage.id;
    expect((await h.services.storage.delete(admin, id)).ok).toBe(true);
    expect(h.engine.byName(c.name)).toBeUndefined();
    expect(h.engine.volumes.has(`slipway-${id}-data`)).toBe(false);
    expect((await codeOf(h.services.storage.get(admin, id))).code).toBe('not_found');
  });

  it('is refused (409) while a database sends its backups there, and allowed once it does not, or with the database', async () => {
    const p = await harness();
    const { storage } = await h.services.storage.create(admin, p.id, { name: 'files' });
    const db = await h.services.databaseCatalog.create(admin, p.id, { name: 'main', engine: 'postgres' });
    await h.services.backupSettings.update(admin, db.id, { storageId: storage.id });
    const refused = await h.services.storage.delete(admin, storage.id).catch((e: { code: string; message: string }) => e);
    expect(refused).toMatchObject({ code: 'conflict', details: { serviceIds: [db.id] } });
    expect((refused as { message: string }).message).toContain('"main"');
    expect((await codeOf(h.services.removal.deleteService(admin, storage.id))).code).toBe('conflict');
    expect((await h.services.storage.get(admin, storage.id)).id).toBe(storage.id);
    // The whole project, the database with it: nothing that stays needs the instance.
    expect((await h.services.projects.delete(admin, p.id)).ok).toBeDefined();
    expect(await h.services.storage.list(admin)).toEqual([]);
  });

  it('is allowed once the database names another object store', async () => {
    const p = await harness();
    const { storage } = await h.services.storage.create(admin, p.id, { name: 'files' });
    const db = await h.services.databaseCatalog.create(admin, p.id, { name: 'main', engine: 'postgres' });
    await h.services.backupSettings.update(admin, db.id, { storageId: storage.id });
    await h.services.backupSettings.update(admin, db.id, { storageId: null });
    expect((await h.services.storage.delete(admin, storage.id)).ok).toBe(true);
  });
});

describe('as an object store, and on the network', () => {
  it('gives backups its bucket through its host port, with the key pair decrypted', async () => {
    const p = await harness();
    const { storage, credentials } = await h.services.storage.create(admin, p.id, { name: 'files' });
    expect(await h.services.objectStores.configOf(storage.id)).toEqual({
      endpoint: `http://127.0.0.1:${storage.hostPort}`,
      region: 'us-east-1',
      bucket: 'files',
      accessKeyId: credentials.accessKeyId,
      secretAccessKey: credentials.secretAccessKey,
      forcePathStyle: true,
    });
    const web = await h.services.serviceCreation.create(admin, p.id, { name: 'web', repoFullName: 'acme/web' });
    expect(await h.services.objectStores.configOf(web.id)).toBeNull();
    expect(await h.services.objectStores.configOf('nope')).toBeNull();
  });

  it('backup settings name a storage instance the caller sees, or none', async () => {
    const p = await harness();
    const other = await h.services.projects.create(admin, { name: 'Other', description: '' });
    const { storage } = await h.services.storage.create(admin, p.id, { name: 'files' });
    const elsewhere = await h.services.storage.create(admin, other.id, { name: 'files' });
    const db = await h.services.databaseCatalog.create(admin, p.id, { name: 'main', engine: 'postgres' });
    const web = await h.services.serviceCreation.create(admin, p.id, { name: 'web', repoFullName: 'acme/web' });
    expect(await h.services.backupSettings.update(admin, db.id, { storageId: storage.id, storage: 'object' })).toMatchObject({
      storageId: storage.id,
      storage: 'object',
    });
    // Another project's instance, when the key sees that project too.
    expect((await h.services.backupSettings.update(admin, db.id, { storageId: elsewhere.storage.id })).storageId).toBe(
      elsewhere.storage.id,
    );
    const onlyP = { ...admin, projectIds: [p.id] };
    for (const storageId of [elsewhere.storage.id, web.id, 'nope'])
      expect(await codeOf(h.services.backupSettings.update(onlyP, db.id, { storageId }))).toEqual({
        code: 'validation_error',
        field: 'storageId',
      });
    // Without an instance and without a platform object store, object storage has nowhere to go.
    expect(await codeOf(h.services.backupSettings.update(admin, db.id, { storageId: null }))).toEqual({
      code: 'validation_error',
      field: 'storage',
    });
  });

  it('the proxy routes a public instance by its generated hostname, a private one only by its custom domains', async () => {
    const p = await harness({ config: { rootDomain: 'apps.test' } });
    const priv = await h.services.storage.create(admin, p.id, { name: 'files' });
    const pub = await h.services.storage.create(admin, p.id, { name: 'media', publicEnabled: true });
    const hostnames = async () => (await h.services.routing.table()).routes.map((r) => r.hostname).sort();
    expect(await hostnames()).toEqual(['media-shop.apps.test']);
    expect(pub.storage.s3).toMatchObject({ publicEnabled: true, publicEndpoint: 'https://media-shop.apps.test' });
    expect(priv.storage.s3.publicEndpoint).toBeNull();
    await h.services.domains.create(admin, priv.storage.id, 'files.example.com');
    expect(await hostnames()).toEqual(['files.example.com', 'media-shop.apps.test']);
    expect((await h.services.storage.get(admin, priv.storage.id)).s3.publicEndpoint).toBe('https://files.example.com');
  });
});
