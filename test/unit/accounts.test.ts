import { beforeEach, describe, expect, it } from 'vitest';
import { ForbiddenError, NotFoundError, UnauthorizedError, ValidationError } from '../../src/domain/errors.js';
import type { Actor } from '../../src/index.js';
import { hashToken } from '../../src/accounts/api-key.service.js';
import { freshHarnessPerTest, admin, reader, scoped, h, repo, project, rejection } from '../helpers/unit-harness.js';

/** API keys and what each key may do (src/accounts, src/domain/access.ts). */
freshHarnessPerTest();

describe('access control', () => {
  let p1: string;
  let p2: string;
  let s1: string;
  let s2: string;
  let d2: string;
  let dom2: string;
  let env2: string;
  beforeEach(async () => {
    p1 = (await project('One')).id;
    p2 = (await project('Two')).id;
    s1 = (await h.services.serviceCreation.create(admin, p1, repo('web'))).id;
    s2 = (await h.services.serviceCreation.create(admin, p2, repo('web'))).id;
    d2 = (await h.services.deployments.create(admin, s2)).id;
    dom2 = (await h.services.domains.create(admin, s2, 'two.example.com')).domain.id;
    await h.services.env.set(admin, s2, { key: 'K', value: 'v' });
    env2 = (await h.database.store.env.list([s2]))[0]!.id;
  });

  it('a read key can read but not change anything', async () => {
    expect((await h.services.projects.list(reader)).length).toBe(2);
    await expect(h.services.serviceReader.overview(reader, s1)).resolves.toMatchObject({ service: { id: s1 } });
    await expect(h.services.deployments.list(reader, s2)).resolves.toHaveLength(1);

    const mutations: Array<[string, () => Promise<unknown>]> = [
      ['create project', () => h.services.projects.create(reader, { name: 'X' })],
      ['update project', () => h.services.projects.update(reader, p1, { name: 'X' })],
      ['delete project', () => h.services.projects.delete(reader, p1)],
      ['create service', () => h.services.serviceCreation.create(reader, p1, repo('x'))],
      ['update service', () => h.services.serviceChanges.update(reader, s1, { branch: 'dev' })],
      ['transfer service', () => h.services.serviceChanges.transfer(reader, s1, p2)],
      ['delete service', () => h.services.removal.deleteService(reader, s1)],
      ['set env', () => h.services.env.set(reader, s1, { key: 'K', value: 'v' })],
      ['delete env', () => h.services.env.delete(reader, s2, env2)],
      ['reveal env', () => h.services.env.reveal(reader, s2, env2)],
      ['create domain', () => h.services.domains.create(reader, s1, 'x.example.com')],
      ['update domain', () => h.services.domains.update(reader, s2, dom2, 'y.example.com')],
      ['delete domain', () => h.services.domains.delete(reader, s2, dom2)],
      ['create deployment', () => h.services.deployments.create(reader, s1)],
      ['abort deployment', () => h.services.deployments.abort(reader, d2)],
      ['create api key', () => h.services.apiKeys.create(reader, { name: 'k', access: 'read' })],
    ];
    for (const [what, call] of mutations) {
      expect(await rejection(call()), what).toBeInstanceOf(ForbiddenError);
    }
    // Nothing changed.
    expect((await h.database.store.projects.list(null)).map((p) => p.name).sort()).toEqual(['One', 'Two']);
    expect(await h.database.store.projects.listAllServices()).toHaveLength(2);
    expect((await h.database.store.deployments.get(d2))!.status).toBe('queued');
    expect((await h.database.store.domains.list(null)).map((d) => d.hostname)).toEqual(['two.example.com']);
  });

  it("a key scoped to one project cannot touch another project's services", async () => {
    const key = scoped(p1);
    await expect(h.services.serviceReader.overview(key, s1)).resolves.toBeDefined();
    const calls: Array<[string, () => Promise<unknown>]> = [
      ['get project', () => h.services.projects.get(key, p2)],
      ['get project by slug', () => h.services.projects.getBySlug(key, 'two')],
      ['update project', () => h.services.projects.update(key, p2, { name: 'X' })],
      ['delete project', () => h.services.projects.delete(key, p2)],
      ['create service', () => h.services.serviceCreation.create(key, p2, repo('x'))],
      ['overview', () => h.services.serviceReader.overview(key, s2)],
      ['update service', () => h.services.serviceChanges.update(key, s2, { branch: 'dev' })],
      ['delete service', () => h.services.removal.deleteService(key, s2)],
      ['transfer into', () => h.services.serviceChanges.transfer(key, s1, p2)],
      ['suggestion keys', () => h.services.suggestions.forService(key, s2)],
      ['set env', () => h.services.env.set(key, s2, { key: 'K', value: 'x' })],
      ['delete env', () => h.services.env.delete(key, s2, env2)],
      ['reveal env', () => h.services.env.reveal(key, s2, env2)],
      ['create domain', () => h.services.domains.create(key, s2, 'x.example.com')],
      ['delete domain', () => h.services.domains.delete(key, s2, dom2)],
      ['create deployment', () => h.services.deployments.create(key, s2)],
      ['list deployments', () => h.services.deployments.list(key, s2)],
      ['get deployment', () => h.services.deployments.get(key, d2)],
      ['deployment logs', () => h.services.deployments.logs(key, d2)],
      ['abort deployment', () => h.services.deployments.abort(key, d2)],
      ['database suggestions', () => h.services.suggestions.forProject(key, p2)],
    ];
    // What the key may not see does not exist for it: 404, naming only what the caller sent.
    for (const [what, call] of calls) {
      const error = await rejection(call());
      expect(error, what).toBeInstanceOf(NotFoundError);
      expect(Object.keys((error as NotFoundError).details).sort(), what).toEqual(['id', 'resource']);
    }
    // Capabilities the key lacks are still a 403.
    for (const [what, call] of [
      ['create project', () => h.services.projects.create(key, { name: 'X' })],
      ['list api keys', () => h.services.apiKeys.list(key)],
    ] as Array<[string, () => Promise<unknown>]>) {
      expect(await rejection(call()), what).toBeInstanceOf(ForbiddenError);
    }
    expect((await h.services.projects.list(key)).map((p) => p.id)).toEqual([p1]);
    expect(await h.database.store.projects.getService(s2)).not.toBeNull();
    expect((await h.database.store.deployments.get(d2))!.status).toBe('queued');
  });

  it('a transfer needs access to both projects', async () => {
    await expect(h.services.serviceChanges.transfer(scoped(p2), s1, p2)).rejects.toBeInstanceOf(NotFoundError);
    await expect(h.services.serviceChanges.transfer(scoped(p1), s1, p2)).rejects.toBeInstanceOf(NotFoundError);
    const moved = await h.services.serviceChanges.transfer(scoped(p1, p2), s1, p2);
    // The slug "web" is taken in the target project.
    expect(moved.service).toMatchObject({ projectId: p2, slug: 'web-2' });
  });

  it('unknown ids are not found, even for a scoped key', async () => {
    const calls: Array<[string, (actor: Actor) => Promise<unknown>]> = [
      ['get project', (a) => h.services.projects.get(a, 'nope')],
      ['get project by slug', (a) => h.services.projects.getBySlug(a, 'nope')],
      ['update project', (a) => h.services.projects.update(a, 'nope', { name: 'x' })],
      ['delete project', (a) => h.services.projects.delete(a, 'nope')],
      ['create service', (a) => h.services.serviceCreation.create(a, 'nope', repo('x'))],
      ['overview', (a) => h.services.serviceReader.overview(a, 'nope')],
      ['update service', (a) => h.services.serviceChanges.update(a, 'nope', { branch: 'x' })],
      ['delete service', (a) => h.services.removal.deleteService(a, 'nope')],
      ['transfer target', (a) => h.services.serviceChanges.transfer(a, s1, 'nope')],
      ['set env', (a) => h.services.env.set(a, 'nope', { key: 'K', value: 'v' })],
      ['delete env', (a) => h.services.env.delete(a, s1, 'nope')],
      ['create domain', (a) => h.services.domains.create(a, 'nope', 'x.example.com')],
      ['update domain', (a) => h.services.domains.update(a, s1, 'nope', 'x.example.com')],
      ['delete domain', (a) => h.services.domains.delete(a, s1, 'nope')],
      ['create deployment', (a) => h.services.deployments.create(a, 'nope')],
      ['list deployments', (a) => h.services.deployments.list(a, 'nope')],
      ['get deployment', (a) => h.services.deployments.get(a, 'nope')],
      ['deployment logs', (a) => h.services.deployments.logs(a, 'nope')],
      ['abort deployment', (a) => h.services.deployments.abort(a, 'nope')],
    ];
    for (const actor of [admin, scoped(p1)]) {
      for (const [what, call] of calls) {
        expect(await rejection(call(actor)), `${what} (${actor.keyId})`).toBeInstanceOf(NotFoundError);
      }
    }
  });
});

