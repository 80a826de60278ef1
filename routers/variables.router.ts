import { z } from 'zod';
import { envVarView, sharedEnvView } from '../src/index.js';
import { idParam, line, okTrue, strictBoolean, text } from './schemas.js';
import { readProcedure, router, writeProcedure } from './trpc.js';

/** Shared project variables, and the general API's doors to a service's variables (the rules of /api/services/{serviceId}/env). */
const tags = ['Environment variables'];

const envKey = line(255).meta({ description: 'Must match ^[A-Z_][A-Z0-9_]*$' });
const secret = strictBoolean().optional().meta({ description: 'Secret values are never shown again in responses' });

const sharedEntry = z.union([
  text(),
  z.strictObject({
    value: text().optional().meta({ description: 'Left out: the stored value of this key stays (a secret sent back as read)' }),
    secret,
  }),
]);

export const variablesRouter = router({
  shared: readProcedure
    .meta({
      scope: 'env:read',
      openapi: {
        method: 'GET',
        path: '/api/projects/{projectId}/env',
        tags,
        summary: 'Shared project variables: every service sees them unless it defines the same key; ${shared.KEY} references them',
      },
    })
    .input(z.strictObject({ projectId: idParam }))
    .output(z.object({ env: sharedEnvView }))
    .query(async ({ ctx, input }) => ({ env: await ctx.services.env.listShared(ctx.actor, input.projectId) })),

  replaceShared: writeProcedure
    .meta({
      scope: 'env:write',
      openapi: {
        method: 'PUT',
        path: '/api/projects/{projectId}/env',
        tags,
        summary: 'Replace the shared project variables: a map of KEY to a value, or to {value, secret}; keys left out are deleted',
      },
    })
    .input(z.strictObject({ projectId: idParam, env: z.record(envKey, sharedEntry) }))
    .output(z.object({ env: sharedEnvView }))
    .mutation(async ({ ctx, input }) => {
      const entries = Object.fromEntries(
        Object.entries(input.env).map(([key, entry]) => [key, typeof entry === 'string' ? { value: entry } : entry]),
      );
      return { env: await ctx.services.env.replaceShared(ctx.actor, input.projectId, entries) };
    }),

  list: readProcedure
    .meta({
      scope: 'env:read',
      openapi: {
        method: 'GET',
        path: '/api/services/{serviceId}/variables',
        tags,
        summary: "The service's own variables, as the overview lists them (secrets masked, references resolved)",
      },
    })
    .input(z.strictObject({ serviceId: idParam }))
    .output(z.object({ variables: z.array(envVarView) }))
    .query(async ({ ctx, input }) => ({ variables: await ctx.services.env.list(ctx.actor, input.serviceId) })),

  create: writeProcedure
    .meta({
      scope: 'env:write',
      created: true,
      openapi: {
        method: 'POST',
        path: '/api/services/{serviceId}/variables',
        tags,
        summary: 'Add a variable (an existing key gets the new value, as POST /api/services/{serviceId}/env)',
      },
    })
    .input(z.strictObject({ serviceId: idParam, key: envKey, value: text(), secret }))
    .output(z.object({ variable: envVarView }))
    .mutation(async ({ ctx, input }) => ({ variable: await ctx.services.env.setAndView(ctx.actor, input.serviceId, input) })),

  update: writeProcedure
    .meta({
      scope: 'env:write',
      openapi: {
        method: 'PUT',
        path: '/api/services/{serviceId}/variables/{variableId}',
        tags,
        summary: 'Change the value of a variable (and whether it is secret); the key stays',
      },
    })
    .input(z.strictObject({ serviceId: idParam, variableId: idParam, value: text(), secret }))
    .output(z.object({ variable: envVarView }))
    .mutation(async ({ ctx, input }) => ({
      variable: await ctx.services.env.updateById(ctx.actor, input.serviceId, input.variableId, {
        value: input.value,
        secret: input.secret,
      }),
    })),

  delete: writeProcedure
    .meta({
      scope: 'env:write',
      openapi: { method: 'DELETE', path: '/api/services/{serviceId}/variables/{variableId}', tags, summary: 'Delete a variable' },
    })
    .input(z.strictObject({ serviceId: idParam, variableId: idParam }))
    .output(okTrue)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.env.delete(ctx.actor, input.serviceId, input.variableId);
      return { ok: true as const };
    }),
});
