import { z } from 'zod';
import { dnsRecordResultView, domainView, proxyResultView } from '../src/index.js';
import { idParam, line } from './schemas.js';
import { readProcedure, router, writeProcedure } from './trpc.js';

const tags = ['Domains'];
const hostname = line(253).min(1);
const proxyAnswer = z.object({ ok: z.literal(true), proxy: proxyResultView });

export const domainRouter = router({
  create: writeProcedure
    .meta({
      scope: 'project:write',
      created: true,
      openapi: {
        method: 'POST',
        path: '/api/services/{serviceId}/domains',
        tags,
        summary: 'Add a hostname to a web service and reload the proxy',
      },
    })
    .input(z.strictObject({ serviceId: idParam, hostname }))
    .output(proxyAnswer.extend({ domain: domainView }))
    .mutation(async ({ ctx, input }) => {
      return { ok: true as const, ...(await ctx.services.domains.create(ctx.actor, input.serviceId, input.hostname)) };
    }),

  update: writeProcedure
    .meta({
      scope: 'project:write',
      openapi: {
        method: 'PATCH',
        path: '/api/services/{serviceId}/domains/{domainId}',
        tags,
        summary: 'Change a hostname and reload the proxy',
      },
    })
    .input(z.strictObject({ serviceId: idParam, domainId: idParam, hostname }))
    .output(proxyAnswer)
    .mutation(async ({ ctx, input }) => ({
      ok: true as const,
      proxy: await ctx.services.domains.update(ctx.actor, input.serviceId, input.domainId, input.hostname),
    })),

  dnsRecords: writeProcedure
    .meta({
      scope: 'project:write',
      upstream: 'the DNS provider',
      openapi: {
        method: 'POST',
        path: '/api/services/{serviceId}/domains/{domainId}/dns-records',
        tags,
        summary: 'Create (or update, or leave) an A record for the hostname at a connected DNS provider',
      },
    })
    .input(z.strictObject({ serviceId: idParam, domainId: idParam, providerId: line(32).min(1) }))
    .output(z.object({ ok: z.literal(true), result: dnsRecordResultView, domain: domainView }))
    .mutation(async ({ ctx, input }) => ({
      ok: true as const,
      ...(await ctx.services.dns.createRecord(ctx.actor, input.serviceId, input.domainId, input.providerId)),
    })),

  delete: writeProcedure
    .meta({
      scope: 'project:write',
      openapi: {
        method: 'DELETE',
        path: '/api/services/{serviceId}/domains/{domainId}',
        tags,
        summary: 'Remove a hostname and reload the proxy',
      },
    })
    .input(z.strictObject({ serviceId: idParam, domainId: idParam }))
    .output(proxyAnswer)
    .mutation(async ({ ctx, input }) => ({
      ok: true as const,
      proxy: await ctx.services.domains.delete(ctx.actor, input.serviceId, input.domainId),
    })),
});

/** Operations on domains with no detailed path of their own: a project's, and one by its id. The general API opens them (general-api.ts). */
export const domainOperations = {
  listForProject: readProcedure
    .meta({ scope: 'project:read', answerCache: true })
    .input(z.strictObject({ projectId: idParam }))
    .output(z.object({ domains: z.array(domainView) }))
    .query(async ({ ctx, input }) => ({ domains: await ctx.services.domains.listForProject(ctx.actor, input.projectId) })),

  createInProject: writeProcedure
    .meta({ scope: 'project:write', created: true })
    .input(z.strictObject({ projectId: idParam, serviceId: idParam, hostname }))
    .output(z.object({ ok: z.literal(true), domain: domainView, proxy: proxyResultView }))
    .mutation(async ({ ctx, input }) => ({
      ok: true as const,
      ...(await ctx.services.domains.createInProject(ctx.actor, input.projectId, input.serviceId, input.hostname)),
    })),

  deleteById: writeProcedure
    .meta({ scope: 'project:write' })
    .input(z.strictObject({ domainId: idParam }))
    .output(proxyAnswer)
    .mutation(async ({ ctx, input }) => ({ ok: true as const, proxy: await ctx.services.domains.deleteById(ctx.actor, input.domainId) })),
};
