import { z } from 'zod';
import { settingsInput, settingsView } from '../src/index.js';
import { router, writeProcedure } from './trpc.js';

const tags = ['Settings'];

export const settingsRouter = router({
  get: writeProcedure
    .meta({
      scope: 'admin',
      openapi: {
        method: 'GET',
        path: '/api/settings',
        tags,
        summary: 'Platform settings (all-project write keys): public IP, root domain, connected DNS providers',
      },
    })
    .input(z.strictObject({}).optional())
    .output(z.object({ settings: settingsView }))
    .query(async ({ ctx }) => ({ settings: await ctx.services.settings.get(ctx.actor) })),

  update: writeProcedure
    .meta({
      scope: 'admin',
      openapi: { method: 'PUT', path: '/api/settings', tags, summary: 'Change platform settings; provider tokens are write-only' },
    })
    .input(settingsInput)
    .output(z.object({ settings: settingsView }))
    .mutation(async ({ ctx, input }) => ({ settings: await ctx.services.settings.update(ctx.actor, input) })),
});
