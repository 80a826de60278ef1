import { afterEach, describe, expect, it, vi } from 'vitest';
import { ConflictError, ForbiddenError, InsufficientScopeError, NotFoundError, ValidationError } from '../../src/domain/errors.js';
import { MAX_ENVIRONMENTS_PER_PROJECT } from '../../src/domain/environments.js';
import type { Actor } from '../../src/index.js';
import { createRuntimeHarness, FakeStorageServer, runnerSteps, type RuntimeHarness } from '../helpers/runtime-fakes.js';
import { createScratchDatabase } from '../helpers/postgres.js';
import {
  admin,
  database,
  freshHarnessPerTest,
  h,
  PASSWORD_ALPHABET,
  project,
  reader,
  record,
  rejection,
  replaceHarness,
  repo,
  scoped,
} from '../helpers/unit-harness.js';

/** Environments (src/environments): the first one, names, apps in an environment, clone, rename, delete; per-environment references and hostnames. */
freshHarnessPerTest();

const ROOT = 'apps.test';
const token = (...scopes: NonNullable<Actor['scopes']>): Actor => ({ ...admin, keyId: 'token', via: 'token', scopes });

async function withRootDomain() {
  return replaceHarness({ config: { rootDomain: ROOT } });
}

async function environments(projectId: string) {
  return h.services.environments.list(admin, projectId);
}

