import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TRPCError } from '@trpc/server';
import { createHarness, type Harness } from '../helpers/harness.js';

/** The routers through createCaller, on SQLite in memory: validation, access, shapes. */
let h: Harness;
beforeEach(async () => {
  h = await createHarness();
});
afterEach(async () => {
  await h.close();
});

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(TRPCError);
    return (error as TRPCError).code;
  }
  throw new Error('expected a rejection');
}

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('projects', () => {
  it('creates, lists, reads by slug, renames and deletes', async () => {
    const api = h.caller();
    const { project } = await api.projects.create({ name: 'Billing API', description: 'invoices' });
    expect(project).toMatchObject({
      name: 'Billing API',
      slug: 'billing-api',
      description: 'invoices',
      status: 'idle',
      serviceCount: 0,
      services: [],
    });
    expect(project.lastUpdatedAt).toMatch(ISO_MS);

    expect((await api.projects.list()).projects.map((p) => p.id)).toEqual([project.id]);
    expect((await api.projects.bySlug({ projectSlug: 'billing-api' })).project.id).toBe(project.id);

    const renamed = await api.projects.update({ projectId: project.id, name: 'Billing' });
    expect(renamed.project).toMatchObject({ name: 'Billing', slug: 'billing-api', description: 'invoices' });

    const deleted = await api.projects.delete({ projectId: project.id });
    expect(deleted).toEqual({ ok: true, proxy: { ok: true, detail: 'loaded' } });
    expect(await codeOf(api.projects.bySlug({ projectSlug: 'billing-api' }))).toBe('NOT_FOUND');
  });

  it('refuses bad input before it reaches a service', async () => {
    const api = h.caller();
    expect(await codeOf(api.projects.create({ name: '' }))).toBe('BAD_REQUEST');
    expect(await codeOf(api.projects.create({ name: 5 as unknown as string }))).toBe('BAD_REQUEST');
    expect(await codeOf(api.projects.create({ name: '   ' }))).toBe('BAD_REQUEST');
  });

  it('lists a page at a time: limit after cursor, oldest first, and nextCursor until the last page', async () => {
    const api = h.caller();
    const made: string[] = [];
    for (let i = 0; i < 5; i++) made.push((await api.projects.create({ name: `Paged ${i}` })).project.id);
    const first = await api.projects.list({ limit: 2 });
    expect(first.projects.map((p) => p.id)).toEqual(made.slice(0, 2));
    expect(first.nextCursor).toEqual(expect.any(String));
    // A project deleted between two pages moves nothing: the cursor names a place, not an index.
    await api.projects.delete({ projectId: made[0]! });
    const second = await api.projects.list({ limit: 2, cursor: first.nextCursor! });
    expect(second.projects.map((p) => p.id)).toEqual(made.slice(2, 4));
    const last = await api.projects.list({ limit: 2, cursor: second.nextCursor! });
    expect(last.projects.map((p) => p.id)).toEqual([made[4]]);
    expect(last.nextCursor).toBeNull();
    // The default page holds them all here; the whole list is one page with no cursor.
    expect(await api.projects.list()).toMatchObject({ nextCursor: null });
    expect((await api.projects.list()).projects).toHaveLength(4);
    expect(await codeOf(api.projects.list({ cursor: 'not-a-cursor' }))).toBe('BAD_REQUEST');
    expect(await codeOf(api.projects.list({ limit: 0 }))).toBe('BAD_REQUEST');
    expect(await codeOf(api.projects.list({ limit: 501 }))).toBe('BAD_REQUEST');
  });
});

