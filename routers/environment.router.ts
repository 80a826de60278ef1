import { z } from 'zod';
import {
  environmentCloneView,
  environmentInput,
  environmentPatchInput,
  environmentView,
  proxyResultView,
  serviceView,
} from '../src/index.js';
import { idParam } from './schemas.js';
import { readProcedure, router, writeProcedure } from './trpc.js';

/** A project's environments (docs/general-api.md, Environments): the project's scope and access level. */
const tags = ['Environments'];

export const environmentRouter = router({
  list: readProcedure
    .meta({
      scope: 'project:read',
      answerCache: true,
      openapi: { method: 'GET', path: '/api/projects/{projectId}/environments', tags, summary: "A project's environments, oldest first" },
    })
    .input(z.strictObject({ projectId: idParam }))
    .output(z.object({ environments: z.array(environmentView) }))
    .query(async ({ ctx, input }) => ({ environments: await ctx.services.environments.list(ctx.actor, input.projectId) })),

  create: writeProcedure
    .meta({
      scope: 'project:write',
      created: true,
      openapi: {
        method: 'POST',
        path: '/api/projects/{projectId}/environments',
        tags,
        summary: 'Create an empty environment in a project',
      },
    })
    .input(z.strictObject({ projectId: idParam, ...environmentInput.shape }))
    .output(z.object({ environment: environmentView }))
    .mutation(async ({ ctx, input }) => {
      const { projectId, ...rest } = input;
      return { environment: await ctx.services.environments.create(ctx.actor, projectId, rest) };
    }),

  get: readProcedure
    .meta({
      scope: 'project:read',
      answerCache: true,
      openapi: { method: 'GET', path: '/api/environments/{environmentId}', tags, summary: 'An environment' },
    })
    .input(z.strictObject({ environmentId: idParam }))
    .output(z.object({ environment: environmentView }))
    .query(async ({ ctx, input }) => ({ environment: await ctx.services.environments.get(ctx.actor, input.environmentId) })),

  update: writeProcedure
    .meta({
      scope: 'project:write',
      openapi: {
        method: 'PATCH',
        path: '/api/environments/{environmentId}',
        tags,
        summary: "Rename an environment: its services' generated hostnames follow the name, and the proxy is reloaded",
      },
    })
    .input(z.strictObject({ environmentId: idParam, ...environmentPatchInput.shape }))
    .output(z.object({ environment: environmentView, proxy: proxyResultView }))
    .mutation(async ({ ctx, input }) => {
      const { environmentId, ...patch } = input;
      return ctx.services.environments.update(ctx.actor, environmentId, patch);
    }),

  delete: writeProcedure
    .meta({
      scope: 'project:write',
      openapi: {
        method: 'DELETE',
        path: '/api/environments/{environmentId}',
        tags,
        summary: 'Delete an environment with its services (as deleting each service does); 409 for the last one of a project',
      },
    })
    .input(z.strictObject({ environmentId: idParam }))
    .output(z.object({ ok: z.literal(true), proxy: proxyResultView }))
    .mutation(async ({ ctx, input }) => ({
      ok: true as const,
      proxy: await ctx.services.environments.delete(ctx.actor, input.environmentId),
    })),

  clone: writeProcedure
    .meta({
      scope: 'project:write',
      created: true,
      openapi: {
        method: 'POST',
        path: '/api/environments/{environmentId}/clone',
        tags,
        summary:
          'Copy an environment into a new one: its services with their settings and variables, no domains, no deployments; databases empty, with new passwords; storage instances empty, with new key pairs (answered once)',
      },
    })
    .input(z.strictObject({ environmentId: idParam, ...environmentInput.shape }))
    .output(environmentCloneView)
    .mutation(async ({ ctx, input }) => {
      const { environmentId, ...rest } = input;
      return ctx.services.environments.clone(ctx.actor, environmentId, rest);
    }),
});

/** Operations on environments with no detailed path of their own: the general API opens them (general-api.ts). */
export const environmentOperations = {
  services: readProcedure
    .meta({ scope: 'project:read', answerCache: true })
    .input(z.strictObject({ environmentId: idParam }))
    .output(z.object({ services: z.array(serviceView) }))
    .query(async ({ ctx, input }) => ({ services: await ctx.services.environments.listApps(ctx.actor, input.environmentId) })),
};
