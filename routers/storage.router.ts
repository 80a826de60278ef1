import { z } from 'zod';
import { proxyResultView, storageCreatedView, storageCreateInput, storageView } from '../src/index.js';
import { idParam } from './schemas.js';
import { readProcedure, router, writeProcedure } from './trpc.js';

/** The general API's storage instances: S3-compatible object stores run as services, across the projects the key sees. */
const tags = ['Storage'];
const storageAnswer = z.object({ storage: storageView });
const byId = z.strictObject({ storageId: idParam });

export const storageRouter = router({
  list: readProcedure
    .meta({
      scope: 'project:read',
      answerCache: true,
      openapi: { method: 'GET', path: '/api/storage', tags, summary: 'Storage instances of every project visible to the key' },
    })
    .input(z.strictObject({}).optional())
    .output(z.object({ storage: z.array(storageView) }))
    .query(async ({ ctx }) => ({ storage: await ctx.services.storage.list(ctx.actor) })),

  create: writeProcedure
    .meta({
      scope: 'db:manage',
      created: true,
      openapi: {
        method: 'POST',
        path: '/api/storage',
        tags,
        summary: 'Create a storage instance in the project named in the body; the answer shows its secret, once. Deploy it to run it',
      },
    })
    .input(storageCreateInput.extend({ projectId: idParam }))
    .output(storageCreatedView)
    .mutation(({ ctx, input }) => {
      const { projectId, ...rest } = input;
      return ctx.services.storage.create(ctx.actor, projectId, rest);
    }),

  get: readProcedure
    .meta({
      scope: 'project:read',
      answerCache: true,
      openapi: { method: 'GET', path: '/api/storage/{storageId}', tags, summary: 'A storage instance' },
    })
    .input(byId)
    .output(storageAnswer)
    .query(async ({ ctx, input }) => ({ storage: await ctx.services.storage.get(ctx.actor, input.storageId) })),

  delete: writeProcedure
    .meta({
      scope: 'db:manage',
      openapi: {
        method: 'DELETE',
        path: '/api/storage/{storageId}',
        tags,
        summary: 'Delete a storage instance with its container and volume (every object in it); 409 while a database keeps backups in it',
      },
    })
    .input(byId)
    .output(z.object({ ok: z.literal(true), proxy: proxyResultView }))
    .mutation(async ({ ctx, input }) => ({ ok: true as const, proxy: await ctx.services.storage.delete(ctx.actor, input.storageId) })),

  start: writeProcedure
    .meta({
      scope: 'db:manage',
      openapi: {
        method: 'POST',
        path: '/api/storage/{storageId}/start',
        tags,
        summary: 'Start a stopped storage instance again with its objects (one that is not stopped is left as it is)',
      },
    })
    .input(byId)
    .output(storageAnswer)
    .mutation(async ({ ctx, input }) => ({ storage: await ctx.services.storage.start(ctx.actor, input.storageId) })),

  stop: writeProcedure
    .meta({
      scope: 'db:manage',
      openapi: {
        method: 'POST',
        path: '/api/storage/{storageId}/stop',
        tags,
        summary: 'Stop the storage container and keep its volume (status `stopped`; 409 not_running when it does not run)',
      },
    })
    .input(byId)
    .output(storageAnswer)
    .mutation(async ({ ctx, input }) => ({ storage: await ctx.services.storage.stop(ctx.actor, input.storageId) })),
});