describe('API keys', () => {
  it('authenticates a minted token to its actor', async () => {
    const actor = await h.services.apiKeys.authenticate(h.adminToken);
    expect(actor).toMatchObject({ access: 'write', projectIds: null });
    const p = await project();
    const token = await h.mintKey('read', [p.id]);
    expect(await h.services.apiKeys.authenticate(token)).toMatchObject({ access: 'read', projectIds: [p.id] });
  });

  it.each([undefined, '', 'slw_unknown-token', 'Bearer nothing'])('refuses an unknown or missing token (%j)', async (token) => {
    await expect(h.services.apiKeys.authenticate(token)).rejects.toBeInstanceOf(UnauthorizedError);
  });

  it('refuses a token that differs from a real one in its last character', async () => {
    const token = h.adminToken;
    const altered = token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A');
    await expect(h.services.apiKeys.authenticate(altered)).rejects.toBeInstanceOf(UnauthorizedError);
  });

  it('stores tokens hashed, keeping only a short prefix in clear', async () => {
    const { token, apiKey } = await h.services.apiKeys.mint('ci', 'write', null);
    const rows = await h.database.store.apiKeys.list();
    const row = rows.find((r) => r.id === apiKey.id)!;
    expect(row.tokenHash).not.toBe(token);
    expect(row.tokenHash).not.toContain(token);
    expect(row.tokenHash).toBe(hashToken(token));
    expect(row.tokenHash).toMatch(/^[0-9a-f]{64}$/);
    expect(token.startsWith(row.prefix)).toBe(true);
    expect(row.prefix.length).toBeLessThanOrEqual(16);
    expect(row.prefix.length).toBeLessThan(token.length / 2);
    for (const r of rows) {
      expect(JSON.stringify(r)).not.toContain(token);
      expect(JSON.stringify(r)).not.toContain(h.adminToken);
    }
    // The view never carries the token either.
    expect(JSON.stringify(apiKey)).not.toContain(token);
    expect(apiKey.prefix).toBe(row.prefix);
  });

  it('mints a different token every time', async () => {
    const tokens = new Set<string>();
    for (let i = 0; i < 20; i++) tokens.add(await h.mintKey('read'));
    expect(tokens.size).toBe(20);
  });

  it('bootstrap is idempotent and makes an all-project write key', async () => {
    const token = 'bootstrap-token-0123456789abcdef';
    const before = (await h.database.store.apiKeys.list()).length;
    await h.services.apiKeys.bootstrap(token);
    await h.services.apiKeys.bootstrap(token);
    await h.services.apiKeys.bootstrap(token);
    const rows = await h.database.store.apiKeys.list();
    expect(rows).toHaveLength(before + 1);
    const row = rows.find((r) => r.tokenHash === hashToken(token))!;
    expect(row).toMatchObject({ name: 'bootstrap', access: 'write', projectIds: null });
    expect(token.startsWith(row.prefix)).toBe(true);
    expect(row.prefix.length).toBeLessThan(token.length);
    expect(await h.services.apiKeys.authenticate(token)).toMatchObject({ keyId: row.id, access: 'write', projectIds: null });
  });

  it('bootstrap refuses a short token', async () => {
    await expect(h.services.apiKeys.bootstrap('short')).rejects.toBeInstanceOf(ValidationError);
  });

  it('a deleted key no longer authenticates', async () => {
    const { token, apiKey } = await h.services.apiKeys.create(admin, { name: 'temp', access: 'read' });
    await h.services.apiKeys.authenticate(token);
    await h.services.apiKeys.delete(admin, apiKey.id);
    await expect(h.services.apiKeys.authenticate(token)).rejects.toBeInstanceOf(UnauthorizedError);
    await expect(h.services.apiKeys.delete(admin, apiKey.id)).rejects.toBeInstanceOf(NotFoundError);
  });

  it('create refuses an unknown project in the scope', async () => {
    await expect(h.services.apiKeys.create(admin, { name: 'k', access: 'read', projectIds: ['nope'] })).rejects.toBeInstanceOf(
      ValidationError,
    );
  });
});
