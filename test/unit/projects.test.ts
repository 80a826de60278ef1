import { describe, expect, it } from 'vitest';
import { ConflictError, NotFoundError, ValidationError } from '../../src/domain/errors.js';
import { DATABASE_ENGINES, type DatabaseEngine } from '../../src/domain/database-engines.js';
import {
  freshHarnessPerTest,
  admin,
  scoped,
  PASSWORD_ALPHABET,
  h,
  replaceHarness,
  repo,
  database,
  project,
  record,
} from '../helpers/unit-harness.js';

/** Projects and their services (src/projects): creation, slugs, host ports, database services, deletion. */
freshHarnessPerTest();

describe('projects', () => {
  it('creates an idle project with a slug and no services', async () => {
    const created = await h.services.projects.create(admin, { name: '  My App  ', description: 'the shop' });
    expect(created).toMatchObject({
      name: 'My App',
      slug: 'my-app',
      description: 'the shop',
      status: 'idle',
      serviceCount: 0,
      services: [],
    });
    expect(typeof created.id).toBe('string');
    expect(new Date(created.lastUpdatedAt).toISOString()).toBe(created.lastUpdatedAt);
    expect(await h.services.projects.getBySlug(admin, 'my-app')).toMatchObject({ id: created.id });
  });

  it('gives two projects of the same name distinct slugs: my-app, my-app-2, my-app-3', async () => {
    const a = await project('My App');
    const b = await project('My App');
    const c = await project('my app!');
    expect([a.slug, b.slug, c.slug]).toEqual(['my-app', 'my-app-2', 'my-app-3']);
    expect(new Set([a.id, b.id, c.id]).size).toBe(3);
  });

  it('gives distinct slugs to projects of the same name created at the same time', async () => {
    // Two requests racing must not turn "pick a free slug" into a 409 for one of them.
    const results = await Promise.allSettled([project('My App'), project('My App'), project('My App')]);
    const reasons = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected').map((r) => String(r.reason));
    expect(reasons).toEqual([]);
    const slugs = results.map((r) => (r as PromiseFulfilledResult<{ slug: string }>).value.slug).sort();
    expect(slugs).toEqual(['my-app', 'my-app-2', 'my-app-3']);
  });

  it('renaming keeps the slug', async () => {
    const created = await project('My App');
    const renamed = await h.services.projects.update(admin, created.id, { name: 'Totally Different', description: 'new' });
    expect(renamed).toMatchObject({ id: created.id, name: 'Totally Different', slug: 'my-app', description: 'new' });
    expect(await h.services.projects.getBySlug(admin, 'my-app')).toMatchObject({ name: 'Totally Different' });
    await expect(h.services.projects.getBySlug(admin, 'totally-different')).rejects.toBeInstanceOf(NotFoundError);
    // A new project with the old name still does not take the slug.
    expect((await project('My App')).slug).toBe('my-app-2');
  });

  it('refuses an empty name', async () => {
    await expect(h.services.projects.create(admin, { name: '   ' })).rejects.toBeInstanceOf(ValidationError);
  });

  it('lists only the projects a scoped key can see', async () => {
    const a = await project('A');
    await project('B');
    expect((await h.services.projects.list(admin)).map((p) => p.name)).toEqual(['A', 'B']);
    expect((await h.services.projects.list(scoped(a.id))).map((p) => p.name)).toEqual(['A']);
  });

  it('counts services in the project view', async () => {
    const p = await project();
    await h.services.serviceCreation.create(admin, p.id, repo('web'));
    await h.services.serviceCreation.create(admin, p.id, repo('api'));
    const view = await h.services.projects.get(admin, p.id);
    expect(view.serviceCount).toBe(2);
    expect(view.services.map((s) => s.slug)).toEqual(['web', 'api']);
  });
});

