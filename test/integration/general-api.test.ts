import { generateKeyPairSync, sign } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { errorOf } from '../helpers/caller-errors.js';
import { createHarness, type Harness } from '../helpers/harness.js';

/** The general API's doors through createCaller: the same objects as the detailed API, and the rules that are new. */

const pair = generateKeyPairSync('ed25519');
const licensePublicKey = pair.publicKey.export({ format: 'der', type: 'spki' }).toString('base64');

function licenseKey(payload: object, privateKey = pair.privateKey): string {
  const bytes = Buffer.from(JSON.stringify(payload));
  return `${bytes.toString('base64url')}.${sign(null, bytes, privateKey).toString('base64url')}`;
}

let h: Harness;
beforeEach(async () => {
  h = await createHarness({ config: { licensePublicKey } });
});
afterEach(async () => {
  await h.close();
});

async function fixture() {
  const api = h.caller();
  const { project } = await api.projects.create({ name: 'Shop' });
  const { project: other } = await api.projects.create({ name: 'Other' });
  const web = (await api.services.create({ projectId: project.id, name: 'web', repoFullName: 'acme/web' })).service;
  const worker = (await api.services.create({ projectId: project.id, name: 'jobs', repoFullName: 'acme/jobs', runtimeMode: 'worker' }))
    .service;
  return { api, project, other, web, worker };
}

describe('projects and deploy doors', () => {
  it('GET /api/projects/:id answers by id as by slug', async () => {
    const { api, project } = await fixture();
    expect((await api.projects.bySlug({ projectSlug: project.id })).project).toEqual(
      (await api.projects.bySlug({ projectSlug: project.slug })).project,
    );
    expect((await errorOf(api.projects.bySlug({ projectSlug: 'nope' }))).code).toBe('NOT_FOUND');
    const scoped = h.caller(await h.mintKey('read', [(await api.projects.create({ name: 'x' })).project.id]));
    expect((await errorOf(scoped.projects.bySlug({ projectSlug: project.id }))).code).toBe('NOT_FOUND');
  });

  it('deploys one service or every service of a project, as the detailed deployments door does', async () => {
    const { api, project, other, web, worker } = await fixture();
    const { deployment } = await api.deploy.service({ serviceId: web.id });
    expect(deployment).toMatchObject({ serviceId: web.id, status: 'queued' });
    expect((await api.deployments.get({ deploymentId: deployment.id })).deployment).toEqual(deployment);
    const { deployments } = await api.deploy.project({ projectId: project.id });
    expect(deployments.map((d) => d.serviceId)).toEqual([web.id, worker.id]);
    expect((await api.deploy.project({ projectId: other.id })).deployments).toEqual([]);
    const read = h.caller(await h.mintKey('read'));
    expect((await errorOf(read.deploy.project({ projectId: project.id }))).code).toBe('FORBIDDEN');
    const scoped = h.caller(await h.mintKey('write', [other.id]));
    expect((await errorOf(scoped.deploy.project({ projectId: project.id }))).code).toBe('NOT_FOUND');
    expect((await errorOf(scoped.deploy.service({ serviceId: web.id }))).code).toBe('NOT_FOUND');
  });
});

describe('apps', () => {
  it('reads, updates (with the PATCH rules) and deletes a service', async () => {
    const { api, web } = await fixture();
    expect((await api.apps.get({ appId: web.id })).service).toEqual((await api.services.overview({ serviceId: web.id })).service);
    const updated = (await api.apps.update({ appId: web.id, branch: 'develop', startCommand: 'npm start' })).service;
    expect(updated).toMatchObject({ branch: 'develop', startCommand: 'npm start', name: 'web' });
    expect((await errorOf(api.apps.update({ appId: web.id, branch: '' }))).code).toBe('BAD_REQUEST');
    expect((await errorOf(api.apps.update({ appId: web.id, name: 'x' } as never))).field).toBe('name');
    expect((await api.apps.delete({ appId: web.id })).ok).toBe(true);
    expect((await errorOf(api.apps.get({ appId: web.id }))).code).toBe('NOT_FOUND');
  });
});

