import { z } from 'zod';
import { ACCESS_LEVELS, apiKeyView } from '../src/index.js';
import { idParam, line, okTrue } from './schemas.js';
import { router, writeProcedure } from './trpc.js';

const tags = ['API keys'];

export const apiKeyRouter = router({
  create: writeProcedure
    .meta({
      scope: 'admin',
      created: true,
      openapi: { method: 'POST', path: '/api/api-keys', tags, summary: 'Create an API key; the token is shown once, in this response' },
    })
    .input(
      z.strictObject({
        name: line(100).min(1),
        access: z.enum(ACCESS_LEVELS),
        projectIds: z.array(idParam).max(1000).nullish().meta({ description: 'Projects the key may see; omitted or null: all projects' }),
      }),
    )
    .output(z.object({ apiKey: apiKeyView, token: z.string() }))
    .mutation(async ({ ctx, input }) => ctx.services.apiKeys.create(ctx.actor, input)),

  list: writeProcedure
    .meta({
      scope: 'admin',
      answerCache: true,
      openapi: { method: 'GET', path: '/api/api-keys', tags, summary: 'API keys (never their tokens)' },
    })
    .input(z.strictObject({}).optional())
    .output(z.object({ apiKeys: z.array(apiKeyView) }))
    .query(async ({ ctx }) => ({ apiKeys: await ctx.services.apiKeys.list(ctx.actor) })),

  delete: writeProcedure
    .meta({ scope: 'admin', openapi: { method: 'DELETE', path: '/api/api-keys/{id}', tags, summary: 'Revoke an API key' } })
    .input(z.strictObject({ id: idParam }))
    .output(okTrue)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.apiKeys.delete(ctx.actor, input.id);
      return { ok: true as const };
    }),
});