describe('services', () => {
  it('creates every variant with the documented shapes', async () => {
    const api = h.caller();
    const { project } = await api.projects.create({ name: 'Shop' });
    const repo = (await api.services.create({ projectId: project.id, name: 'Web App', repoFullName: 'acme/web' })).service;
    expect(repo).toMatchObject({
      slug: 'web-app',
      repoFullName: 'acme/web',
      repoUrl: null,
      containerImage: null,
      branch: 'main',
      buildMethod: 'auto',
      runtimeMode: 'web',
      status: 'idle',
      reachable: false,
      localUrl: '',
      primaryUrl: '',
      hasGitToken: false,
      detectedBuildMethod: null,
      lastDeployedAt: null,
      preferredDomain: null,
    });
    expect(repo.hostPort).toBe(20000);
    expect(repo.createdAt).toMatch(ISO_MS);

    const direct = (
      await api.services.create({
        projectId: project.id,
        name: 'direct',
        repoFullName: null,
        repoUrl: 'https://git.example.com/a/b.git',
        gitToken: 'ghp_secret',
      })
    ).service;
    expect(direct).toMatchObject({ repoFullName: null, repoUrl: 'https://git.example.com/a/b.git', hasGitToken: true });
    expect(JSON.stringify(direct)).not.toContain('ghp_secret');

    const image = (
      await api.services.create({ projectId: project.id, name: 'cache', repoUrl: 'container-image', containerImage: 'redis:7' })
    ).service;
    expect(image).toMatchObject({ repoFullName: 'image:redis:7', repoUrl: 'container-image', containerImage: 'redis:7' });

    const worker = (await api.services.create({ projectId: project.id, name: 'jobs', repoFullName: 'acme/jobs', runtimeMode: 'worker' }))
      .service;
    expect(worker.runtimeMode).toBe('worker');

    const site = (await api.services.create({ projectId: project.id, name: 'docs', repoFullName: 'acme/docs', staticOutput: 'dist/' }))
      .service;
    expect(site.staticOutput).toBe('dist');

    const db = (
      await api.services.create({
        projectId: project.id,
        name: 'main db',
        repoUrl: 'database',
        repoFullName: 'database:postgres',
        branch: 'main',
        databasePublicEnabled: true,
      })
    ).service;
    expect(db).toMatchObject({
      repoFullName: 'database:postgres',
      repoUrl: 'database',
      internalPort: 5432,
      databasePublicEnabled: true,
      status: 'idle',
    });

    const ports = [repo, direct, image, worker, site, db].map((s) => s.hostPort);
    expect(new Set(ports).size).toBe(ports.length);

    const listed = (await api.projects.list()).projects[0]!;
    expect(listed.serviceCount).toBe(6);
    expect(listed.services.map((s) => s.name)).toEqual(['Web App', 'direct', 'cache', 'jobs', 'docs', 'main db']);
  });

  it('generates database env with strong passwords, and never shows them', async () => {
    const api = h.caller();
    const { project } = await api.projects.create({ name: 'data' });
    const { service } = await api.services.create({
      projectId: project.id,
      name: 'pg',
      repoUrl: 'database',
      repoFullName: 'database:postgres',
      env: [{ key: 'POSTGRES_DB', value: 'shop' }],
    });
    const overview = await api.services.overview({ serviceId: service.id });
    const byKey = Object.fromEntries(overview.env.map((v) => [v.key, v]));
    expect(Object.keys(byKey).sort()).toEqual(['POSTGRES_DB', 'POSTGRES_PASSWORD', 'POSTGRES_USER']);
    expect(byKey.POSTGRES_DB).toMatchObject({ value: 'shop', resolvedValue: 'shop', secret: false });
    expect(byKey.POSTGRES_PASSWORD).toMatchObject({ value: '', resolvedValue: '', secret: true, hasValue: true });
    const revealed = await api.env.reveal({ serviceId: service.id, envId: byKey.POSTGRES_PASSWORD!.id });
    expect(revealed.value).toMatch(/^[A-Za-z0-9]{32}$/);

    const { suggestions } = await api.projects.databaseVariableSuggestions({ projectId: project.id });
    expect(suggestions).toEqual([
      expect.objectContaining({
        key: 'DATABASE_URL',
        value: 'postgres://${pg.POSTGRES_USER}:${pg.POSTGRES_PASSWORD}@pg:5432/${pg.POSTGRES_DB}',
      }),
    ]);
  });

  it('refuses each kind of bad service input with the offending field', async () => {
    const api = h.caller();
    const { project } = await api.projects.create({ name: 'p' });
    const field = async (input: Record<string, unknown>) => {
      try {
        await api.services.create({ projectId: project.id, name: 'x', ...input } as never);
      } catch (error) {
        return (error as TRPCError & { cause: { details?: { field?: string } } }).cause?.details?.field ?? (error as TRPCError).code;
      }
      return 'accepted';
    };
    expect(await field({})).toBe('repoFullName');
    expect(await field({ repoFullName: 'not a repo' })).toBe('repoFullName');
    expect(await field({ repoFullName: null, repoUrl: 'file:///etc' })).toBe('repoUrl');
    expect(await field({ repoFullName: null, repoUrl: '/srv/git/app' })).toBe('repoUrl');
    expect(await field({ repoUrl: 'container-image' })).toBe('containerImage');
    expect(await field({ repoUrl: 'container-image', containerImage: 'UPPER/case' })).toBe('containerImage');
    expect(await field({ repoUrl: 'database', repoFullName: 'database:oracle' })).toBe('repoFullName');
    // One source, as the document's oneOf says (test/e2e/openapi.test.ts): its markers decide, its fields must fit.
    expect(await field({ repoUrl: 'https://git.example.com/a/b.git' })).toBe('repoFullName');
    expect(await field({ containerImage: 'busybox:latest' })).toBe('repoFullName');
    expect(await field({ repoFullName: 'a/b', containerImage: 'busybox:latest' })).toBe('containerImage');
    expect(await field({ repoUrl: 'container-image', containerImage: 'busybox:latest', repoFullName: 'a/b' })).toBe('repoFullName');
    expect(await field({ repoUrl: 'database', repoFullName: 'database:redis', containerImage: 'redis:7' })).toBe('containerImage');
    expect(await field({ repoFullName: 'a/b', repoUrl: 'file:///etc' })).toBe('repoUrl');
    expect(await field({ repoFullName: '', repoUrl: 'https://git.example.com/a/b.git' })).toBe('accepted');
    expect(await field({ repoFullName: 'a/b', rootDir: '../etc' })).toBe('rootDir');
    expect(await field({ repoFullName: 'a/b', branch: '--upload-pack=x' })).toBe('branch');
    expect(await field({ repoFullName: 'a/b', env: [{ key: 'lower', value: '1' }] })).toBe('env.0.key');
    expect(await field({ repoFullName: 'a/b', buildMethod: 'magic' })).toBe('BAD_REQUEST');
    expect(await field({ repoFullName: 'a/b', internalPort: 0 })).toBe('BAD_REQUEST');
  });

  it('updates, transfers and deletes with proxy results', async () => {
    const api = h.caller();
    const a = (await api.projects.create({ name: 'a' })).project;
    const b = (await api.projects.create({ name: 'b' })).project;
    const web = (await api.services.create({ projectId: a.id, name: 'web', repoFullName: 'acme/web' })).service;
    await api.services.create({ projectId: b.id, name: 'web', repoFullName: 'acme/other' });

    const updated = await api.services.update({
      serviceId: web.id,
      branch: 'release',
      buildMethod: 'dockerfile',
      dockerfilePath: './docker/Dockerfile',
      internalPort: 8080,
    });
    expect(updated.service).toMatchObject({
      branch: 'release',
      buildMethod: 'dockerfile',
      dockerfilePath: 'docker/Dockerfile',
      internalPort: 8080,
    });

    await api.domains.create({ serviceId: web.id, hostname: 'web.example.com' });
    expect(await codeOf(api.services.update({ serviceId: web.id, runtimeMode: 'worker' }))).toBe('CONFLICT');

    const moved = await api.services.transfer({ serviceId: web.id, targetProjectId: b.id });
    expect(moved.service).toMatchObject({ projectId: b.id, slug: 'web-2' });
    expect(moved.project.id).toBe(b.id);
    expect(moved.project.serviceCount).toBe(2);
    expect(moved.proxy.ok).toBe(true);

    expect(await api.services.delete({ serviceId: web.id })).toEqual({ ok: true, proxy: { ok: true, detail: 'loaded' } });
    expect(h.proxy.last).toEqual([]);
    expect(await codeOf(api.services.overview({ serviceId: web.id }))).toBe('NOT_FOUND');
  });

  it('suggests hostPort and slug.KEY references', async () => {
    const api = h.caller();
    const { project } = await api.projects.create({ name: 'p' });
    const web = (await api.services.create({ projectId: project.id, name: 'web', repoFullName: 'a/b' })).service;
    await api.services.create({ projectId: project.id, name: 'cache', repoUrl: 'database', repoFullName: 'database:redis' });
    const { suggestions, databaseVariables } = await api.services.suggestionKeys({ serviceId: web.id });
    const keys = suggestions.map((s) => s.key);
    expect(keys).toContain('hostPort');
    expect(keys).toContain('cache.REDIS_PASSWORD');
    expect(databaseVariables).toEqual([
      expect.objectContaining({ key: 'REDIS_URL', value: 'redis://default:${cache.REDIS_PASSWORD}@cache:6379/0' }),
    ]);
  });
});

