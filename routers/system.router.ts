import { z } from 'zod';
import { licenseView, publicSystemView } from '../src/index.js';
import { line } from './schemas.js';
import { publicProcedure, router, writeProcedure } from './trpc.js';

const tags = ['Settings'];

export const systemRouter = router({
  public: publicProcedure
    .meta({
      scope: 'public',
      openapi: {
        method: 'GET',
        path: '/api/system/public',
        tags,
        summary: 'Public facts about this installation, without a key: version, registration, enabled features, license state',
        protect: false,
      },
    })
    .input(z.strictObject({}).optional())
    .output(publicSystemView)
    .query(({ ctx }) => ctx.services.system.publicInfo()),

  activateLicense: writeProcedure
    .meta({
      scope: 'admin',
      openapi: {
        method: 'POST',
        path: '/api/settings/license',
        tags,
        summary: 'Activate a license key (all-project write keys): verified offline; 400 for a bad signature or an expired key',
      },
    })
    .input(z.strictObject({ key: line(8192).min(1) }))
    .output(z.object({ license: licenseView }))
    .mutation(async ({ ctx, input }) => ({ license: await ctx.services.settings.activateLicense(ctx.actor, input.key) })),
});
