import { z } from 'zod';
import { domainView, proxyResultView } from '../src/index.js';
import { idParam, line } from './schemas.js';
import { readProcedure, router, writeProcedure } from './trpc.js';

/** The general API's domains: the same domains as /api/services/{serviceId}/domains, addressed by project or by id. */
const tags = ['Domains'];

export const projectDomainsRouter = router({
  list: readProcedure
    .meta({
      scope: 'project:read',
      openapi: { method: 'GET', path: '/api/projects/{projectId}/domains', tags, summary: 'The domains of every service of a project' },
    })
    .input(z.strictObject({ projectId: idParam }))
    .output(z.object({ domains: z.array(domainView) }))
    .query(async ({ ctx, input }) => ({ domains: await ctx.services.domains.listForProject(ctx.actor, input.projectId) })),

  create: writeProcedure
    .meta({
      scope: 'project:write',
      created: true,
      openapi: {
        method: 'POST',
        path: '/api/projects/{projectId}/domains',
        tags,
        summary: 'Add a hostname to a web service of the project (named in the body) and reload the proxy',
      },
    })
    .input(z.strictObject({ projectId: idParam, serviceId: idParam, hostname: line(253).min(1) }))
    .output(z.object({ ok: z.literal(true), domain: domainView, proxy: proxyResultView }))
    .mutation(async ({ ctx, input }) => ({
      ok: true as const,
      ...(await ctx.services.domains.createInProject(ctx.actor, input.projectId, input.serviceId, input.hostname)),
    })),

  delete: writeProcedure
    .meta({
      scope: 'project:write',
      openapi: { method: 'DELETE', path: '/api/domains/{domainId}', tags, summary: 'Remove a hostname and reload the proxy' },
    })
    .input(z.strictObject({ domainId: idParam }))
    .output(z.object({ ok: z.literal(true), proxy: proxyResultView }))
    .mutation(async ({ ctx, input }) => ({ ok: true as const, proxy: await ctx.services.domains.deleteById(ctx.actor, input.domainId) })),
});