describe('environment variables', () => {
  it('creates or updates, resolves references, reports cycles and unknowns', async () => {
    const api = h.caller();
    const { project } = await api.projects.create({ name: 'p' });
    const web = (await api.services.create({ projectId: project.id, name: 'web', repoFullName: 'a/b' })).service;
    const db = (
      await api.services.create({
        projectId: project.id,
        name: 'db',
        repoUrl: 'database',
        repoFullName: 'database:mysql',
        env: [{ key: 'MYSQL_USER', value: 'shop' }],
      })
    ).service;
    expect(db.slug).toBe('db');
    await api.env.set({ serviceId: web.id, key: 'DB_USER', value: '${db.MYSQL_USER}' });
    await api.env.set({ serviceId: web.id, key: 'GREETING', value: 'hello ${web.NAME}' });
    await api.env.set({ serviceId: web.id, key: 'NAME', value: 'first' });
    await api.env.set({ serviceId: web.id, key: 'NAME', value: 'world' });
    await api.env.set({ serviceId: web.id, key: 'LOOP', value: '${web.LOOP}' });
    await api.env.set({ serviceId: web.id, key: 'MISSING', value: '${nope.X} ${db.NOPE}' });
    const env = Object.fromEntries((await api.services.overview({ serviceId: web.id })).env.map((v) => [v.key, v]));
    expect(env.DB_USER).toMatchObject({ value: '${db.MYSQL_USER}', resolvedValue: 'shop', problems: [] });
    expect(env.GREETING!.resolvedValue).toBe('hello world');
    expect(env.NAME!.value).toBe('world');
    expect(env.LOOP!.problems[0]).toMatch(/cycle/);
    expect(env.MISSING!.problems).toHaveLength(2);

    expect(await codeOf(api.env.set({ serviceId: web.id, key: '1BAD', value: 'x' }))).toBe('BAD_REQUEST');
    await api.env.delete({ serviceId: web.id, envId: env.NAME!.id });
    expect(await codeOf(api.env.delete({ serviceId: web.id, envId: env.NAME!.id }))).toBe('NOT_FOUND');
  });
});