describe('environments of a project', () => {
  it('a project is created with `production`, its default, which has the project id', async () => {
    const p = await project();
    const list = await environments(p.id);
    expect(list).toEqual([
      {
        id: p.id,
        projectId: p.id,
        name: 'production',
        isDefault: true,
        serviceCount: 0,
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      },
    ]);
    // The detailed API's creation lands there.
    const web = await h.services.serviceCreation.create(admin, p.id, repo('web'));
    expect(web.environmentId).toBe(p.id);
    expect((await environments(p.id))[0]!.serviceCount).toBe(1);
  });

  it('creates empty environments with checked, unique names, up to the limit', async () => {
    const p = await project();
    const staging = await h.services.environments.create(admin, p.id, { name: 'staging' });
    expect(staging).toMatchObject({ projectId: p.id, name: 'staging', isDefault: false, serviceCount: 0 });
    expect(staging.id).not.toBe(p.id);
    for (const bad of ['Staging', '-x', 'x-', 'a--b', '1st', 'pr_42', 'a'.repeat(33), 'staging ']) {
      const error = await rejection(h.services.environments.create(admin, p.id, { name: bad }));
      expect(error, bad).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).details.field).toBe('name');
    }
    expect(await rejection(h.services.environments.create(admin, p.id, { name: 'staging' }))).toBeInstanceOf(ConflictError);
    // The same name in another project is another environment.
    expect((await h.services.environments.create(admin, (await project('Other')).id, { name: 'staging' })).name).toBe('staging');
    for (let i = (await environments(p.id)).length; i < MAX_ENVIRONMENTS_PER_PROJECT; i++)
      await h.services.environments.create(admin, p.id, { name: `pr-${i}` });
    const over = await rejection(h.services.environments.create(admin, p.id, { name: 'one-too-many' }));
    expect(over).toBeInstanceOf(ConflictError);
    expect((over as Error).message).toMatch(`at most ${MAX_ENVIRONMENTS_PER_PROJECT}`);
  });

  it("uses the project's access: read keys read, scoped keys see only their projects' environments", async () => {
    const p = await project();
    const other = await project('Other');
    const staging = await h.services.environments.create(admin, p.id, { name: 'staging' });
    expect(await h.services.environments.list(reader, p.id)).toHaveLength(2);
    expect(await rejection(h.services.environments.create(reader, p.id, { name: 'x' }))).toBeInstanceOf(ForbiddenError);
    expect(await rejection(h.services.environments.clone(reader, staging.id, { name: 'x' }))).toBeInstanceOf(ForbiddenError);
    expect(await rejection(h.services.environments.delete(reader, staging.id))).toBeInstanceOf(ForbiddenError);
    const outsider = scoped(other.id);
    expect(await rejection(h.services.environments.list(outsider, p.id))).toBeInstanceOf(NotFoundError);
    for (const call of [
      () => h.services.environments.get(outsider, staging.id),
      () => h.services.environments.listApps(outsider, staging.id),
      () => h.services.environments.update(outsider, staging.id, { name: 'renamed' }),
      () => h.services.environments.delete(outsider, staging.id),
      () => h.services.environments.clone(outsider, staging.id, { name: 'copy' }),
      () => h.services.serviceCreation.createInEnvironment(outsider, staging.id, repo('web')),
    ]) {
      // The 404 of an unknown environment, naming the project nowhere.
      const error = await rejection(call());
      expect(error).toBeInstanceOf(NotFoundError);
      expect((error as Error).message).not.toContain(p.id);
    }
    expect((await h.services.environments.get(admin, staging.id)).name).toBe('staging');
    expect((await h.services.environments.get(scoped(p.id), staging.id)).name).toBe('staging');
  });

  it('creates apps in the environment named; slugs are unique per environment, not per project', async () => {
    const p = await project();
    const staging = await h.services.environments.create(admin, p.id, { name: 'staging' });
    const prodWeb = await h.services.serviceCreation.create(admin, p.id, repo('web'));
    const stagingWeb = await h.services.serviceCreation.createInEnvironment(admin, staging.id, repo('web'));
    const second = await h.services.serviceCreation.createInEnvironment(admin, staging.id, repo('web'));
    expect([prodWeb.slug, stagingWeb.slug, second.slug]).toEqual(['web', 'web', 'web-2']);
    expect(stagingWeb).toMatchObject({ projectId: p.id, environmentId: staging.id });
    expect((await h.services.environments.listApps(admin, staging.id)).map((s) => s.id)).toEqual([stagingWeb.id, second.id]);
    expect((await h.services.environments.listApps(admin, p.id)).map((s) => s.id)).toEqual([prodWeb.id]);
    // A database in an environment needs db:manage, as anywhere.
    expect(
      await rejection(h.services.serviceCreation.createInEnvironment(token('project:write'), staging.id, database('db', 'redis'))),
    ).toBeInstanceOf(InsufficientScopeError);
    expect(
      (await h.services.serviceCreation.createInEnvironment(token('project:write', 'db:manage'), staging.id, database('db', 'redis'))).slug,
    ).toBe('db');
  });

  it('resolves ${slug.KEY} within the environment only; shared project variables reach every environment', async () => {
    const p = await project();
    const staging = await h.services.environments.create(admin, p.id, { name: 'staging' });
    await h.services.env.replaceShared(admin, p.id, { REGION: { value: 'eu' } });
    const prodDb = await h.services.serviceCreation.create(admin, p.id, repo('api'));
    await h.services.env.set(admin, prodDb.id, { key: 'TOKEN', value: 'prod-token' });
    const stagingApi = await h.services.serviceCreation.createInEnvironment(admin, staging.id, repo('api'));
    await h.services.env.set(admin, stagingApi.id, { key: 'TOKEN', value: 'staging-token' });
    const only = await h.services.serviceCreation.create(admin, p.id, repo('only-in-production'));
    await h.services.env.set(admin, only.id, { key: 'X', value: '1' });
    const stagingWeb = await h.services.serviceCreation.createInEnvironment(admin, staging.id, repo('web'));
    await h.services.env.set(admin, stagingWeb.id, { key: 'UPSTREAM', value: '${api.TOKEN}@${shared.REGION}' });
    await h.services.env.set(admin, stagingWeb.id, { key: 'ELSEWHERE', value: '${only-in-production.X}' });
    const resolved = await h.services.env.resolvedFor(await record(stagingWeb.id));
    expect(resolved.env).toMatchObject({ UPSTREAM: 'staging-token@eu', REGION: 'eu' });
    expect(resolved.problems).toEqual([
      'ELSEWHERE: ${only-in-production.X}: no service with slug "only-in-production" in this environment',
    ]);
    // Suggestions name only the environment's own services.
    const keys = (await h.services.suggestions.forService(admin, stagingWeb.id)).suggestions.map((s) => s.key);
    expect(keys).toContain('api.TOKEN');
    expect(keys).not.toContain('only-in-production.X');
  });

  it('gives each environment its own generated hostnames: <service>-<project> in the first, <service>-<environment>-<project> in others', async () => {
    await withRootDomain();
    const p = await project('Shop');
    const staging = await h.services.environments.create(admin, p.id, { name: 'staging' });
    const prod = await h.services.serviceCreation.create(admin, p.id, repo('web'));
    const copy = await h.services.serviceCreation.createInEnvironment(admin, staging.id, repo('web'));
    expect(prod.primaryUrl).toBe(`https://web-shop.${ROOT}`);
    expect(copy.primaryUrl).toBe(`https://web-staging-shop.${ROOT}`);
    const routes = (await h.services.routing.table()).routes.map((r) => [r.hostname, r.serviceId]);
    expect(routes).toEqual([
      [`web-shop.${ROOT}`, prod.id],
      [`web-staging-shop.${ROOT}`, copy.id],
    ]);
    // A slug whose label would be another environment's is bumped: `web-staging` in production would be web-staging-shop.
    expect((await h.services.serviceCreation.create(admin, p.id, repo('web-staging'))).slug).toBe('web-staging-2');
    // And a project whose slug makes the same label: service `web` of project `staging-shop`.
    const lookalike = await project('Staging Shop');
    expect((await h.services.serviceCreation.create(admin, lookalike.id, repo('web'))).slug).toBe('web-2');
  });
});

