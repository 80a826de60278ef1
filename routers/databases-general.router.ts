import { z } from 'zod';
import { createServiceInput, DATABASE_ENGINES, proxyResultView, queryResultView, serviceView } from '../src/index.js';
import { idParam, text } from './schemas.js';
import { readProcedure, router, writeProcedure } from './trpc.js';

/** The general API's databases: database services across the projects the key sees, over the service and database use cases. */
const tags = ['Databases'];

const createInput = z.strictObject({
  projectId: idParam,
  engine: z.enum(DATABASE_ENGINES),
  ...createServiceInput.pick({
    name: true,
    internalPort: true,
    env: true,
    databasePublicEnabled: true,
    databasePublicHostname: true,
    postgresLogicalReplicationEnabled: true,
  }).shape,
});
const databaseAnswer = z.object({ database: serviceView });

export const databaseServicesRouter = router({
  list: readProcedure
    .meta({
      scope: 'project:read',
      openapi: { method: 'GET', path: '/api/databases', tags, summary: 'Database services of every project visible to the key' },
    })
    .input(z.strictObject({}).optional())
    .output(z.object({ databases: z.array(serviceView) }))
    .query(async ({ ctx }) => ({ databases: await ctx.services.databaseCatalog.list(ctx.actor) })),

  create: writeProcedure
    .meta({
      scope: 'db:manage',
      created: true,
      openapi: {
        method: 'POST',
        path: '/api/databases',
        tags,
        summary: 'Create a database service in the project named in the body (as a database:<engine> service); deploy it to run it',
      },
    })
    .input(createInput)
    .output(databaseAnswer)
    .mutation(async ({ ctx, input }) => {
      const { projectId, ...rest } = input;
      return { database: await ctx.services.databaseCatalog.create(ctx.actor, projectId, rest) };
    }),

  get: readProcedure
    .meta({ scope: 'project:read', openapi: { method: 'GET', path: '/api/databases/{databaseId}', tags, summary: 'A database service' } })
    .input(z.strictObject({ databaseId: idParam }))
    .output(databaseAnswer)
    .query(async ({ ctx, input }) => ({ database: await ctx.services.databaseCatalog.get(ctx.actor, input.databaseId) })),

  delete: writeProcedure
    .meta({
      scope: 'db:manage',
      openapi: {
        method: 'DELETE',
        path: '/api/databases/{databaseId}',
        tags,
        summary: 'Delete a database service with its container, volume and variables',
      },
    })
    .input(z.strictObject({ databaseId: idParam }))
    .output(z.object({ ok: z.literal(true), proxy: proxyResultView }))
    .mutation(async ({ ctx, input }) => ({
      ok: true as const,
      proxy: await ctx.services.databaseCatalog.delete(ctx.actor, input.databaseId),
    })),

  start: writeProcedure
    .meta({
      scope: 'db:manage',
      openapi: {
        method: 'POST',
        path: '/api/databases/{databaseId}/start',
        tags,
        summary: 'Start a stopped database again with its data (a database that is not stopped is left as it is)',
      },
    })
    .input(z.strictObject({ databaseId: idParam }))
    .output(databaseAnswer)
    .mutation(async ({ ctx, input }) => ({ database: await ctx.services.databaseCatalog.start(ctx.actor, input.databaseId) })),

  stop: writeProcedure
    .meta({
      scope: 'db:manage',
      openapi: {
        method: 'POST',
        path: '/api/databases/{databaseId}/stop',
        tags,
        summary: 'Stop the database container and keep its volume (status `stopped`; 409 not_running when it does not run)',
      },
    })
    .input(z.strictObject({ databaseId: idParam }))
    .output(databaseAnswer)
    .mutation(async ({ ctx, input }) => ({ database: await ctx.services.databaseCatalog.stop(ctx.actor, input.databaseId) })),

  query: writeProcedure
    .meta({
      scope: 'db:manage',
      openapi: {
        method: 'POST',
        path: '/api/databases/{databaseId}/query',
        tags,
        summary: 'Run one statement, as POST /api/services/{serviceId}/database/query',
      },
    })
    .input(
      z.strictObject({
        databaseId: idParam,
        sql: text(1_000_000).meta({ description: 'One statement; a statement timeout and a row cap apply' }),
      }),
    )
    .output(queryResultView)
    .mutation(({ ctx, input, signal }) => ctx.services.databases.query(ctx.actor, input.databaseId, input.sql, signal)),
});