describe('domains', () => {
  it('validates, lower-cases, keeps hostnames unique and moves them', async () => {
    const api = h.caller();
    const { project } = await api.projects.create({ name: 'p' });
    const web = (await api.services.create({ projectId: project.id, name: 'web', repoFullName: 'a/b' })).service;
    const other = (await api.services.create({ projectId: project.id, name: 'other', repoFullName: 'a/c' })).service;
    const created = await api.domains.create({ serviceId: web.id, hostname: 'App.Example.COM.' });
    expect(created).toMatchObject({ ok: true, proxy: { ok: true }, domain: { hostname: 'app.example.com', status: 'active' } });
    expect(h.proxy.last).toEqual([{ hostname: 'app.example.com', serviceId: web.id, upstream: null }]);

    expect(await codeOf(api.domains.create({ serviceId: other.id, hostname: 'app.example.com' }))).toBe('CONFLICT');
    expect(await codeOf(api.domains.create({ serviceId: other.id, hostname: 'bad_host.example.com' }))).toBe('BAD_REQUEST');

    const overview = await api.services.overview({ serviceId: web.id });
    expect(overview.service).toMatchObject({ preferredDomain: 'app.example.com', primaryUrl: 'https://app.example.com' });
    const domainId = overview.domains[0]!.id;
    await api.domains.update({ serviceId: web.id, domainId, hostname: 'www.example.com' });
    expect((await api.services.overview({ serviceId: web.id })).service.preferredDomain).toBe('www.example.com');
    expect(await codeOf(api.domains.update({ serviceId: other.id, domainId, hostname: 'x.example.com' }))).toBe('NOT_FOUND');
    expect(await api.domains.delete({ serviceId: web.id, domainId })).toMatchObject({ ok: true });
    expect(h.proxy.last).toEqual([]);
  });

  it('reports the proxy honestly and still saves the change', async () => {
    h.proxy.result = { ok: false, detail: 'caddy unreachable' };
    const api = h.caller();
    const { project } = await api.projects.create({ name: 'p' });
    const web = (await api.services.create({ projectId: project.id, name: 'web', repoFullName: 'a/b' })).service;
    const result = await api.domains.create({ serviceId: web.id, hostname: 'saved.example.com' });
    expect(result.proxy).toEqual({ ok: false, detail: 'caddy unreachable' });
    expect((await api.services.overview({ serviceId: web.id })).domains.map((d) => d.hostname)).toEqual(['saved.example.com']);
  });
});

