import { z } from 'zod';
import { auditEntryView, auditQuery } from '../src/index.js';
import { idParam } from './schemas.js';
import { router, writeProcedure } from './trpc.js';

const tags = ['Audit log'];
const page = z.object({ entries: z.array(auditEntryView), nextCursor: z.string().nullable() });

/** The audit log, read only: no procedure changes or deletes a record (docs/events.md, Audit log). */
export const auditRouter = router({
  list: writeProcedure
    .meta({
      scope: 'admin',
      answerCache: true,
      openapi: {
        method: 'GET',
        path: '/api/audit',
        tags,
        summary: 'The audit log, newest first: filter by project, actor, operation and time; `nextCursor` pages on',
        description: 'The install’s owners and admins (and write keys for all projects).',
      },
    })
    .input(auditQuery.optional())
    .output(page)
    .query(({ ctx, input }) => ctx.services.audit.list(ctx.actor, input ?? {})),

  project: writeProcedure
    .meta({
      scope: 'project:write',
      answerCache: true,
      openapi: {
        method: 'GET',
        path: '/api/projects/{projectId}/audit',
        tags,
        summary: 'A project’s audit log, newest first; for the project’s writers',
      },
    })
    .input(auditQuery.omit({ projectId: true }).extend({ projectId: idParam }))
    .output(page)
    .query(({ ctx, input: { projectId, ...query } }) => ctx.services.audit.listForProject(ctx.actor, projectId, query)),
});