describe('service variables', () => {
  it('lists, adds, updates by id and deletes with the detailed env rules', async () => {
    const { api, web } = await fixture();
    const { variable } = await api.variables.create({ serviceId: web.id, key: 'API_TOKEN', value: 's3cret', secret: true });
    expect(variable).toMatchObject({ key: 'API_TOKEN', secret: true, value: '', resolvedValue: '', hasValue: true });
    const plain = (await api.variables.create({ serviceId: web.id, key: 'GREETING', value: 'hi' })).variable;
    expect(plain).toMatchObject({ value: 'hi', resolvedValue: 'hi' });
    // POST with an existing key updates it, as POST .../env does.
    expect((await api.variables.create({ serviceId: web.id, key: 'GREETING', value: 'hello' })).variable.id).toBe(plain.id);
    expect((await api.variables.list({ serviceId: web.id })).variables).toEqual((await api.services.overview({ serviceId: web.id })).env);
    const changed = (await api.variables.update({ serviceId: web.id, variableId: plain.id, value: 'hey' })).variable;
    expect(changed).toMatchObject({ id: plain.id, key: 'GREETING', value: 'hey' });
    expect((await errorOf(api.variables.create({ serviceId: web.id, key: 'bad-key', value: 'x' }))).field).toBe('key');
    expect((await errorOf(api.variables.update({ serviceId: web.id, variableId: 'nope', value: 'x' }))).code).toBe('NOT_FOUND');
    await api.variables.delete({ serviceId: web.id, variableId: plain.id });
    expect((await api.variables.list({ serviceId: web.id })).variables.map((v) => v.key)).toEqual(['API_TOKEN']);
  });
});

describe('shared project variables', () => {
  it('are a map PUT replaces; secrets are masked and kept when sent back without a value', async () => {
    const { api, project } = await fixture();
    const put = await api.variables.replaceShared({
      projectId: project.id,
      env: { REGION: 'eu-west', DB_PASSWORD: { value: 'hunter2', secret: true } },
    });
    expect(put.env).toEqual({
      DB_PASSWORD: { secret: true, value: '', updatedAt: expect.any(String) },
      REGION: { secret: false, value: 'eu-west', updatedAt: expect.any(String) },
    });
    expect((await api.variables.shared({ projectId: project.id })).env).toEqual(put.env);
    // Sent back as read (secret without a value): kept; REGION left out: deleted.
    await api.variables.replaceShared({ projectId: project.id, env: { DB_PASSWORD: { secret: true }, MODE: 'prod' } });
    const web = (await api.services.create({ projectId: project.id, name: 'api', repoFullName: 'acme/api' })).service;
    const service = (await h.database.store.projects.getService(web.id))!;
    expect((await h.services.env.resolvedFor(service)).env).toEqual({ DB_PASSWORD: 'hunter2', MODE: 'prod' });
    expect(Object.keys((await api.variables.shared({ projectId: project.id })).env)).toEqual(['DB_PASSWORD', 'MODE']);
    expect((await errorOf(api.variables.replaceShared({ projectId: project.id, env: { NEW: {} } }))).field).toBe('env.NEW.value');
    expect((await errorOf(api.variables.replaceShared({ projectId: project.id, env: { 'bad key': 'x' } }))).code).toBe('BAD_REQUEST');
    expect(
      (await errorOf(api.variables.replaceShared({ projectId: project.id, env: { A: { value: 'x', colour: 1 } } as never }))).code,
    ).toBe('BAD_REQUEST');
  });

  it('every service sees them unless it defines the key; ${shared.KEY} references them; secrets stay masked', async () => {
    const { api, project, web, worker } = await fixture();
    await api.variables.replaceShared({
      projectId: project.id,
      env: { LOG_LEVEL: 'info', REGION: 'eu', TOKEN: { value: 'tok', secret: true } },
    });
    await api.variables.create({ serviceId: web.id, key: 'LOG_LEVEL', value: 'debug' });
    const url = (await api.variables.create({ serviceId: web.id, key: 'URL', value: 'https://${shared.REGION}.example.com' })).variable;
    expect(url.resolvedValue).toBe('https://eu.example.com');
    const auth = (await api.variables.create({ serviceId: web.id, key: 'AUTH', value: 'Bearer ${shared.TOKEN}' })).variable;
    expect(auth.resolvedValue).toBe('');
    const webRecord = (await h.database.store.projects.getService(web.id))!;
    const workerRecord = (await h.database.store.projects.getService(worker.id))!;
    expect((await h.services.env.resolvedFor(webRecord)).env).toEqual({
      LOG_LEVEL: 'debug',
      REGION: 'eu',
      TOKEN: 'tok',
      URL: 'https://eu.example.com',
      AUTH: 'Bearer tok',
    });
    expect((await h.services.env.resolvedFor(workerRecord)).env).toEqual({ LOG_LEVEL: 'info', REGION: 'eu', TOKEN: 'tok' });
    expect(await h.services.env.secretValues(webRecord)).toEqual(expect.arrayContaining(['tok', 'Bearer tok']));
    // The shared namespace resolves from another service's variables too: ${web.REGION} is the inherited value.
    const ref = (await api.variables.create({ serviceId: worker.id, key: 'FROM_WEB', value: '${web.LOG_LEVEL}' })).variable;
    expect(ref.resolvedValue).toBe('debug');
  });

  it('follow access rules and go with the project', async () => {
    const { api, project, other } = await fixture();
    await api.variables.replaceShared({ projectId: project.id, env: { A: '1' } });
    const read = h.caller(await h.mintKey('read'));
    expect((await read.variables.shared({ projectId: project.id })).env.A?.value).toBe('1');
    expect((await errorOf(read.variables.replaceShared({ projectId: project.id, env: {} }))).code).toBe('FORBIDDEN');
    const scoped = h.caller(await h.mintKey('write', [other.id]));
    expect((await errorOf(scoped.variables.shared({ projectId: project.id }))).code).toBe('NOT_FOUND');
    expect((await errorOf(scoped.variables.replaceShared({ projectId: project.id, env: {} }))).code).toBe('NOT_FOUND');
    await api.projects.delete({ projectId: project.id });
    expect(await h.database.store.settings.get(`project-env:${project.id}`)).toBeNull();
  });
});

