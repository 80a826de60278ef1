import { z } from 'zod';
import { DNS_PROVIDER_IDS, settingsView } from '../src/index.js';
import { line } from './schemas.js';
import { router, writeProcedure } from './trpc.js';

const tags = ['Settings'];

export const settingsRouter = router({
  get: writeProcedure
    .meta({ openapi: { method: 'GET', path: '/api/settings', tags, summary: 'Platform settings (all-project write keys): public IP, root domain, connected DNS providers' } })
    .input(z.strictObject({}).optional())
    .output(z.object({ settings: settingsView }))
    .query(async ({ ctx }) => ({ settings: await ctx.services.settings.get(ctx.actor) })),

  update: writeProcedure
    .meta({ openapi: { method: 'PUT', path: '/api/settings', tags, summary: 'Change platform settings; provider tokens are write-only' } })
    .input(
      z.strictObject({
        publicIp: line(64).nullish(),
        rootDomain: line(253).nullish(),
        dnsProviders: z
          .array(
            z.strictObject({
              providerId: z.enum(DNS_PROVIDER_IDS),
              apiToken: line(4096).min(1).optional().meta({ description: 'Write-only; omit to keep the stored token' }),
            }),
          )
          .max(10)
          .optional()
          .meta({ description: 'Replaces the connected providers' }),
      }),
    )
    .output(z.object({ settings: settingsView }))
    .mutation(async ({ ctx, input }) => ({ settings: await ctx.services.settings.update(ctx.actor, input) })),
});