describe('host port allocation', () => {
  const from = 20000;

  it('assigns the lowest free port of the range', async () => {
    const p = await project();
    const a = await h.services.serviceCreation.create(admin, p.id, repo('a'));
    const b = await h.services.serviceCreation.create(admin, p.id, repo('b'));
    const c = await h.services.serviceCreation.create(admin, p.id, repo('c'));
    expect([a.hostPort, b.hostPort, c.hostPort]).toEqual([from, from + 1, from + 2]);
  });

  it('skips ports that something else on the host holds', async () => {
    h.portProbe.held.add(from);
    h.portProbe.held.add(from + 2);
    const p = await project();
    const a = await h.services.serviceCreation.create(admin, p.id, repo('a'));
    const b = await h.services.serviceCreation.create(admin, p.id, repo('b'));
    const c = await h.services.serviceCreation.create(admin, p.id, repo('c'));
    expect([a.hostPort, b.hostPort, c.hostPort]).toEqual([from + 1, from + 3, from + 4]);
  });

  it('never hands out a port another service holds, across projects and even when the probe says it is free', async () => {
    const p1 = await project('One');
    const p2 = await project('Two');
    const ports: number[] = [];
    for (let i = 0; i < 6; i++)
      ports.push((await h.services.serviceCreation.create(admin, i % 2 ? p1.id : p2.id, repo(`svc${i}`))).hostPort);
    expect(new Set(ports).size).toBe(6);
    const stored = (await h.database.store.projects.listAllServices()).map((s) => s.hostPort);
    expect(new Set(stored).size).toBe(stored.length);
  });

  it('frees the port once the service is deleted', async () => {
    const p = await project();
    const a = await h.services.serviceCreation.create(admin, p.id, repo('a'));
    const b = await h.services.serviceCreation.create(admin, p.id, repo('b'));
    await h.services.removal.deleteService(admin, a.id);
    const c = await h.services.serviceCreation.create(admin, p.id, repo('c'));
    expect(c.hostPort).toBe(a.hostPort);
    const d = await h.services.serviceCreation.create(admin, p.id, repo('d'));
    expect(d.hostPort).toBe(b.hostPort + 1);
  });

  it('frees the ports of a deleted project', async () => {
    const p = await project();
    const a = await h.services.serviceCreation.create(admin, p.id, repo('a'));
    await h.services.projects.delete(admin, p.id);
    const q = await project('Other');
    expect((await h.services.serviceCreation.create(admin, q.id, repo('b'))).hostPort).toBe(a.hostPort);
  });

  it('refuses with a conflict when the range is exhausted', async () => {
    await replaceHarness({ config: { hostPortRange: { from: 30000, to: 30001 } } });
    h.portProbe.held.add(30001);
    const p = await project();
    expect((await h.services.serviceCreation.create(admin, p.id, repo('a'))).hostPort).toBe(30000);
    await expect(h.services.serviceCreation.create(admin, p.id, repo('b'))).rejects.toBeInstanceOf(ConflictError);
    expect(await h.database.store.projects.listAllServices()).toHaveLength(1);
  });
});

describe('service creation', () => {
  it('creates an idle repository service with a slug unique in its project', async () => {
    const p = await project();
    const a = await h.services.serviceCreation.create(admin, p.id, repo('Web App'));
    const b = await h.services.serviceCreation.create(admin, p.id, {
      name: 'Web App',
      repoFullName: null,
      repoUrl: 'https://github.com/acme/other.git',
    });
    expect(a).toMatchObject({
      projectId: p.id,
      slug: 'web-app',
      status: 'idle',
      repoFullName: 'acme/web-app',
      branch: 'main',
      buildMethod: 'auto',
      runtimeMode: 'web',
    });
    expect(b).toMatchObject({ slug: 'web-app-2', repoFullName: null, repoUrl: 'https://github.com/acme/other.git' });
  });

  it('creates a container-image service', async () => {
    const p = await project();
    const s = await h.services.serviceCreation.create(admin, p.id, {
      name: 'cache',
      repoUrl: 'container-image',
      containerImage: 'ghcr.io/acme/cache:1.2',
    });
    expect(s).toMatchObject({
      repoFullName: 'image:ghcr.io/acme/cache:1.2',
      repoUrl: 'container-image',
      containerImage: 'ghcr.io/acme/cache:1.2',
    });
  });

  it('refuses a local git url and an invalid image, creating nothing', async () => {
    const p = await project();
    await expect(
      h.services.serviceCreation.create(admin, p.id, { name: 'x', repoFullName: null, repoUrl: 'file:///etc' }),
    ).rejects.toBeInstanceOf(ValidationError);
    await expect(
      h.services.serviceCreation.create(admin, p.id, { name: 'x', repoUrl: 'container-image', containerImage: 'Bad Image' }),
    ).rejects.toBeInstanceOf(ValidationError);
    expect(await h.database.store.projects.listAllServices()).toHaveLength(0);
  });
});

