import { z } from 'zod';
import { deploymentView } from '../src/index.js';
import { idParam } from './schemas.js';
import { router, writeProcedure } from './trpc.js';

/** The general API's deploy doors: the same queued deployments as POST /api/services/{serviceId}/deployments. */
const tags = ['Deployments'];

export const deployRouter = router({
  service: writeProcedure
    .meta({
      scope: 'deploy:write',
      created: true,
      openapi: {
        method: 'POST',
        path: '/api/services/{serviceId}/deploy',
        tags,
        summary: 'Queue a deployment of the service (as POST /api/services/{serviceId}/deployments)',
      },
    })
    .input(z.strictObject({ serviceId: idParam }))
    .output(z.object({ deployment: deploymentView }))
    .mutation(async ({ ctx, input }) => ({ deployment: await ctx.services.deployments.create(ctx.actor, input.serviceId) })),

  project: writeProcedure
    .meta({
      scope: 'deploy:write',
      created: true,
      openapi: {
        method: 'POST',
        path: '/api/projects/{projectId}/deploy',
        tags,
        summary: "Queue a deployment of every service of one of the project's environments",
        description:
          'The environment named by `environmentId`, or the default one (`production`). An empty list for an environment without services. 400 on `environmentId` for an environment of another project.',
      },
    })
    .input(z.strictObject({ projectId: idParam, environmentId: idParam.optional() }))
    .output(z.object({ deployments: z.array(deploymentView) }))
    .mutation(async ({ ctx, input }) => ({
      deployments: await ctx.services.deployments.createForProject(ctx.actor, input.projectId, input.environmentId),
    })),
});