describe('project domains', () => {
  it('lists, adds to a service named in the body and removes by id, the same domains as the detailed API', async () => {
    const { api, project, other, web, worker } = await fixture();
    const otherWeb = (await api.services.create({ projectId: other.id, name: 'site', repoFullName: 'acme/site' })).service;
    const created = await api.projectDomains.create({ projectId: project.id, serviceId: web.id, hostname: 'Shop.Example.com' });
    expect(created).toMatchObject({ ok: true, domain: { hostname: 'shop.example.com', serviceId: web.id }, proxy: { ok: true } });
    expect((await api.projectDomains.list({ projectId: project.id })).domains).toEqual(
      (await api.services.overview({ serviceId: web.id })).domains,
    );
    expect(
      (await errorOf(api.projectDomains.create({ projectId: project.id, serviceId: otherWeb.id, hostname: 'a.example.com' }))).code,
    ).toBe('NOT_FOUND');
    expect(
      (await errorOf(api.projectDomains.create({ projectId: project.id, serviceId: worker.id, hostname: 'w.example.com' }))).code,
    ).toBe('CONFLICT');
    const scoped = h.caller(await h.mintKey('write', [other.id]));
    expect((await errorOf(scoped.projectDomains.delete({ domainId: created.domain.id }))).code).toBe('NOT_FOUND');
    const reloads = h.proxy.applied.length;
    expect(await api.projectDomains.delete({ domainId: created.domain.id })).toMatchObject({ ok: true, proxy: { ok: true } });
    expect(h.proxy.applied.length).toBeGreaterThan(reloads);
    expect((await api.projectDomains.list({ projectId: project.id })).domains).toEqual([]);
    expect((await errorOf(api.projectDomains.delete({ domainId: created.domain.id }))).code).toBe('NOT_FOUND');
  });
});

describe('databases', () => {
  it('lists database services across visible projects, creates, reads and deletes them', async () => {
    const { api, project, other, web } = await fixture();
    const { database } = await api.databaseServices.create({ projectId: project.id, name: 'main db', engine: 'postgres' });
    expect(database).toMatchObject({ projectId: project.id, repoFullName: 'database:postgres', internalPort: 5432, status: 'idle' });
    const cache = (await api.databaseServices.create({ projectId: other.id, name: 'cache', engine: 'redis' })).database;
    expect((await api.databaseServices.list()).databases.map((d) => d.id)).toEqual([database.id, cache.id]);
    const scoped = h.caller(await h.mintKey('read', [other.id]));
    expect((await scoped.databaseServices.list()).databases.map((d) => d.id)).toEqual([cache.id]);
    expect((await errorOf(scoped.databaseServices.get({ databaseId: database.id }))).code).toBe('NOT_FOUND');
    expect((await api.databaseServices.get({ databaseId: database.id })).database).toEqual(
      (await api.services.overview({ serviceId: database.id })).service,
    );
    // A service that is not a database is not one here either.
    expect((await errorOf(api.databaseServices.get({ databaseId: web.id }))).code).toBe('NOT_FOUND');
    expect((await errorOf(api.databaseServices.delete({ databaseId: web.id }))).code).toBe('NOT_FOUND');
    expect((await errorOf(api.databaseServices.create({ projectId: project.id, name: 'x', engine: 'oracle' as never }))).field).toBe(
      'engine',
    );
    expect(
      (await errorOf(api.databaseServices.create({ projectId: project.id, name: 'x', engine: 'redis', repoUrl: 'x' } as never))).field,
    ).toBe('repoUrl');
    expect((await api.databaseServices.delete({ databaseId: cache.id })).ok).toBe(true);
    expect((await errorOf(api.databaseServices.get({ databaseId: cache.id }))).code).toBe('NOT_FOUND');
  });

  it('query, stop and start answer 409 not_running for a database that does not run', async () => {
    const { api, project } = await fixture();
    const { database } = await api.databaseServices.create({ projectId: project.id, name: 'db', engine: 'postgres' });
    expect(await errorOf(api.databaseServices.query({ databaseId: database.id, sql: 'SELECT 1' }))).toMatchObject({
      code: 'CONFLICT',
      error: 'not_running',
    });
    expect(await errorOf(api.databaseServices.stop({ databaseId: database.id }))).toMatchObject({ code: 'CONFLICT', error: 'not_running' });
    // Not stopped: start leaves it as it is.
    expect((await api.databaseServices.start({ databaseId: database.id })).database.status).toBe('idle');
    const read = h.caller(await h.mintKey('read'));
    expect((await errorOf(read.databaseServices.stop({ databaseId: database.id }))).code).toBe('FORBIDDEN');
  });

  it('admin calls on a stopped database answer 409 not_running saying it is stopped', async () => {
    const { api, project } = await fixture();
    const { database } = await api.databaseServices.create({ projectId: project.id, name: 'db', engine: 'postgres' });
    await h.database.store.projects.updateService(database.id, { status: 'stopped' });
    const failure = await errorOf(api.databases.tables({ serviceId: database.id }));
    expect(failure).toMatchObject({ code: 'CONFLICT', error: 'not_running' });
  });
});

