import { z } from 'zod';
import { envVarView, sharedEnvView } from '../src/index.js';
import { idParam, line, okTrue, strictBoolean, text } from './schemas.js';
import { readProcedure, router, writeProcedure } from './trpc.js';

const tags = ['Environment variables'];

export const envRouter = router({
  set: writeProcedure
    .meta({
      scope: 'env:write',
      openapi: {
        method: 'POST',
        path: '/api/services/{serviceId}/env',
        tags,
        summary: 'Create a variable or update its value; ${service_slug.KEY} references resolve at deploy time',
      },
    })
    .input(
      z.strictObject({
        serviceId: idParam,
        key: line(255).meta({ description: 'Must match ^[A-Z_][A-Z0-9_]*$' }),
        value: text(),
        secret: strictBoolean().optional().meta({ description: 'Secret values are never shown again in responses' }),
      }),
    )
    .output(okTrue)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.env.set(ctx.actor, input.serviceId, input);
      return { ok: true as const };
    }),

  delete: writeProcedure
    .meta({
      scope: 'env:write',
      openapi: { method: 'DELETE', path: '/api/services/{serviceId}/env/{envId}', tags, summary: 'Delete a variable' },
    })
    .input(z.strictObject({ serviceId: idParam, envId: idParam }))
    .output(okTrue)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.env.delete(ctx.actor, input.serviceId, input.envId);
      return { ok: true as const };
    }),

  reveal: writeProcedure
    .meta({
      scope: 'env:read',
      openapi: {
        method: 'POST',
        path: '/api/services/{serviceId}/env/{envId}/reveal',
        tags,
        summary: 'Read one variable in clear, secrets included (write keys only)',
      },
    })
    .input(z.strictObject({ serviceId: idParam, envId: idParam }))
    .output(z.object({ key: z.string(), value: z.string(), resolvedValue: z.string() }))
    .mutation(async ({ ctx, input }) => ctx.services.env.reveal(ctx.actor, input.serviceId, input.envId)),
});

const envKey = line(255).meta({ description: 'Must match ^[A-Z_][A-Z0-9_]*$' });
const secret = strictBoolean().optional().meta({ description: 'Secret values are never shown again in responses' });

const sharedEntry = z.union([
  text(),
  z.strictObject({
    value: text().optional().meta({ description: 'Left out: the stored value of this key stays (a secret sent back as read)' }),
    secret,
  }),
]);

/**
 * Operations on variables with no detailed path of their own: a project's shared variables, and a
 * service's variables by id. The general API opens them (general-api.ts).
 */
export const envOperations = {
  shared: readProcedure
    .meta({ scope: 'env:read', answerCache: true })
    .input(z.strictObject({ projectId: idParam }))
    .output(z.object({ env: sharedEnvView }))
    .query(async ({ ctx, input }) => ({ env: await ctx.services.env.listShared(ctx.actor, input.projectId) })),

  replaceShared: writeProcedure
    .meta({ scope: 'env:write' })
    .input(z.strictObject({ projectId: idParam, env: z.record(envKey, sharedEntry) }))
    .output(z.object({ env: sharedEnvView }))
    .mutation(async ({ ctx, input }) => {
      const entries = Object.fromEntries(
        Object.entries(input.env).map(([key, entry]) => [key, typeof entry === 'string' ? { value: entry } : entry]),
      );
      return { env: await ctx.services.env.replaceShared(ctx.actor, input.projectId, entries) };
    }),

  list: readProcedure
    .meta({ scope: 'env:read', answerCache: true })
    .input(z.strictObject({ serviceId: idParam }))
    .output(z.object({ variables: z.array(envVarView) }))
    .query(async ({ ctx, input }) => ({ variables: await ctx.services.env.list(ctx.actor, input.serviceId) })),

  /** As `set`, answering the variable. */
  create: writeProcedure
    .meta({ scope: 'env:write', created: true })
    .input(z.strictObject({ serviceId: idParam, key: envKey, value: text(), secret }))
    .output(z.object({ variable: envVarView }))
    .mutation(async ({ ctx, input }) => ({ variable: await ctx.services.env.setAndView(ctx.actor, input.serviceId, input) })),

  update: writeProcedure
    .meta({ scope: 'env:write' })
    .input(z.strictObject({ serviceId: idParam, variableId: idParam, value: text(), secret }))
    .output(z.object({ variable: envVarView }))
    .mutation(async ({ ctx, input }) => ({
      variable: await ctx.services.env.updateById(ctx.actor, input.serviceId, input.variableId, {
        value: input.value,
        secret: input.secret,
      }),
    })),
};