describe('clone', () => {
  it('copies services with their settings and variables (ciphertext as stored), no domains, no deployments, in order', async () => {
    await withRootDomain();
    const p = await project('Shop');
    const web = await h.services.serviceCreation.create(admin, p.id, {
      ...repo('web'),
      branch: 'release',
      rootDir: 'apps/web',
      buildCommand: 'npm run build',
      startCommand: 'node server.js',
      internalPort: 8080,
      gitToken: 'ghp_secretToken',
      env: [
        { key: 'GREETING', value: 'hello' },
        { key: 'API_KEY', value: 'sk_live_1', secret: true },
      ],
    });
    await h.services.serviceCreation.create(admin, p.id, { ...repo('jobs'), runtimeMode: 'worker' });
    await h.services.domains.create(admin, web.id, 'shop.example.test');
    await h.services.deployments.create(admin, web.id);

    const { environment, services } = await h.services.environments.clone(admin, p.id, { name: 'staging' });
    expect(environment).toMatchObject({ projectId: p.id, name: 'staging', isDefault: false, serviceCount: 2 });
    expect(services.map((s) => s.name)).toEqual(['web', 'jobs']);
    const [webCopy, workerCopy] = services;
    expect(webCopy).toMatchObject({
      environmentId: environment.id,
      projectId: p.id,
      slug: 'web',
      branch: 'release',
      rootDir: 'apps/web',
      buildCommand: 'npm run build',
      startCommand: 'node server.js',
      internalPort: 8080,
      hasGitToken: true,
      status: 'idle',
      reachable: false,
      preferredDomain: null,
      lastDeployedAt: null,
      primaryUrl: `https://web-staging-shop.${ROOT}`,
    });
    expect(workerCopy).toMatchObject({ slug: 'jobs', runtimeMode: 'worker', environmentId: environment.id });
    expect(webCopy!.id).not.toBe(web.id);
    expect(webCopy!.hostPort).not.toBe(web.hostPort);
    // Secrets are copied as stored: the same ciphertext, never decrypted and sealed again.
    const stored = async (id: string) => (await h.database.store.env.list([id])).map((v) => [v.key, v.valueEncrypted, v.secret]);
    expect(await stored(webCopy!.id)).toEqual(await stored(web.id));
    expect((await record(webCopy!.id)).gitTokenEncrypted).toBe((await record(web.id)).gitTokenEncrypted);
    expect(await h.envValues(webCopy!.id)).toEqual({ GREETING: 'hello', API_KEY: 'sk_live_1' });
    // What is about running stays behind.
    expect((await h.services.serviceReader.overview(admin, webCopy!.id)).domains).toEqual([]);
    expect(await h.database.store.deployments.list(webCopy!.id)).toEqual([]);
    // The source is as it was.
    expect((await h.services.serviceReader.overview(admin, web.id)).domains.map((d) => d.hostname)).toEqual(['shop.example.test']);
    expect((await environments(p.id)).map((e) => [e.name, e.serviceCount])).toEqual([
      ['production', 2],
      ['staging', 2],
    ]);
  });

  it('copies databases empty, with the same user and database names and new passwords, and their generated public hostname', async () => {
    await withRootDomain();
    const p = await project('Shop');
    const db = await h.services.serviceCreation.create(admin, p.id, {
      ...database('db', 'postgres'),
      databasePublicHostname: 'db.custom.test',
    });
    const cache = await h.services.serviceCreation.create(admin, p.id, database('cache', 'redis'));
    const web = await h.services.serviceCreation.create(admin, p.id, repo('web'));
    await h.services.env.set(admin, web.id, {
      key: 'DATABASE_URL',
      value: 'postgres://${db.POSTGRES_USER}:${db.POSTGRES_PASSWORD}@db/${db.POSTGRES_DB}',
    });

    const { services } = await h.services.environments.clone(admin, p.id, { name: 'preview' });
    const dbCopy = services.find((s) => s.slug === 'db')!;
    const cacheCopy = services.find((s) => s.slug === 'cache')!;
    const [before, after] = [await h.envValues(db.id), await h.envValues(dbCopy.id)];
    expect(after.POSTGRES_USER).toBe(before.POSTGRES_USER);
    expect(after.POSTGRES_DB).toBe(before.POSTGRES_DB);
    expect(after.POSTGRES_PASSWORD).toMatch(PASSWORD_ALPHABET);
    expect(after.POSTGRES_PASSWORD).not.toBe(before.POSTGRES_PASSWORD);
    expect((await h.envValues(cacheCopy.id)).REDIS_PASSWORD).not.toBe((await h.envValues(cache.id)).REDIS_PASSWORD);
    expect((await h.database.store.env.getByKey(dbCopy.id, 'POSTGRES_PASSWORD'))!.secret).toBe(true);
    // A custom public hostname is a hostname: never copied; the copy gets its environment's generated one.
    expect(dbCopy.databasePublicHostname).toBe(`db-preview-shop.${ROOT}`);
    // The web copy's reference resolves to the copy's new password.
    const resolved = await h.services.env.resolvedFor(await record(services.find((s) => s.slug === 'web')!.id));
    expect(resolved.env.DATABASE_URL).toBe(`postgres://${after.POSTGRES_USER}:${after.POSTGRES_PASSWORD}@db/${after.POSTGRES_DB}`);
  });

  it('needs db:manage to copy databases, a free name, and a name whose hostnames are nobody else’s', async () => {
    await withRootDomain();
    const p = await project('Shop');
    await h.services.serviceCreation.create(admin, p.id, database('db', 'redis'));
    const web = await h.services.serviceCreation.create(admin, p.id, repo('web'));
    expect(await rejection(h.services.environments.clone(token('project:write'), p.id, { name: 'staging' }))).toBeInstanceOf(
      InsufficientScopeError,
    );
    await h.services.environments.create(admin, p.id, { name: 'staging' });
    expect(await rejection(h.services.environments.clone(admin, p.id, { name: 'staging' }))).toBeInstanceOf(ConflictError);
    // Project `qa-shop` has a service `web`: `web` cloned into environment `qa` of `shop` would share `web-qa-shop`.
    const qaShop = await project('QA Shop');
    await h.services.serviceCreation.create(admin, qaShop.id, repo('web'));
    const clash = await rejection(h.services.environments.clone(admin, p.id, { name: 'qa' }));
    expect(clash).toBeInstanceOf(ConflictError);
    expect((clash as ConflictError).details).toEqual({ hostnameLabel: 'web-qa-shop' });
    // Nothing of a refused clone is left.
    expect((await environments(p.id)).map((e) => e.name)).toEqual(['production', 'staging']);
    expect((await h.database.store.projects.listServices([p.id])).map((s) => s.id).sort()).toEqual(
      [web.id, (await h.database.store.projects.listServices([p.id])).find((s) => s.slug === 'db')!.id].sort(),
    );
    expect((await h.services.environments.clone(token('project:write', 'db:manage'), p.id, { name: 'preview' })).services).toHaveLength(2);
  });
  it('copies a storage instance with its bucket and a new key pair, answered once; copying one needs db:manage', async () => {
    const p = await project('Shop');
    const created = await h.services.storage.create(admin, p.id, { name: 'files', bucket: 'uploads' });
    await h.services.serviceCreation.create(admin, p.id, repo('web'));
    // Its answer shows a secret, as creating one does: the same scope.
    expect(await rejection(h.services.environments.clone(token('project:write'), p.id, { name: 'staging' }))).toBeInstanceOf(
      InsufficientScopeError,
    );
    const clone = await h.services.environments.clone(token('project:write', 'db:manage'), p.id, { name: 'staging' });
    const copy = clone.services.find((s) => s.slug === 'files')!;
    expect(clone.storageCredentials).toEqual([
      {
        storageId: copy.id,
        accessKeyId: expect.stringMatching(/^SLW[A-Z2-7]{17}$/),
        secretAccessKey: expect.stringMatching(/^[A-Za-z0-9]{40}$/),
      },
    ]);
    const [keys] = clone.storageCredentials;
    expect(keys!.accessKeyId).not.toBe(created.credentials.accessKeyId);
    const source = (await record(copy.id)).source;
    expect(source).toMatchObject({ kind: 'storage', bucket: 'uploads', accessKeyId: keys!.accessKeyId, publicEnabled: false });
    expect(h.secrets.decrypt(source.kind === 'storage' ? source.secretAccessKeyEncrypted : '')).toBe(keys!.secretAccessKey);
    expect(JSON.stringify(clone.services)).not.toContain(keys!.secretAccessKey);
    // Production's instance keeps its own.
    const original = (await record(created.storage.id)).source;
    expect(original).toMatchObject({ accessKeyId: created.credentials.accessKeyId });
    // Shown once: the storage routes answer the access key id, never the secret.
    expect(JSON.stringify(await h.services.storage.list(admin))).not.toContain(keys!.secretAccessKey);
    // A clone without storage instances answers an empty list.
    const again = await h.services.environments.clone(token('project:write', 'db:manage'), clone.environment.id, { name: 'qa' });
    expect(again.storageCredentials).toHaveLength(1);
    await h.services.removal.deleteService(admin, again.services.find((s) => s.slug === 'files')!.id);
    expect(
      (await h.services.environments.clone(token('project:write'), again.environment.id, { name: 'preview' })).storageCredentials,
    ).toEqual([]);
  });
});

