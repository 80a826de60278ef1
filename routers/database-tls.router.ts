import { z } from 'zod';
import { tlsView } from '../src/index.js';
import { idParam } from './schemas.js';
import { readProcedure, router } from './trpc.js';

const tags = ['Databases'];

export const databaseTlsRouter = router({
  info: readProcedure
    .meta({
      scope: 'project:read',
      openapi: {
        method: 'GET',
        path: '/api/services/{serviceId}/database/tls',
        tags,
        summary: "A Postgres-compatible database's TLS: whether it is on, and the name and port its certificate is for",
        description: '400 for any other service.',
      },
    })
    .input(z.strictObject({ serviceId: idParam }))
    .output(tlsView)
    .query(async ({ ctx, input }) => ({ tls: await ctx.services.tls.info(ctx.actor, input.serviceId) })),

  ca: readProcedure
    .meta({
      scope: 'project:read',
      download: {
        tags: ['Databases'],
        path: '/api/services/{serviceId}/database/tls/ca',
        summary: "The platform CA's certificate (PEM), for clients' `sslmode=verify-full` (`sslrootcert`)",
        description: 'The same CA for every database of the install; 404 until the first Postgres-compatible deployment made it.',
        contentType: 'application/x-pem-file',
      },
    })
    .input(z.strictObject({ serviceId: idParam }))
    .output(z.object({ filename: z.string(), body: z.string() }))
    .query(async ({ ctx, input }) => ({
      filename: 'slipway-database-ca.pem',
      body: await ctx.services.tls.caCertificate(ctx.actor, input.serviceId),
    })),
});