describe('deployments', () => {
  it('queues with nulls, lists, logs and aborts once', async () => {
    const api = h.caller();
    const { project } = await api.projects.create({ name: 'p' });
    const web = (await api.services.create({ projectId: project.id, name: 'web', repoFullName: 'a/b' })).service;
    const { deployment } = await api.deployments.create({ serviceId: web.id });
    expect(deployment).toMatchObject({
      serviceId: web.id,
      status: 'queued',
      trigger: 'manual',
      commitSha: null,
      imageTag: null,
      containerName: null,
      startedAt: null,
      finishedAt: null,
    });
    expect((await api.deployments.list({ serviceId: web.id })).deployments.map((d) => d.id)).toEqual([deployment.id]);
    expect(await api.deployments.abort({ deploymentId: deployment.id })).toEqual({ accepted: true });
    expect((await api.deployments.get({ deploymentId: deployment.id })).deployment.status).toBe('aborted');
    expect(await codeOf(api.deployments.abort({ deploymentId: deployment.id }))).toBe('CONFLICT');
    const { logs } = await api.deployments.logs({ deploymentId: deployment.id });
    expect(logs.map((l) => l.line)).toEqual(['Deployment queued for web', 'Deployment aborted before it started']);
    expect(logs[0]!.id).toBeLessThan(logs[1]!.id);
    // In pages: after the last id read, at most `limit` lines; a short page is the end so far.
    const first = await api.deployments.logs({ deploymentId: deployment.id, limit: 1 });
    expect(first.logs.map((l) => l.id)).toEqual([logs[0]!.id]);
    const rest = await api.deployments.logs({ deploymentId: deployment.id, afterId: logs[0]!.id, limit: 1 });
    expect(rest.logs.map((l) => l.id)).toEqual([logs[1]!.id]);
    expect((await api.deployments.logs({ deploymentId: deployment.id, afterId: logs[1]!.id, limit: 1 })).logs).toEqual([]);
    expect(await codeOf(api.deployments.logs({ deploymentId: deployment.id, limit: 0 }))).toBe('BAD_REQUEST');
    expect(await codeOf(api.deployments.logs({ deploymentId: deployment.id, limit: 10_001 }))).toBe('BAD_REQUEST');
  });
});

describe('access', () => {
  it('applies access level and project scope', async () => {
    const api = h.caller();
    const a = (await api.projects.create({ name: 'a' })).project;
    const b = (await api.projects.create({ name: 'b' })).project;
    const webA = (await api.services.create({ projectId: a.id, name: 'web', repoFullName: 'a/b' })).service;
    const read = h.caller(await h.mintKey('read'));
    const scoped = h.caller(await h.mintKey('write', [b.id]));

    expect(await codeOf(h.caller('').projects.list())).toBe('UNAUTHORIZED');
    expect(await codeOf(h.caller('slw_unknown').projects.list())).toBe('UNAUTHORIZED');
    expect((await read.projects.list()).projects).toHaveLength(2);
    expect(await codeOf(read.projects.create({ name: 'x' }))).toBe('FORBIDDEN');
    // Write access is checked before the body: a read key does not learn what its body lacked.
    expect(await codeOf(read.projects.create({} as never))).toBe('FORBIDDEN');
    expect((await scoped.projects.list()).projects.map((p) => p.id)).toEqual([b.id]);
    expect(await codeOf(scoped.projects.create({ name: 'x' }))).toBe('FORBIDDEN');
    // Another project's resources read as unknown to a scoped key (docs/decisions.md).
    expect(await codeOf(scoped.services.overview({ serviceId: webA.id }))).toBe('NOT_FOUND');
    expect(await codeOf(scoped.services.transfer({ serviceId: webA.id, targetProjectId: b.id }))).toBe('NOT_FOUND');
    expect(await codeOf(scoped.apiKeys.list())).toBe('FORBIDDEN');
    expect(await codeOf(scoped.services.overview({ serviceId: 'nope' }))).toBe('NOT_FOUND');
  });

  it('shows a key once and stores only its hash and prefix', async () => {
    const api = h.caller();
    const { apiKey, token } = await api.apiKeys.create({ name: 'ci', access: 'read' });
    expect(token).toMatch(/^slw_/);
    expect(token.startsWith(apiKey.prefix)).toBe(true);
    expect(apiKey.prefix.length).toBeLessThan(16);
    const { apiKeys } = await api.apiKeys.list();
    expect(JSON.stringify(apiKeys)).not.toContain(token);
    expect(apiKeys.find((k) => k.id === apiKey.id)).toMatchObject({ name: 'ci', access: 'read', projectIds: null, lastUsedAt: null });
    const stored = await h.database.store.apiKeys.get(apiKey.id);
    expect(stored!.tokenHash).not.toContain(token);
    await h.caller(token).projects.list();
    expect((await api.apiKeys.list()).apiKeys.find((k) => k.id === apiKey.id)!.lastUsedAt).toMatch(ISO_MS);
    expect(await api.apiKeys.delete({ id: apiKey.id })).toEqual({ ok: true });
    expect(await codeOf(h.caller(token).projects.list())).toBe('UNAUTHORIZED');
    expect(await codeOf(api.apiKeys.create({ name: 'x', access: 'write', projectIds: ['missing'] }))).toBe('BAD_REQUEST');
  });
});