describe('system and license', () => {
  it('GET /api/system/public needs no key and shows nothing secret', async () => {
    const info = await h.caller('').system.public();
    expect(info).toEqual({
      version: expect.stringMatching(/^\d+\.\d+\.\d+/),
      registrationOpen: false,
      ownerExists: false,
      features: ['databases', 'reverse-proxy'],
      license: { valid: false, licensee: null, plan: null, expiresAt: null },
    });
  });

  it('activates a signed license; a bad signature or an expired key is 400 and changes nothing', async () => {
    const api = h.caller();
    const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
    const key = licenseKey({ licensee: 'Acme Ltd', plan: 'business', expiresAt });
    const { license } = await api.system.activateLicense({ key });
    expect(license).toEqual({ valid: true, licensee: 'Acme Ltd', plan: 'business', expiresAt });
    expect((await h.caller('').system.public()).license).toEqual(license);
    expect((await api.settings.get()).settings.license).toEqual(license);
    expect(JSON.stringify(await h.caller('').system.public())).not.toContain(key.split('.')[1]);

    const stranger = generateKeyPairSync('ed25519').privateKey;
    const forged = licenseKey({ licensee: 'Mallory', plan: 'enterprise', expiresAt }, stranger);
    expect(await errorOf(api.system.activateLicense({ key: forged }))).toMatchObject({ code: 'BAD_REQUEST', field: 'key' });
    const [payload, signature] = key.split('.') as [string, string];
    const tampered = `${Buffer.from(JSON.stringify({ licensee: 'Acme Ltd', plan: 'enterprise', expiresAt })).toString('base64url')}.${signature}`;
    expect(await errorOf(api.system.activateLicense({ key: tampered }))).toMatchObject({ code: 'BAD_REQUEST', field: 'key' });
    expect(await errorOf(api.system.activateLicense({ key: `${payload}` }))).toMatchObject({ code: 'BAD_REQUEST', field: 'key' });
    const expired = licenseKey({ licensee: 'Acme Ltd', plan: 'business', expiresAt: '2020-01-01T00:00:00.000Z' });
    expect(await errorOf(api.system.activateLicense({ key: expired }))).toMatchObject({ code: 'BAD_REQUEST', field: 'key' });
    expect((await h.caller('').system.public()).license).toEqual(license);

    const read = h.caller(await h.mintKey('read'));
    expect((await errorOf(read.system.activateLicense({ key }))).code).toBe('FORBIDDEN');
    const scoped = h.caller(await h.mintKey('write', [(await api.projects.create({ name: 'p' })).project.id]));
    expect((await errorOf(scoped.system.activateLicense({ key }))).code).toBe('FORBIDDEN');
  });

  it('a license past its expiry reads as not valid', async () => {
    let now = Date.now();
    const clocked = await createHarness({ config: { licensePublicKey }, clock: { now: () => new Date(now) } });
    try {
      const expiresAt = new Date(now + 60_000).toISOString();
      await clocked.caller().system.activateLicense({ key: licenseKey({ licensee: 'A', plan: 'p', expiresAt }) });
      now += 120_000;
      expect((await clocked.caller('').system.public()).license).toEqual({ valid: false, licensee: 'A', plan: 'p', expiresAt });
    } finally {
      await clocked.close();
    }
  });
});
