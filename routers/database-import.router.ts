import { z } from 'zod';
import { importLogsView, importStartedView, importsView, presentImport, presentImportLog } from '../src/index.js';
import { idParam, line } from './schemas.js';
import { readProcedure, router, writeProcedure } from './trpc.js';

const tags = ['Databases'];

const sourceUrl = (kind: string) =>
  line(4096).meta({ description: `The source's ${kind} connection URL; its password is used for the copy, never stored or shown` });

export const databaseImportRouter = router({
  list: readProcedure
    .meta({
      scope: 'db:manage',
      answerCache: true,
      openapi: {
        method: 'GET',
        path: '/api/services/{serviceId}/database/imports',
        tags,
        summary: 'Data imports into a database service, newest first',
      },
    })
    .input(z.strictObject({ serviceId: idParam }))
    .output(importsView)
    .query(async ({ ctx, input }) => ({ imports: (await ctx.services.imports.list(ctx.actor, input.serviceId)).map(presentImport) })),

  logs: readProcedure
    .meta({
      scope: 'db:manage',
      answerCache: true,
      openapi: {
        method: 'GET',
        path: '/api/services/{serviceId}/database/imports/{importId}/logs',
        tags,
        summary: "An import's log, oldest line first (secrets masked)",
      },
    })
    .input(z.strictObject({ serviceId: idParam, importId: idParam }))
    .output(importLogsView)
    .query(async ({ ctx, input }) => ({
      logs: (await ctx.services.imports.logs(ctx.actor, input.serviceId, input.importId)).map(presentImportLog),
    })),

  postgresUrl: writeProcedure
    .meta({
      scope: 'db:manage',
      created: true,
      openapi: {
        method: 'POST',
        path: '/api/services/{serviceId}/database/import/postgres-url',
        tags,
        summary: 'Import a PostgreSQL database (pg_dump of the URL, restored into this postgres or timescale service)',
        description: 'Answers at once with the import `running`; GET imports shows it end `succeeded` or `failed` with the reason.',
      },
    })
    .input(z.strictObject({ serviceId: idParam, sourceUrl: sourceUrl('PostgreSQL') }))
    .output(importStartedView)
    .mutation(async ({ ctx, input }) => {
      const started = presentImport(await ctx.services.imports.start(ctx.actor, input.serviceId, 'postgres-url', input.sourceUrl));
      return { result: { id: started.id, status: started.status, source: started.source, createdAt: started.createdAt } };
    }),

  redisUrl: writeProcedure
    .meta({
      scope: 'db:manage',
      created: true,
      openapi: {
        method: 'POST',
        path: '/api/services/{serviceId}/database/import/redis-url',
        tags,
        summary: 'Import a Redis database (every key of every logical database, with its TTL) into this redis service',
        description: 'Answers at once with the import `running`; GET imports shows it end `succeeded` or `failed` with the reason.',
      },
    })
    .input(z.strictObject({ serviceId: idParam, sourceUrl: sourceUrl('Redis') }))
    .output(importStartedView)
    .mutation(async ({ ctx, input }) => {
      const started = presentImport(await ctx.services.imports.start(ctx.actor, input.serviceId, 'redis-url', input.sourceUrl));
      return { result: { id: started.id, status: started.status, source: started.source, createdAt: started.createdAt } };
    }),
});