describe('database services', () => {
  const initialKeys: Record<DatabaseEngine, string[]> = {
    postgres: ['POSTGRES_DB', 'POSTGRES_USER', 'POSTGRES_PASSWORD'],
    timescale: ['POSTGRES_DB', 'POSTGRES_USER', 'POSTGRES_PASSWORD', 'TIMESCALEDB_TELEMETRY'],
    mysql: ['MYSQL_DATABASE', 'MYSQL_USER', 'MYSQL_PASSWORD', 'MYSQL_ROOT_PASSWORD'],
    redis: ['REDIS_PASSWORD'],
    mongodb: ['MONGO_INITDB_ROOT_USERNAME', 'MONGO_INITDB_ROOT_PASSWORD'],
    clickhouse: ['CLICKHOUSE_DB', 'CLICKHOUSE_USER', 'CLICKHOUSE_PASSWORD', 'CLICKHOUSE_DEFAULT_ACCESS_MANAGEMENT'],
  };
  const ports: Record<DatabaseEngine, number> = {
    postgres: 5432,
    timescale: 5432,
    mysql: 3306,
    redis: 6379,
    mongodb: 27017,
    clickhouse: 8123,
  };

  it.each(DATABASE_ENGINES.map((e) => [e]))('%s: generates the initial env with strong secret passwords', async (engine) => {
    const p = await project();
    const service = await h.services.serviceCreation.create(admin, p.id, database('Main DB', engine));
    expect(service).toMatchObject({ status: 'idle', repoFullName: `database:${engine}`, repoUrl: 'database', internalPort: ports[engine] });

    const rows = await h.database.store.env.list([service.id]);
    expect(rows.map((r) => r.key).sort()).toEqual([...initialKeys[engine]].sort());
    const values = await h.envValues(service.id);
    for (const row of rows) {
      const value = values[row.key]!;
      expect(value.length, row.key).toBeGreaterThan(0);
      if (/PASSWORD/.test(row.key)) {
        expect(row.secret, `${row.key} is secret`).toBe(true);
        expect(value, row.key).toMatch(PASSWORD_ALPHABET);
      } else {
        expect(row.secret, `${row.key} is not secret`).toBe(false);
      }
    }
    // Passwords differ between keys and between services.
    const other = await h.services.serviceCreation.create(admin, p.id, database('Main DB', engine));
    const otherValues = await h.envValues(other.id);
    const passwordKeys = initialKeys[engine].filter((k) => /PASSWORD/.test(k));
    const all = [...passwordKeys.map((k) => values[k]), ...passwordKeys.map((k) => otherValues[k])];
    expect(new Set(all).size).toBe(all.length);

    // The overview never shows them.
    const listed = await h.services.env.listForService(await record(service.id));
    for (const v of listed.filter((v) => v.secret)) {
      expect(v).toMatchObject({ value: '', resolvedValue: '', hasValue: true });
    }
  });

  it('derives names from the slug and fixed values per engine', async () => {
    const p = await project();
    const ts = await h.services.serviceCreation.create(admin, p.id, database('Metrics Store', 'timescale'));
    expect(await h.envValues(ts.id)).toMatchObject({
      POSTGRES_DB: 'metrics_store',
      POSTGRES_USER: 'metrics_store',
      TIMESCALEDB_TELEMETRY: 'off',
    });
    const ch = await h.services.serviceCreation.create(admin, p.id, database('events', 'clickhouse'));
    expect(await h.envValues(ch.id)).toMatchObject({ CLICKHOUSE_DB: 'events', CLICKHOUSE_DEFAULT_ACCESS_MANAGEMENT: '1' });
  });

  it('keeps the values the caller gave and generates only the missing ones', async () => {
    const p = await project();
    const service = await h.services.serviceCreation.create(
      admin,
      p.id,
      database('db', 'mysql', {
        env: [
          { key: 'MYSQL_PASSWORD', value: 'caller-chosen-password' },
          { key: 'MYSQL_USER', value: 'shop' },
          { key: 'EXTRA_SETTING', value: 'on' },
        ],
      }),
    );
    const values = await h.envValues(service.id);
    expect(values).toMatchObject({
      MYSQL_PASSWORD: 'caller-chosen-password',
      MYSQL_USER: 'shop',
      EXTRA_SETTING: 'on',
      MYSQL_DATABASE: 'db',
    });
    expect(values.MYSQL_ROOT_PASSWORD).toMatch(PASSWORD_ALPHABET);
    expect(Object.keys(values).sort()).toEqual(['EXTRA_SETTING', 'MYSQL_DATABASE', 'MYSQL_PASSWORD', 'MYSQL_ROOT_PASSWORD', 'MYSQL_USER']);
  });

  it('refuses an unknown engine', async () => {
    const p = await project();
    await expect(
      h.services.serviceCreation.create(admin, p.id, { name: 'db', repoUrl: 'database', repoFullName: 'database:oracle' }),
    ).rejects.toBeInstanceOf(ValidationError);
  });

  it('suggests connection URLs made of references, which resolve for the consumer', async () => {
    const p = await project();
    const db = await h.services.serviceCreation.create(admin, p.id, database('db', 'postgres'));
    const web = await h.services.serviceCreation.create(admin, p.id, repo('web'));
    const [suggestion] = await h.services.suggestions.forProject(admin, p.id);
    expect(suggestion).toMatchObject({
      key: 'DATABASE_URL',
      value: 'postgres://${db.POSTGRES_USER}:${db.POSTGRES_PASSWORD}@db:5432/${db.POSTGRES_DB}',
    });
    await h.services.env.set(admin, web.id, { key: 'DATABASE_URL', value: suggestion!.value! });
    const password = (await h.envValues(db.id)).POSTGRES_PASSWORD!;
    const resolved = await h.services.env.resolvedFor(await record(web.id));
    expect(resolved).toEqual({ env: { DATABASE_URL: `postgres://db:${password}@db:5432/db` }, problems: [] });
  });
});