describe('rename and delete', () => {
  it('renaming moves generated hostnames (and a generated database hostname) with the name; the first environment has none of its name', async () => {
    await withRootDomain();
    const p = await project('Shop');
    const { environment: staging } = await h.services.environments.clone(admin, p.id, { name: 'staging' });
    await h.services.serviceCreation.createInEnvironment(admin, staging.id, repo('web'));
    const db = await h.services.serviceCreation.createInEnvironment(admin, staging.id, database('db', 'redis'));
    const custom = await h.services.serviceCreation.createInEnvironment(admin, staging.id, {
      ...database('custom', 'redis'),
      databasePublicHostname: 'custom.example.test',
    });
    expect(db.databasePublicHostname).toBe(`db-staging-shop.${ROOT}`);

    const { environment, proxy } = await h.services.environments.update(admin, staging.id, { name: 'qa' });
    expect(environment).toMatchObject({ id: staging.id, name: 'qa' });
    expect(proxy.ok).toBe(true);
    const apps = await h.services.environments.listApps(admin, staging.id);
    expect(apps.find((s) => s.slug === 'web')!.primaryUrl).toBe(`https://web-qa-shop.${ROOT}`);
    expect(apps.find((s) => s.slug === 'db')!.databasePublicHostname).toBe(`db-qa-shop.${ROOT}`);
    expect(apps.find((s) => s.id === custom.id)!.databasePublicHostname).toBe('custom.example.test');
    expect((await h.services.routing.table()).routes.map((r) => r.hostname)).toEqual([`web-qa-shop.${ROOT}`]);

    await h.services.serviceCreation.create(admin, p.id, repo('api'));
    await h.services.environments.update(admin, p.id, { name: 'live' });
    expect((await environments(p.id)).map((e) => e.name)).toEqual(['live', 'qa']);
    expect((await h.services.routing.table()).routes.map((r) => r.hostname)).toEqual([`api-shop.${ROOT}`, `web-qa-shop.${ROOT}`]);

    expect(await rejection(h.services.environments.update(admin, staging.id, { name: 'live' }))).toBeInstanceOf(ConflictError);
    expect(await rejection(h.services.environments.update(admin, staging.id, { name: 'No Good' }))).toBeInstanceOf(ValidationError);
  });

  it('deletes an environment with its services, keeps the last one, and moves the default to the oldest left', async () => {
    const p = await project();
    const web = await h.services.serviceCreation.create(admin, p.id, repo('web'));
    await h.services.env.set(admin, web.id, { key: 'A', value: '1' });
    const { environment: staging, services } = await h.services.environments.clone(admin, p.id, { name: 'staging' });
    const copy = services[0]!;
    await h.services.domains.create(admin, copy.id, 'staging.example.test');

    const proxy = await h.services.environments.delete(admin, staging.id);
    expect(proxy).toMatchObject({ ok: true });
    expect(await h.database.store.projects.getService(copy.id)).toBeNull();
    expect(await h.database.store.env.list([copy.id])).toEqual([]);
    expect(await h.database.store.domains.list([copy.id])).toEqual([]);
    expect(await rejection(h.services.environments.get(admin, staging.id))).toBeInstanceOf(NotFoundError);
    expect(await h.envValues(web.id)).toEqual({ A: '1' });

    const last = await rejection(h.services.environments.delete(admin, p.id));
    expect(last).toBeInstanceOf(ConflictError);
    expect((last as Error).message).toMatch(/last environment/);

    // The first environment can go once another exists; the oldest left is then the default.
    const qa = await h.services.environments.create(admin, p.id, { name: 'qa' });
    const later = await h.services.environments.create(admin, p.id, { name: 'later' });
    await h.services.environments.delete(admin, p.id);
    expect((await environments(p.id)).map((e) => [e.name, e.isDefault])).toEqual([
      ['qa', true],
      ['later', false],
    ]);
    expect((await h.services.serviceCreation.create(admin, p.id, repo('api'))).environmentId).toBe(qa.id);
    expect(later.id).not.toBe(qa.id);
  });

  it('deleting a project deletes its environments', async () => {
    const p = await project();
    await h.services.environments.create(admin, p.id, { name: 'staging' });
    await h.services.projects.delete(admin, p.id);
    expect(await h.database.store.environments.list([p.id])).toEqual([]);
  });

  it("a transferred service goes to the target project's default environment", async () => {
    const source = await project('Source');
    const target = await project('Target');
    const { environment: staging } = await h.services.environments.clone(admin, source.id, { name: 'staging' });
    const web = await h.services.serviceCreation.createInEnvironment(admin, staging.id, repo('web'));
    const moved = await h.services.serviceChanges.transfer(admin, web.id, target.id);
    expect(moved.service).toMatchObject({ projectId: target.id, environmentId: target.id });
  });
});

