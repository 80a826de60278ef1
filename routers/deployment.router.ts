import { tracked } from '@trpc/server';
import { z } from 'zod';
import { deploymentLogView, deploymentView, LOG_PAGE_MAX } from '../src/index.js';
import { idParam, queryInt, strictInt, trustedOutput } from './schemas.js';
import { readProcedure, router, writeProcedure } from './trpc.js';

const tags = ['Deployments'];

/** tRPC sends `lastEventId` back on reconnect; ids of log lines are integers. */
const lastEventId = z.string().regex(/^\d+$/).nullish();

export const deploymentRouter = router({
  create: writeProcedure
    .meta({
      scope: 'deploy:write',
      created: true,
      openapi: { method: 'POST', path: '/api/services/{serviceId}/deployments', tags, summary: 'Queue a deployment of the service' },
    })
    .input(z.strictObject({ serviceId: idParam }))
    .output(z.object({ deployment: deploymentView }))
    .mutation(async ({ ctx, input }) => ({ deployment: await ctx.services.deployments.create(ctx.actor, input.serviceId) })),

  list: readProcedure
    .meta({
      scope: 'project:read',
      answerCache: true,
      openapi: { method: 'GET', path: '/api/services/{serviceId}/deployments', tags, summary: 'Deployments of a service, newest first' },
    })
    .input(z.strictObject({ serviceId: idParam }))
    .output(trustedOutput('DeploymentList', z.object({ deployments: z.array(deploymentView) })))
    .query(async ({ ctx, input }) => ({ deployments: await ctx.services.deployments.list(ctx.actor, input.serviceId) })),

  get: readProcedure
    .meta({
      scope: 'project:read',
      answerCache: true,
      openapi: { method: 'GET', path: '/api/deployments/{deploymentId}', tags, summary: 'One deployment' },
    })
    .input(z.strictObject({ deploymentId: idParam }))
    .output(z.object({ deployment: deploymentView }))
    .query(async ({ ctx, input }) => ({ deployment: await ctx.services.deployments.get(ctx.actor, input.deploymentId) })),

  abort: writeProcedure
    .meta({
      scope: 'deploy:write',
      openapi: {
        method: 'POST',
        path: '/api/deployments/{deploymentId}/abort',
        tags,
        summary: 'Abort a queued or running deployment (409 once finished)',
      },
    })
    .input(z.strictObject({ deploymentId: idParam }))
    .output(z.object({ accepted: z.literal(true) }))
    .mutation(async ({ ctx, input }) => {
      await ctx.services.deployments.abort(ctx.actor, input.deploymentId);
      return { accepted: true as const };
    }),

  rollback: writeProcedure
    .meta({
      scope: 'deploy:write',
      created: true,
      openapi: {
        method: 'POST',
        path: '/api/deployments/{deploymentId}/rollback',
        tags,
        summary: 'Run the image of a deployment that went live again (409 if it never did, 409 image_gone once collected)',
      },
    })
    .input(z.strictObject({ deploymentId: idParam }))
    .output(z.object({ deployment: deploymentView }))
    .mutation(async ({ ctx, input }) => ({ deployment: await ctx.services.deployments.rollback(ctx.actor, input.deploymentId) })),

  logs: readProcedure
    .meta({
      scope: 'logs:read',
      answerCache: true,
      openapi: {
        method: 'GET',
        path: '/api/deployments/{deploymentId}/logs',
        tags,
        summary: 'Every log line of a deployment so far, or a page of them',
        description: `Without a query string, every line. \`afterId\` (the id of the last line already read) and \`limit\` (1..${LOG_PAGE_MAX}) read the log in pages, oldest first: a page shorter than \`limit\` is the end so far.`,
      },
    })
    .input(
      z.strictObject({
        deploymentId: idParam,
        afterId: queryInt(0, Number.MAX_SAFE_INTEGER).optional().meta({ description: 'lines with a greater id only; default 0' }),
        limit: queryInt(1, LOG_PAGE_MAX)
          .optional()
          .meta({ description: `1..${LOG_PAGE_MAX}; default every line` }),
      }),
    )
    .output(z.object({ logs: z.array(deploymentLogView) }))
    .query(async ({ ctx, input }) => ({
      logs: await ctx.services.deployments.logs(ctx.actor, input.deploymentId, { afterId: input.afterId, limit: input.limit }),
    })),

  stream: readProcedure
    .meta({
      scope: 'logs:read',
      sse: {
        path: '/api/deployments/{deploymentId}/stream',
        summary: 'Stream a deployment log',
        description:
          'Events: `snapshot` (array of DeploymentLogLine, first), `log` (one DeploymentLogLine, with `id:`), `ping` `{t}` every 15 s. Ends once the deployment has finished. Resume with Last-Event-ID.',
      },
    })
    .input(z.strictObject({ deploymentId: idParam, lastEventId }))
    .subscription(async ({ ctx, input, signal }) => {
      const events = await ctx.services.deployments.stream(ctx.actor, input.deploymentId, {
        lastEventId: input.lastEventId ? Number(input.lastEventId) : undefined,
        signal: signal ?? new AbortController().signal,
      });
      // Log lines carry their id, and the snapshot the id it ends at: a client resumes after either.
      return (async function* () {
        for await (const event of events) {
          if (event.type === 'snapshot') yield tracked(String(event.lastId), { type: event.type, lines: event.lines });
          else if (event.type === 'log') yield tracked(String(event.line.id), event);
          else yield event;
        }
      })();
    }),

  runtimeLogs: readProcedure
    .meta({
      scope: 'logs:read',
      sse: {
        path: '/api/services/{serviceId}/runtime-logs/stream',
        summary: 'Stream the running container log of a service',
        description:
          'Events: `snapshot` (array of RuntimeLogLine; the last 200 lines by default, `?tail=N`), `log` (one RuntimeLogLine), `status` `{ok, closed}`; closed true ends the stream.',
        query: ['tail'],
      },
    })
    .input(z.strictObject({ serviceId: idParam, lastEventId, tail: strictInt(0, 10_000).optional() }))
    .subscription(async ({ ctx, input, signal }) => {
      const events = await ctx.services.runtimeLogs.stream(ctx.actor, input.serviceId, {
        lastEventId: input.lastEventId ? Number(input.lastEventId) : undefined,
        tail: input.tail,
        signal: signal ?? new AbortController().signal,
      });
      return (async function* () {
        for await (const event of events) {
          if (event.type === 'log') yield tracked(String(event.line.id), event);
          else yield event;
        }
      })();
    }),
});

/** Operations on deployments with no detailed path of their own: the general API opens them (general-api.ts). */
export const deploymentOperations = {
  /** One deployment queued per service of the environment named, or of the project's default one. */
  createForProject: writeProcedure
    .meta({ scope: 'deploy:write', created: true })
    .input(z.strictObject({ projectId: idParam, environmentId: idParam.optional() }))
    .output(z.object({ deployments: z.array(deploymentView) }))
    .mutation(async ({ ctx, input }) => ({
      deployments: await ctx.services.deployments.createForProject(ctx.actor, input.projectId, input.environmentId),
    })),
};
