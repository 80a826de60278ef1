import { z } from 'zod';
import { idParam, line, okTrue, strictBoolean, text } from './schemas.js';
import { router, writeProcedure } from './trpc.js';

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
