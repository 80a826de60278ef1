import { beforeEach, describe, expect, it } from 'vitest';
import { ConflictError, NotFoundError, ValidationError } from '../../src/domain/errors.js';
import { freshHarnessPerTest, admin, h, repo, database, project, record } from '../helpers/unit-harness.js';

/** Custom domains and the routing table they feed (src/routing). */
freshHarnessPerTest();

describe('domains and routing', () => {
  let projectId: string;
  let webId: string;
  beforeEach(async () => {
    projectId = (await project()).id;
    webId = (await h.services.serviceCreation.create(admin, projectId, repo('web'))).id;
  });

  it('lower-cases the hostname, makes the first domain preferred, and routes it', async () => {
    const { domain, proxy } = await h.services.domains.create(admin, webId, 'Shop.Example.COM.');
    expect(domain).toMatchObject({ serviceId: webId, hostname: 'shop.example.com', status: 'active' });
    expect(proxy).toEqual({ ok: true, detail: 'loaded' });
    const service = await record(webId);
    expect(service.preferredDomain).toBe('shop.example.com');
    expect(h.proxy.applied).toHaveLength(1);
    // No container yet: the hostname is routed, and the proxy answers 503 for it.
    expect(h.proxy.last).toEqual([{ hostname: 'shop.example.com', serviceId: webId, upstream: null }]);
    const overview = await h.services.serviceReader.overview(admin, webId);
    expect(overview.domains.map((d) => d.hostname)).toEqual(['shop.example.com']);
    expect(overview.service).toMatchObject({ preferredDomain: 'shop.example.com', primaryUrl: 'https://shop.example.com' });
  });

  it('never gives two services one generated hostname: `a-b` in `c` and `a` in `b-c` would share `a-b-c`', async () => {
    const c = await h.services.projects.create(admin, { name: 'c' });
    const bc = await h.services.projects.create(admin, { name: 'b c' });
    expect([c.slug, bc.slug]).toEqual(['c', 'b-c']);
    const ab = await h.services.serviceCreation.create(admin, c.id, repo('a b'));
    const a = await h.services.serviceCreation.create(admin, bc.id, repo('a'));
    expect(ab.slug).toBe('a-b');
    expect(a.slug).toBe('a-2');
    // The other way round, and on a transfer too.
    const x = await h.services.serviceCreation.create(admin, bc.id, repo('x'));
    const xy = await h.services.serviceCreation.create(admin, projectId, repo('x b'));
    const moved = await h.services.serviceChanges.transfer(admin, xy.id, c.id);
    expect(x.slug).toBe('x');
    expect(moved.service.slug).toBe('x-b-2');
  });

  it("refuses another service's generated hostname, routes it, and follows a root domain change", async () => {
    await h.services.settings.update(admin, { rootDomain: 'apps.test' });
    const applies = h.proxy.applied.length;
    const shop = (await h.services.projects.get(admin, projectId)).slug;
    const apiId = (await h.services.serviceCreation.create(admin, projectId, repo('api'))).id;
    await expect(h.services.domains.create(admin, apiId, `web-${shop}.apps.test`)).rejects.toBeInstanceOf(ConflictError);
    // A service may name its own generated hostname; the table holds it once.
    await h.services.domains.create(admin, webId, `web-${shop}.apps.test`);
    expect(h.proxy.last!.filter((r) => r.hostname === `web-${shop}.apps.test`)).toEqual([
      { hostname: `web-${shop}.apps.test`, serviceId: webId, upstream: null },
    ]);
    expect(h.proxy.last!.map((r) => r.hostname)).toContain(`api-${shop}.apps.test`);
    await h.services.settings.update(admin, { rootDomain: 'other.test' });
    expect(h.proxy.applied.length).toBeGreaterThan(applies + 1);
    expect(h.proxy.last!.map((r) => r.hostname)).toContain(`api-${shop}.other.test`);
    await h.services.settings.update(admin, { rootDomain: null });
  });

  it('a second domain does not replace the preferred one', async () => {
    await h.services.domains.create(admin, webId, 'a.example.com');
    await h.services.domains.create(admin, webId, 'b.example.com');
    expect((await record(webId)).preferredDomain).toBe('a.example.com');
  });

  it('refuses an invalid hostname without saving or routing anything', async () => {
    await expect(h.services.domains.create(admin, webId, 'not a host')).rejects.toBeInstanceOf(ValidationError);
    await expect(h.services.domains.create(admin, webId, '10.0.0.1')).rejects.toBeInstanceOf(ValidationError);
    expect(await h.database.store.domains.list(null)).toEqual([]);
    expect(h.proxy.applied).toHaveLength(0);
  });

  it('refuses a hostname already in use, whatever its case and whichever service has it', async () => {
    await h.services.domains.create(admin, webId, 'shop.example.com');
    const api = await h.services.serviceCreation.create(admin, projectId, repo('api'));
    await expect(h.services.domains.create(admin, webId, 'shop.example.com')).rejects.toBeInstanceOf(ConflictError);
    await expect(h.services.domains.create(admin, api.id, 'SHOP.example.com')).rejects.toBeInstanceOf(ConflictError);
    expect(await h.database.store.domains.list(null)).toHaveLength(1);
  });

  it('refuses domains on a worker and on a database service', async () => {
    const worker = await h.services.serviceCreation.create(admin, projectId, repo('jobs', { runtimeMode: 'worker' }));
    await expect(h.services.domains.create(admin, worker.id, 'jobs.example.com')).rejects.toBeInstanceOf(ConflictError);
    const db = await h.services.serviceCreation.create(admin, projectId, database('db', 'postgres'));
    await expect(h.services.domains.create(admin, db.id, 'db.example.com')).rejects.toBeInstanceOf(ConflictError);
    expect(await h.database.store.domains.list(null)).toEqual([]);
  });

  it('refuses to turn a service with domains into a worker', async () => {
    await h.services.domains.create(admin, webId, 'shop.example.com');
    await expect(h.services.serviceChanges.update(admin, webId, { runtimeMode: 'worker' })).rejects.toBeInstanceOf(ConflictError);
    expect((await record(webId)).runtimeMode).toBe('web');
  });

  it('deleting the preferred domain moves preferredDomain to the next domain, then to null', async () => {
    const a = await h.services.domains.create(admin, webId, 'a.example.com');
    const b = await h.services.domains.create(admin, webId, 'b.example.com');
    const c = await h.services.domains.create(admin, webId, 'c.example.com');
    expect(await h.services.domains.delete(admin, webId, a.domain.id)).toEqual({ ok: true, detail: 'loaded' });
    expect((await record(webId)).preferredDomain).toBe('b.example.com');
    // Deleting a non-preferred domain leaves it alone.
    await h.services.domains.delete(admin, webId, c.domain.id);
    expect((await record(webId)).preferredDomain).toBe('b.example.com');
    await h.services.domains.delete(admin, webId, b.domain.id);
    expect((await record(webId)).preferredDomain).toBeNull();
    expect(h.proxy.last).toEqual([]);
  });

  it('renaming the preferred domain follows it', async () => {
    const a = await h.services.domains.create(admin, webId, 'a.example.com');
    expect(await h.services.domains.update(admin, webId, a.domain.id, 'New.Example.com')).toEqual({ ok: true, detail: 'loaded' });
    expect((await record(webId)).preferredDomain).toBe('new.example.com');
    expect(h.proxy.last!.map((r) => r.hostname)).toEqual(['new.example.com']);
  });

  it('a domain of another service is not found', async () => {
    const api = await h.services.serviceCreation.create(admin, projectId, repo('api'));
    const { domain } = await h.services.domains.create(admin, webId, 'a.example.com');
    await expect(h.services.domains.delete(admin, api.id, domain.id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(h.services.domains.update(admin, api.id, domain.id, 'b.example.com')).rejects.toBeInstanceOf(NotFoundError);
    await expect(h.services.domains.delete(admin, webId, 'no-such-domain')).rejects.toBeInstanceOf(NotFoundError);
  });

  it('every routing change hands the proxy the whole table and returns its result', async () => {
    const api = await h.services.serviceCreation.create(admin, projectId, repo('api'));
    const other = await project('Other');
    // The deploy runner sets these at cutover; the table sends each hostname to its service's container.
    h.services.routing.setUpstream(webId, '172.18.0.2:3000');
    h.services.routing.setUpstream(api.id, '172.18.0.3:8080');
    const hosts = () => (h.proxy.last ?? []).map((r) => `${r.hostname}->${r.upstream}`).sort();

    h.proxy.result = { ok: true, detail: 'create' };
    const created = await h.services.domains.create(admin, webId, 'web.example.com');
    expect(created.proxy).toEqual({ ok: true, detail: 'create' });
    expect(hosts()).toEqual([`web.example.com->172.18.0.2:3000`]);

    const apiDomain = await h.services.domains.create(admin, api.id, 'api.example.com');
    expect(hosts()).toEqual([`api.example.com->172.18.0.3:8080`, `web.example.com->172.18.0.2:3000`]);

    h.proxy.result = { ok: true, detail: 'update' };
    expect(await h.services.domains.update(admin, api.id, apiDomain.domain.id, 'api2.example.com')).toEqual({ ok: true, detail: 'update' });
    expect(hosts()).toEqual([`api2.example.com->172.18.0.3:8080`, `web.example.com->172.18.0.2:3000`]);

    h.proxy.result = { ok: false, detail: 'transfer' };
    const moved = await h.services.serviceChanges.transfer(admin, api.id, other.id);
    expect(moved.proxy).toEqual({ ok: false, detail: 'transfer' });
    expect(hosts()).toEqual([`api2.example.com->172.18.0.3:8080`, `web.example.com->172.18.0.2:3000`]);

    h.proxy.result = { ok: true, detail: 'delete service' };
    expect(await h.services.removal.deleteService(admin, api.id)).toEqual({ ok: true, detail: 'delete service' });
    expect(hosts()).toEqual([`web.example.com->172.18.0.2:3000`]);

    h.proxy.result = { ok: true, detail: 'delete domain' };
    expect(await h.services.domains.delete(admin, webId, created.domain.id)).toEqual({ ok: true, detail: 'delete domain' });
    expect(hosts()).toEqual([]);

    await h.services.domains.create(admin, webId, 'again.example.com');
    h.proxy.result = { ok: true, detail: 'delete project' };
    expect(await h.services.projects.delete(admin, projectId)).toEqual({ ok: true, detail: 'delete project' });
    expect(hosts()).toEqual([]);

    expect(h.proxy.applied).toHaveLength(8);
  });

  it('a proxy that throws gives {ok:false, detail} and the change is still saved', async () => {
    h.proxy.apply = async () => {
      throw new Error('caddy is down');
    };
    const created = await h.services.domains.create(admin, webId, 'shop.example.com');
    expect(created.proxy.ok).toBe(false);
    expect(created.proxy.detail).toContain('caddy is down');
    expect((await h.database.store.domains.list([webId])).map((d) => d.hostname)).toEqual(['shop.example.com']);

    const updated = await h.services.domains.update(admin, webId, created.domain.id, 'www.example.com');
    expect(updated).toMatchObject({ ok: false });
    expect((await h.database.store.domains.get(created.domain.id))!.hostname).toBe('www.example.com');

    const deleted = await h.services.domains.delete(admin, webId, created.domain.id);
    expect(deleted).toMatchObject({ ok: false });
    expect(await h.database.store.domains.get(created.domain.id)).toBeNull();

    expect(await h.services.removal.deleteService(admin, webId)).toMatchObject({ ok: false });
    expect(await h.database.store.projects.getService(webId)).toBeNull();

    expect(await h.services.projects.delete(admin, projectId)).toMatchObject({ ok: false });
    expect(await h.database.store.projects.get(projectId)).toBeNull();
  });
});
