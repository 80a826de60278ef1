import { z } from 'zod';
import {
  createServiceInput,
  DATABASE_ENGINES,
  insertedRowView,
  proxyResultView,
  queryResultView,
  ROWS_PAGE_LIMIT,
  rowsView,
  serviceView,
  tablesView,
} from '../src/index.js';
import { idParam, line, okTrue, queryInt, text } from './schemas.js';
import { readProcedure, router, writeProcedure } from './trpc.js';

const tags = ['Databases'];

const tableId = line(1024).min(3).meta({ description: '`<schema>.<name>`, as the tables endpoint lists it' });
/** Cells in, by column name: JSON values; the engine converts them (bound, never spliced). */
const cells = z.record(line(1024), z.unknown());

export const databaseRouter = router({
  tables: readProcedure
    .meta({
      scope: 'db:manage',
      openapi: {
        method: 'GET',
        path: '/api/services/{serviceId}/database/tables',
        tags,
        summary: 'Tables of a database service (Redis: keys of one logical database; MongoDB: collections)',
      },
    })
    .input(
      z.strictObject({
        serviceId: idParam,
        database: queryInt(0, 255).optional().meta({ description: 'Redis only: the logical database number (default 0)' }),
      }),
    )
    .output(tablesView)
    .query(({ ctx, input, signal }) => ctx.services.databases.tables(ctx.actor, input.serviceId, { database: input.database }, signal)),

  rows: readProcedure
    .meta({
      scope: 'db:manage',
      openapi: {
        method: 'GET',
        path: '/api/services/{serviceId}/database/rows',
        tags,
        summary: 'A page of rows of one table, with its columns and total',
      },
    })
    .input(
      z.strictObject({
        serviceId: idParam,
        table: tableId,
        limit: queryInt(1, ROWS_PAGE_LIMIT.max)
          .default(ROWS_PAGE_LIMIT.default)
          .meta({ description: `1..${ROWS_PAGE_LIMIT.max}, default ${ROWS_PAGE_LIMIT.default}` }),
        offset: queryInt(0, Number.MAX_SAFE_INTEGER).default(0).meta({ description: '>= 0, default 0' }),
      }),
    )
    .output(rowsView)
    .query(({ ctx, input, signal }) => ctx.services.databases.rows(ctx.actor, input.serviceId, input, signal)),

  query: writeProcedure
    .meta({
      scope: 'db:manage',
      openapi: {
        method: 'POST',
        path: '/api/services/{serviceId}/database/query',
        tags,
        summary: 'Run one statement (SQL), one command line (Redis) or one JSON command document (MongoDB)',
      },
    })
    .input(
      z.strictObject({
        serviceId: idParam,
        sql: text(1_000_000).meta({ description: 'One statement; a statement timeout and a row cap apply' }),
      }),
    )
    .output(queryResultView)
    .mutation(({ ctx, input, signal }) => ctx.services.databases.query(ctx.actor, input.serviceId, input.sql, signal)),

  insertRow: writeProcedure
    .meta({
      scope: 'db:manage',
      openapi: {
        method: 'POST',
        path: '/api/services/{serviceId}/database/rows',
        tags,
        summary: 'Insert a row; the answer carries its primary key as `id`',
      },
    })
    .input(z.strictObject({ serviceId: idParam, table: tableId, values: cells }))
    .output(insertedRowView)
    .mutation(({ ctx, input, signal }) =>
      ctx.services.databases.insertRow(ctx.actor, input.serviceId, { table: input.table, values: input.values as never }, signal),
    ),

  updateRow: writeProcedure
    .meta({
      scope: 'db:manage',
      openapi: {
        method: 'PATCH',
        path: '/api/services/{serviceId}/database/rows',
        tags,
        summary: 'Change a row named by its primary key (400 for a table without one)',
      },
    })
    .input(z.strictObject({ serviceId: idParam, table: tableId, primaryKey: cells, values: cells }))
    .output(okTrue)
    .mutation(async ({ ctx, input, signal }) => {
      await ctx.services.databases.updateRow(
        ctx.actor,
        input.serviceId,
        { table: input.table, primaryKey: input.primaryKey as never, values: input.values as never },
        signal,
      );
      return { ok: true as const };
    }),

  deleteRow: writeProcedure
    .meta({
      scope: 'db:manage',
      openapi: {
        method: 'DELETE',
        path: '/api/services/{serviceId}/database/rows',
        tags,
        summary: 'Delete a row named by its primary key (400 for a table without one); the body is JSON',
      },
    })
    // A pipe, so trpc-to-openapi accepts the object where a DELETE's input is read from (rest.ts adds the body there).
    .input(z.strictObject({ serviceId: idParam, table: tableId, primaryKey: cells.transform((key) => key) }))
    .output(okTrue)
    .mutation(async ({ ctx, input, signal }) => {
      await ctx.services.databases.deleteRow(
        ctx.actor,
        input.serviceId,
        { table: input.table, primaryKey: input.primaryKey as never },
        signal,
      );
      return { ok: true as const };
    }),
});

const catalogCreateInput = z.strictObject({
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

/**
 * The database services themselves, across the projects a key sees (DatabaseCatalog): operations with
 * no detailed path of their own; the general API opens them (general-api.ts).
 */
export const databaseCatalogOperations = {
  list: readProcedure
    .meta({ scope: 'project:read', answerCache: true })
    .input(z.strictObject({}).optional())
    .output(z.object({ databases: z.array(serviceView) }))
    .query(async ({ ctx }) => ({ databases: await ctx.services.databaseCatalog.list(ctx.actor) })),

  create: writeProcedure
    .meta({ scope: 'db:manage', created: true })
    .input(catalogCreateInput)
    .output(databaseAnswer)
    .mutation(async ({ ctx, input }) => {
      const { projectId, ...rest } = input;
      return { database: await ctx.services.databaseCatalog.create(ctx.actor, projectId, rest) };
    }),

  get: readProcedure
    .meta({ scope: 'project:read', answerCache: true })
    .input(z.strictObject({ databaseId: idParam }))
    .output(databaseAnswer)
    .query(async ({ ctx, input }) => ({ database: await ctx.services.databaseCatalog.get(ctx.actor, input.databaseId) })),

  delete: writeProcedure
    .meta({ scope: 'db:manage' })
    .input(z.strictObject({ databaseId: idParam }))
    .output(z.object({ ok: z.literal(true), proxy: proxyResultView }))
    .mutation(async ({ ctx, input }) => ({
      ok: true as const,
      proxy: await ctx.services.databaseCatalog.delete(ctx.actor, input.databaseId),
    })),

  start: writeProcedure
    .meta({ scope: 'db:manage' })
    .input(z.strictObject({ databaseId: idParam }))
    .output(databaseAnswer)
    .mutation(async ({ ctx, input }) => ({ database: await ctx.services.databaseCatalog.start(ctx.actor, input.databaseId) })),

  stop: writeProcedure
    .meta({ scope: 'db:manage' })
    .input(z.strictObject({ databaseId: idParam }))
    .output(databaseAnswer)
    .mutation(async ({ ctx, input }) => ({ database: await ctx.services.databaseCatalog.stop(ctx.actor, input.databaseId) })),
};
