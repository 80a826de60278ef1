import { z } from 'zod';
import {
  projectInput,
  projectPage,
  projectPageInput,
  projectPatchInput,
  projectView,
  proxyResultView,
  suggestionView,
} from '../src/index.js';
import { idParam, line, trustedOutput } from './schemas.js';
import { readProcedure, router, writeProcedure } from './trpc.js';

const tags = ['Projects'];

export const projectRouter = router({
  list: readProcedure
    .meta({
      scope: 'project:read',
      answerCache: true,
      openapi: {
        method: 'GET',
        path: '/api/projects',
        tags,
        summary: 'List the projects visible to the key, with their services, a page at a time (oldest first; follow nextCursor)',
      },
    })
    .input(projectPageInput.optional())
    .output(trustedOutput('ProjectList', projectPage))
    .query(async ({ ctx, input }) => ctx.services.projects.page(ctx.actor, input)),

  create: writeProcedure
    .meta({
      scope: 'project:write',
      created: true,
      openapi: { method: 'POST', path: '/api/projects', tags, summary: 'Create a project (all-project keys only)' },
    })
    .input(projectInput)
    .output(z.object({ project: projectView }))
    .mutation(async ({ ctx, input }) => ({ project: await ctx.services.projects.create(ctx.actor, input) })),

  bySlug: readProcedure
    .meta({
      scope: 'project:read',
      answerCache: true,
      openapi: { method: 'GET', path: '/api/projects/{projectSlug}', tags, summary: 'A project by its slug or its id' },
    })
    .input(
      z.strictObject({ projectSlug: line(64).min(1).meta({ description: "The slug, or the id (the general API's /api/projects/:id)" }) }),
    )
    .output(z.object({ project: projectView }))
    .query(async ({ ctx, input }) => ({ project: await ctx.services.projects.getBySlug(ctx.actor, input.projectSlug) })),

  update: writeProcedure
    .meta({
      scope: 'project:write',
      openapi: { method: 'PATCH', path: '/api/projects/{projectId}', tags, summary: 'Rename a project or change its description' },
    })
    .input(z.strictObject({ projectId: idParam, ...projectPatchInput.shape }))
    .output(z.object({ project: projectView }))
    .mutation(async ({ ctx, input }) => {
      const { projectId, ...patch } = input;
      return { project: await ctx.services.projects.update(ctx.actor, projectId, patch) };
    }),

  delete: writeProcedure
    .meta({
      scope: 'project:write',
      openapi: {
        method: 'DELETE',
        path: '/api/projects/{projectId}',
        tags,
        summary: 'Delete a project with its services, domains, variables, deployments and logs',
      },
    })
    .input(z.strictObject({ projectId: idParam }))
    .output(z.object({ ok: z.literal(true), proxy: proxyResultView }))
    .mutation(async ({ ctx, input }) => ({ ok: true as const, proxy: await ctx.services.projects.delete(ctx.actor, input.projectId) })),

  databaseVariableSuggestions: readProcedure
    .meta({
      scope: 'project:read',
      answerCache: true,
      openapi: {
        method: 'GET',
        path: '/api/projects/{projectId}/database-variable-suggestions',
        tags,
        summary: 'Connection-URL variables for the database services of a project, written as ${slug.KEY} references',
      },
    })
    .input(z.strictObject({ projectId: idParam }))
    .output(z.object({ suggestions: z.array(suggestionView) }))
    .query(async ({ ctx, input }) => ({
      suggestions: await ctx.services.suggestions.forProject(ctx.actor, input.projectId),
    })),
});
