import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { errorOf } from '../helpers/caller-errors.js';
import { createHarness, type Harness } from '../helpers/harness.js';

/** The environment routes through createCaller: shapes, validation, access, and the apps of an environment. */

let h: Harness;
beforeEach(async () => {
  h = await createHarness({ config: { rootDomain: 'apps.test' } });
});
afterEach(async () => {
  await h.close();
});

describe('environments through the router', () => {
  it('lists, creates, reads, renames and deletes environments', async () => {
    const api = h.caller();
    const { project } = await api.projects.create({ name: 'Shop' });
    const { environments } = await api.environments.list({ projectId: project.id });
    expect(environments).toEqual([
      {
        id: project.id,
        projectId: project.id,
        name: 'production',
        isDefault: true,
        serviceCount: 0,
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
      },
    ]);
    const { environment } = await api.environments.create({ projectId: project.id, name: 'staging' });
    expect(environment).toMatchObject({ name: 'staging', isDefault: false, serviceCount: 0 });
    expect((await api.environments.get({ environmentId: environment.id })).environment).toEqual(environment);

    const renamed = await api.environments.update({ environmentId: environment.id, name: 'qa' });
    expect(renamed.environment).toMatchObject({ id: environment.id, name: 'qa' });
    expect(renamed.proxy).toMatchObject({ ok: true });
    // Nothing to change: the environment as it is, and no reload.
    expect(await api.environments.update({ environmentId: environment.id })).toMatchObject({
      environment: { name: 'qa' },
      proxy: { ok: true, detail: 'routes unchanged' },
    });

    expect(await api.environments.delete({ environmentId: environment.id })).toMatchObject({ ok: true, proxy: { ok: true } });
    expect(await errorOf(api.environments.get({ environmentId: environment.id }))).toMatchObject({ code: 'NOT_FOUND', error: 'not_found' });
    expect(await errorOf(api.environments.delete({ environmentId: project.id }))).toMatchObject({ code: 'CONFLICT', error: 'conflict' });
  });

  it('refuses bad names and unknown fields with a 400 naming the field', async () => {
    const api = h.caller();
    const { project } = await api.projects.create({ name: 'Shop' });
    expect(await errorOf(api.environments.create({ projectId: project.id, name: 'Not A Slug' }))).toMatchObject({
      error: 'validation_error',
      field: 'name',
    });
    expect(await errorOf(api.environments.create({ projectId: project.id, name: '' }))).toMatchObject({ field: 'name' });
    expect(
      await errorOf(
        api.environments.create({ projectId: project.id, name: 'ok', colour: 'red' } as unknown as { projectId: string; name: string }),
      ),
    ).toMatchObject({ error: 'validation_error', field: 'colour' });
    expect(
      await errorOf(
        api.environments.clone({ environmentId: project.id, name: 'ok', services: [] } as unknown as {
          environmentId: string;
          name: string;
        }),
      ),
    ).toMatchObject({ field: 'services' });
    expect(await errorOf(api.environments.update({ environmentId: project.id, name: 'x'.repeat(33) }))).toMatchObject({ field: 'name' });
    expect(await errorOf(api.environments.create({ projectId: project.id, name: 'production' }))).toMatchObject({ error: 'conflict' });
  });

  it('creates and lists apps in an environment with the detailed create payload, answering {service}', async () => {
    const api = h.caller();
    const { project } = await api.projects.create({ name: 'Shop' });
    const { environment } = await api.environments.create({ projectId: project.id, name: 'staging' });
    const { service } = await api.apps.createInEnvironment({
      environmentId: environment.id,
      name: 'web',
      repoFullName: 'acme/web',
      env: [{ key: 'A', value: '1' }],
    });
    expect(service).toMatchObject({
      environmentId: environment.id,
      projectId: project.id,
      slug: 'web',
      primaryUrl: 'https://web-staging-shop.apps.test',
    });
    // The same object as the detailed API's and the general API's apps door answer.
    expect((await api.apps.get({ appId: service.id })).service).toEqual(service);
    expect((await api.services.overview({ serviceId: service.id })).service).toEqual(service);
    expect((await api.apps.listInEnvironment({ environmentId: environment.id })).services).toEqual([service]);
    expect((await api.apps.listInEnvironment({ environmentId: project.id })).services).toEqual([]);
    // The project lists the services of every environment.
    expect((await api.projects.bySlug({ projectSlug: project.slug })).project.services.map((s) => s.id)).toEqual([service.id]);
    expect(
      await errorOf(api.apps.createInEnvironment({ environmentId: environment.id, name: 'x', repoFullName: 'acme/x', colour: 1 } as never)),
    ).toMatchObject({ field: 'colour' });
  });

  it('deploys a project one environment at a time: the default one unless another is named', async () => {
    const api = h.caller();
    const { project } = await api.projects.create({ name: 'Shop' });
    const web = (await api.services.create({ projectId: project.id, name: 'web', repoFullName: 'acme/web' })).service;
    const { environment } = await api.environments.create({ projectId: project.id, name: 'staging' });
    const staged = (await api.apps.createInEnvironment({ environmentId: environment.id, name: 'web', repoFullName: 'acme/web' })).service;

    expect((await api.deploy.project({ projectId: project.id })).deployments.map((d) => d.serviceId)).toEqual([web.id]);
    const named = await api.deploy.project({ projectId: project.id, environmentId: environment.id });
    expect(named.deployments.map((d) => d.serviceId)).toEqual([staged.id]);
    expect(named.deployments[0]).toMatchObject({ status: 'queued', trigger: 'manual' });

    const other = (await api.projects.create({ name: 'Other' })).project;
    expect(await errorOf(api.deploy.project({ projectId: other.id, environmentId: environment.id }))).toMatchObject({
      error: 'validation_error',
      field: 'environmentId',
    });
    expect(await errorOf(api.deploy.project({ projectId: project.id, environmentId: 'nope' }))).toMatchObject({ code: 'NOT_FOUND' });
  });

  it('clones through the router: the new environment and its services, none deployed', async () => {
    const api = h.caller();
    const { project } = await api.projects.create({ name: 'Shop' });
    const web = (await api.services.create({ projectId: project.id, name: 'web', repoFullName: 'acme/web' })).service;
    await api.domains.create({ serviceId: web.id, hostname: 'shop.example.test' });
    const cloned = await api.environments.clone({ environmentId: project.id, name: 'preview' });
    expect(cloned.environment).toMatchObject({ name: 'preview', serviceCount: 1 });
    expect(cloned.services).toHaveLength(1);
    expect(cloned.services[0]).toMatchObject({
      environmentId: cloned.environment.id,
      slug: 'web',
      preferredDomain: null,
      status: 'idle',
      primaryUrl: 'https://web-preview-shop.apps.test',
    });
    expect((await api.services.overview({ serviceId: cloned.services[0]!.id })).deployments).toEqual([]);
  });

  it('uses the project scope and access level: a read key reads, a key of another project sees nothing', async () => {
    const api = h.caller();
    const { project } = await api.projects.create({ name: 'Shop' });
    const { project: other } = await api.projects.create({ name: 'Other' });
    const { environment } = await api.environments.create({ projectId: project.id, name: 'staging' });
    const read = h.caller(await h.mintKey('read'));
    expect((await read.environments.list({ projectId: project.id })).environments).toHaveLength(2);
    expect(await errorOf(read.environments.create({ projectId: project.id, name: 'x' }))).toMatchObject({ code: 'FORBIDDEN' });
    expect(await errorOf(read.environments.clone({ environmentId: environment.id, name: 'x' }))).toMatchObject({ code: 'FORBIDDEN' });
    const outsider = h.caller(await h.mintKey('write', [other.id]));
    for (const call of [
      () => outsider.environments.get({ environmentId: environment.id }),
      () => outsider.environments.delete({ environmentId: environment.id }),
      () => outsider.apps.listInEnvironment({ environmentId: environment.id }),
      () => outsider.environments.list({ projectId: project.id }),
    ]) {
      const error = await errorOf(call());
      expect(error.code).toBe('NOT_FOUND');
    }
    expect((await api.environments.get({ environmentId: environment.id })).environment.name).toBe('staging');
  });
});
