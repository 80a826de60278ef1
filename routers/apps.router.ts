import { z } from 'zod';
import { createServiceInput, proxyResultView, serviceView, updateServiceInput } from '../src/index.js';
import { idParam } from './schemas.js';
import { readProcedure, router, writeProcedure } from './trpc.js';

/** The general API's apps: services under another name, over the same use cases as /api/services. */
const tags = ['Apps'];

export const appsRouter = router({
  listInEnvironment: readProcedure
    .meta({
      scope: 'project:read',
      openapi: { method: 'GET', path: '/api/environments/{environmentId}/apps', tags, summary: 'The services (apps) of an environment' },
    })
    .input(z.strictObject({ environmentId: idParam }))
    .output(z.object({ services: z.array(serviceView) }))
    .query(async ({ ctx, input }) => ({ services: await ctx.services.environments.listApps(ctx.actor, input.environmentId) })),

  createInEnvironment: writeProcedure
    .meta({
      scope: 'project:write',
      created: true,
      openapi: {
        method: 'POST',
        path: '/api/environments/{environmentId}/apps',
        tags,
        summary: 'Create a service in an environment: the body of POST /api/projects/{projectId}/services',
      },
    })
    .input(z.strictObject({ environmentId: idParam, ...createServiceInput.shape }))
    .output(z.object({ service: serviceView }))
    .mutation(async ({ ctx, input }) => {
      const { environmentId, ...rest } = input;
      return { service: await ctx.services.serviceCreation.createInEnvironment(ctx.actor, environmentId, rest) };
    }),

  get: readProcedure
    .meta({
      scope: 'project:read',
      openapi: { method: 'GET', path: '/api/apps/{appId}', tags, summary: 'A service (an app), as the service overview shows it' },
    })
    .input(z.strictObject({ appId: idParam }))
    .output(z.object({ service: serviceView }))
    .query(async ({ ctx, input }) => ({ service: await ctx.services.serviceReader.get(ctx.actor, input.appId) })),

  update: writeProcedure
    .meta({
      scope: 'project:write',
      openapi: {
        method: 'PUT',
        path: '/api/apps/{appId}',
        tags,
        summary: 'Change how a service is built and run: the fields of PATCH /api/services/{serviceId}; fields left out keep their value',
      },
    })
    .input(z.strictObject({ ...updateServiceInput.shape, appId: idParam }))
    .output(z.object({ service: serviceView }))
    .mutation(async ({ ctx, input }) => {
      const { appId, ...patch } = input;
      return { service: await ctx.services.serviceChanges.update(ctx.actor, appId, patch) };
    }),

  delete: writeProcedure
    .meta({
      scope: 'project:write',
      openapi: {
        method: 'DELETE',
        path: '/api/apps/{appId}',
        tags,
        summary: 'Delete a service with its domains, variables, deployments and logs',
      },
    })
    .input(z.strictObject({ appId: idParam }))
    .output(z.object({ ok: z.literal(true), proxy: proxyResultView }))
    .mutation(async ({ ctx, input }) => ({ ok: true as const, proxy: await ctx.services.removal.deleteService(ctx.actor, input.appId) })),
});