describe('environments at runtime', () => {
  let rh: RuntimeHarness | undefined;
  afterEach(async () => {
    await rh?.close();
    rh = undefined;
  });

  it('a clone deploys on its own network with its own values; deleting it removes its runtime and network, production keeps running', async () => {
    rh = await createRuntimeHarness();
    const r = rh;
    const { queue, finished } = runnerSteps(() => r, admin, 5000);
    await r.runner.start();
    const p = await r.services.projects.create(admin, { name: 'Shop', description: '' });
    const db = await r.services.serviceCreation.create(admin, p.id, database('db', 'redis'));
    const web = await r.services.serviceCreation.create(admin, p.id, {
      name: 'web',
      repoUrl: 'container-image',
      containerImage: 'busybox:latest',
      env: [{ key: 'REDIS_URL', value: 'redis://default:${db.REDIS_PASSWORD}@db:6379/0' }],
    });
    r.engine.addImage('busybox:latest');
    for (const id of [db.id, web.id]) expect((await finished(await queue(id))).status).toBe('succeeded');

    const { environment: staging, services } = await r.services.environments.clone(admin, p.id, { name: 'staging' });
    for (const copy of services) expect((await finished(await queue(copy.id))).status).toBe('succeeded');
    const running = (serviceId: string) => r.engine.containersOf(serviceId).find((c) => c.running)!;
    const webCopy = services.find((s) => s.slug === 'web')!;
    const dbCopy = services.find((s) => s.slug === 'db')!;
    expect(running(web.id)).toMatchObject({ network: `slipway-${p.id}`, aliases: ['web'] });
    expect(running(webCopy.id)).toMatchObject({ network: `slipway-${staging.id}`, aliases: ['web'] });
    expect(running(dbCopy.id)).toMatchObject({ network: `slipway-${staging.id}`, aliases: ['db'] });
    expect(running(webCopy.id).labels['slipway.environment']).toBe(staging.id);
    const password = async (id: string) => (await r.database.store.env.getByKey(id, 'REDIS_PASSWORD'))!.valueEncrypted;
    const secrets = r.services.env;
    expect(running(web.id).env.REDIS_URL).toBe(
      (await secrets.resolvedFor(await r.database.store.projects.getService(web.id).then((s) => s!))).env.REDIS_URL,
    );
    expect(running(webCopy.id).env.REDIS_URL).not.toBe(running(web.id).env.REDIS_URL);
    expect(await password(dbCopy.id)).not.toBe(await password(db.id));
    expect(r.engine.networks.has(`slipway-${staging.id}`)).toBe(true);

    const remove = vi.spyOn(r.teardown, 'removeService');
    await r.services.environments.delete(admin, staging.id);
    expect(remove.mock.calls.map((call) => call[0].id).sort()).toEqual([webCopy.id, dbCopy.id].sort());
    expect(r.engine.containersOf(webCopy.id)).toEqual([]);
    expect(r.engine.removedVolumes).toEqual([`slipway-${dbCopy.id}-data`]);
    expect(r.engine.removedNetworks).toEqual([`slipway-${staging.id}`]);
    expect(running(web.id)).toBeDefined();
    expect(running(db.id)).toBeDefined();
  });

  it("a storage instance's clone runs on a new volume with its new key pair, and the copies' references use it", async () => {
    rh = await createRuntimeHarness({ storageServer: new FakeStorageServer() });
    const r = rh;
    const { queue, finished } = runnerSteps(() => r, admin, 5000);
    await r.runner.start();
    const p = await r.services.projects.create(admin, { name: 'Shop', description: '' });
    const files = await r.services.storage.create(admin, p.id, { name: 'files' });
    const worker = await r.services.serviceCreation.create(admin, p.id, {
      name: 'worker',
      repoUrl: 'container-image',
      containerImage: 'busybox:latest',
      runtimeMode: 'worker',
      env: [
        { key: 'AWS_ACCESS_KEY_ID', value: '${files.AWS_ACCESS_KEY_ID}' },
        { key: 'AWS_SECRET_ACCESS_KEY', value: '${files.AWS_SECRET_ACCESS_KEY}' },
      ],
    });
    r.engine.addImage('busybox:latest');
    for (const id of [files.storage.id, worker.id]) expect((await finished(await queue(id))).status).toBe('succeeded');
    const { services, storageCredentials } = await r.services.environments.clone(admin, p.id, { name: 'staging' });
    for (const copy of services) expect((await finished(await queue(copy.id))).status).toBe('succeeded');
    const running = (serviceId: string) => r.engine.containersOf(serviceId).find((c) => c.running)!;
    const filesCopy = services.find((s) => s.slug === 'files')!;
    const workerCopy = services.find((s) => s.slug === 'worker')!;
    const [keys] = storageCredentials;
    expect(running(filesCopy.id).env).toMatchObject({ ROOT_ACCESS_KEY: keys!.accessKeyId, ROOT_SECRET_KEY: keys!.secretAccessKey });
    expect(running(filesCopy.id).volumes).toEqual([expect.objectContaining({ name: `slipway-${filesCopy.id}-data` })]);
    expect(running(files.storage.id).volumes).toEqual([expect.objectContaining({ name: `slipway-${files.storage.id}-data` })]);
    expect(running(workerCopy.id).env).toMatchObject({
      AWS_ACCESS_KEY_ID: keys!.accessKeyId,
      AWS_SECRET_ACCESS_KEY: keys!.secretAccessKey,
    });
    expect(running(worker.id).env).toMatchObject({
      AWS_ACCESS_KEY_ID: files.credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: files.credentials.secretAccessKey,
    });
  });
});