describe('project deletion', () => {
  it('removes the services, env, domains, deployments and logs of the project, and nothing else', async () => {
    const doomed = await project('Doomed');
    const kept = await project('Kept');
    const web = await h.services.serviceCreation.create(admin, doomed.id, repo('web', { env: [{ key: 'A', value: '1' }] }));
    const db = await h.services.serviceCreation.create(admin, doomed.id, database('db', 'postgres'));
    const survivor = await h.services.serviceCreation.create(admin, kept.id, repo('web', { env: [{ key: 'B', value: '2' }] }));
    await h.services.domains.create(admin, web.id, 'doomed.example.com');
    await h.services.domains.create(admin, survivor.id, 'kept.example.com');
    const deployment = await h.services.deployments.create(admin, web.id);
    await h.services.deployments.appendLog(deployment.id, 'stdout', 'building', 'done');
    const keptDeployment = await h.services.deployments.create(admin, survivor.id);

    const proxy = await h.services.projects.delete(admin, doomed.id);
    expect(proxy).toEqual({ ok: true, detail: 'loaded' });

    const store = h.database.store;
    expect(await store.projects.get(doomed.id)).toBeNull();
    expect(await store.projects.getService(web.id)).toBeNull();
    expect(await store.projects.getService(db.id)).toBeNull();
    expect(await store.projects.listServices([doomed.id])).toEqual([]);
    expect(await store.env.list([web.id, db.id])).toEqual([]);
    expect(await store.domains.list([web.id, db.id])).toEqual([]);
    expect(await store.deployments.get(deployment.id)).toBeNull();
    expect(await store.deployments.list(web.id)).toEqual([]);
    expect(await store.deployments.listLogs(deployment.id)).toEqual([]);

    expect(await store.projects.get(kept.id)).not.toBeNull();
    expect(await store.projects.getService(survivor.id)).not.toBeNull();
    expect((await store.env.list([survivor.id])).map((v) => v.key)).toEqual(['B']);
    expect((await store.domains.list(null)).map((d) => d.hostname)).toEqual(['kept.example.com']);
    expect(await store.deployments.get(keptDeployment.id)).not.toBeNull();
    expect(h.proxy.last!.map((r) => r.hostname)).toEqual(['kept.example.com']);

    await expect(h.services.projects.get(admin, doomed.id)).rejects.toBeInstanceOf(NotFoundError);
  });

  it('tells the runtime which services were removed', async () => {
    const { DEFAULT_PLATFORM_CONFIG } = await import('../../src/index.js');
    const { createUseCases } = await import('../../adapters/composition/use-cases.js');
    await replaceHarness();
    const removed: string[][] = [];
    const services = createUseCases(
      { store: h.database.store, secrets: h.secrets, clock: { now: () => new Date() }, logBus: h.logBus, config: DEFAULT_PLATFORM_CONFIG },
      {
        proxy: h.proxy,
        runtimeLogs: h.runtimeLogs,
        portProbe: h.portProbe,
        onServicesRemoved: async (list) => void removed.push(list.map((s) => s.slug).sort()),
      },
    );
    const p = await services.projects.create(admin, { name: 'P' });
    await services.serviceCreation.create(admin, p.id, repo('web'));
    const api = await services.serviceCreation.create(admin, p.id, repo('api'));
    await services.removal.deleteService(admin, api.id);
    await services.projects.delete(admin, p.id);
    expect(removed).toEqual([['api'], ['web']]);
  });
});