describe('concurrent changes, on SQLite and on PostgreSQL', () => {
  const scratches: Array<{ drop(): Promise<void> }> = [];
  afterEach(async () => {
    for (const scratch of scratches.splice(0)) {
      await h.close();
      await scratch.drop();
    }
  });

  for (const dialect of ['sqlite', 'postgresql'] as const) {
    it(`${dialect}: two clones under one name make one environment; two deletes of the last two keep one`, async () => {
      if (dialect === 'postgresql') {
        const scratch = await createScratchDatabase();
        scratches.push(scratch);
        await replaceHarness({ databaseUrl: scratch.url });
      }
      const p = await project();
      await h.services.serviceCreation.create(admin, p.id, repo('web'));
      const clones = await Promise.allSettled([
        h.services.environments.clone(admin, p.id, { name: 'staging' }),
        h.services.environments.clone(admin, p.id, { name: 'staging' }),
      ]);
      expect(clones.map((c) => c.status).sort()).toEqual(['fulfilled', 'rejected']);
      expect((clones.find((c) => c.status === 'rejected') as PromiseRejectedResult).reason).toBeInstanceOf(ConflictError);
      const list = await environments(p.id);
      expect(list.map((e) => [e.name, e.serviceCount])).toEqual([
        ['production', 1],
        ['staging', 1],
      ]);
      // Nothing of the refused clone is left: one copy of web, not two.
      expect((await h.database.store.projects.listServices([p.id])).map((s) => s.slug)).toEqual(['web', 'web']);

      const deletes = await Promise.allSettled(list.map((e) => h.services.environments.delete(admin, e.id)));
      expect(deletes.map((d) => d.status).sort()).toEqual(['fulfilled', 'rejected']);
      expect((deletes.find((d) => d.status === 'rejected') as PromiseRejectedResult).reason).toBeInstanceOf(ConflictError);
      expect(await environments(p.id)).toHaveLength(1);
    });
  }
});
