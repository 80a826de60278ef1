import { z } from 'zod';
import {
  createServiceBody,
  createServiceInput,
  deploymentView,
  domainView,
  drillSummaryView,
  envVarView,
  hasScope,
  moveServiceInput,
  notificationsHealthView,
  projectView,
  proxyResultView,
  serviceMoveView,
  serviceView,
  suggestionView,
  updateServiceInput,
} from '../src/index.js';
import { documentedBody, idParam, trustedOutput } from './schemas.js';
import { readProcedure, router, writeProcedure } from './trpc.js';

const tags = ['Services'];

const createInput = z.strictObject({ projectId: idParam, ...createServiceInput.shape });
/** One source of serviceSources, as the use case holds every creation to (the typed client sends createServiceInput). */
export const CREATE_SERVICE_BODY = documentedBody('CreateServiceBody', createServiceBody);
const updateInput = z.strictObject({ ...updateServiceInput.shape, serviceId: idParam });

export const serviceRouter = router({
  create: writeProcedure
    .meta({
      scope: 'project:write',
      created: true,
      openapi: {
        method: 'POST',
        path: '/api/projects/{projectId}/services',
        tags,
        summary: 'Create a repository, container-image, database, worker or static-site service',
      },
      body: CREATE_SERVICE_BODY,
    })
    .input(createInput)
    .output(z.object({ service: serviceView }))
    .mutation(async ({ ctx, input }) => {
      const { projectId, ...rest } = input;
      return { service: await ctx.services.serviceCreation.create(ctx.actor, projectId, rest) };
    }),

  overview: readProcedure
    .meta({
      scope: 'project:read',
      answerCache: true,
      openapi: {
        method: 'GET',
        path: '/api/services/{serviceId}/overview',
        tags,
        summary: 'A service with its deployments, variables and domains',
      },
    })
    .input(z.strictObject({ serviceId: idParam }))
    .output(
      trustedOutput(
        'ServiceOverview',
        z.object({
          service: serviceView,
          deployments: z.array(deploymentView),
          env: z.array(envVarView),
          domains: z.array(domainView),
          publicIp: z.string(),
          liveDeploymentId: z.string().nullable().meta({ description: 'The deployment serving now; null before the first went live' }),
          notifications: notificationsHealthView.meta({
            description:
              "The notification channels this project's events go to: `failing` with those whose last 5 deliveries failed and their last error (secrets taken out)",
          }),
          drills: drillSummaryView.meta({
            description:
              "Restore drills of this service's backups (database dumps and volume backups): succeeded backups never drilled, and those whose last drill failed",
          }),
        }),
      ),
    )
    .query(async ({ ctx, input }) => {
      const overview = await ctx.services.serviceReader.overview(ctx.actor, input.serviceId);
      const [notifications, drills] = await Promise.all([
        ctx.services.notifications.healthForProject(overview.service.projectId),
        ctx.services.backups.drillCountsOf(overview.service.id),
      ]);
      // A token without env:read sees which variables exist, never their values.
      if (hasScope(ctx.actor, 'env:read')) return { ...overview, notifications, drills };
      return { ...overview, notifications, drills, env: overview.env.map((v) => ({ ...v, value: '', resolvedValue: '' })) };
    }),

  update: writeProcedure
    .meta({
      scope: 'project:write',
      openapi: { method: 'PATCH', path: '/api/services/{serviceId}', tags, summary: 'Change how a service is built and run' },
    })
    .input(updateInput)
    .output(z.object({ service: serviceView }))
    .mutation(async ({ ctx, input }) => {
      const { serviceId, ...patch } = input;
      return { service: await ctx.services.serviceChanges.update(ctx.actor, serviceId, patch) };
    }),

  transfer: writeProcedure
    .meta({
      scope: 'project:write',
      openapi: {
        method: 'POST',
        path: '/api/services/{serviceId}/transfer',
        tags,
        summary: 'Move a service to another project (the key must see both)',
      },
    })
    .input(z.strictObject({ serviceId: idParam, targetProjectId: idParam }))
    .output(z.object({ service: serviceView, project: projectView, proxy: proxyResultView }))
    .mutation(async ({ ctx, input }) => ctx.services.serviceChanges.transfer(ctx.actor, input.serviceId, input.targetProjectId)),

  move: writeProcedure
    .meta({
      scope: 'db:manage',
      openapi: {
        method: 'POST',
        path: '/api/services/{serviceId}/move',
        tags,
        summary: 'Move a database or storage instance to another server (its volume is copied there)',
        description:
          "Tokens need db:manage. Answers at once with the deployment that carries the move: the live image deployed on the target server, the service stopped on its earlier server, its volume copied, started and checked there; the deployment's log states each step and the downtime. A move that fails leaves it where it was. 422 `not_supported` for a service that is not a database or storage instance (`details.reason` `not_stateful`); 400 on `serverId` for a server that does not exist; 409 when it is on that server already (`same_server`), when the server is not ready, not active or not joined (`server_not_ready`), when the server holding it is down (`holder_down`), with point-in-time recovery on (`pitr_enabled`), while a deployment of it is under way (`deploying`), while it moves (`moving`), or before it was ever deployed (`not_deployed`).",
      },
    })
    .input(z.strictObject({ serviceId: idParam, ...moveServiceInput.shape }))
    .output(serviceMoveView)
    .mutation(({ ctx, input }) => ctx.services.serviceMoves.move(ctx.actor, input.serviceId, { serverId: input.serverId })),

  delete: writeProcedure
    .meta({
      scope: 'project:write',
      openapi: {
        method: 'DELETE',
        path: '/api/services/{serviceId}',
        tags,
        summary: 'Delete a service with its domains, variables, deployments and logs',
      },
    })
    .input(z.strictObject({ serviceId: idParam }))
    .output(z.object({ ok: z.literal(true), proxy: proxyResultView }))
    .mutation(async ({ ctx, input }) => ({
      ok: true as const,
      proxy: await ctx.services.removal.deleteService(ctx.actor, input.serviceId),
    })),

  suggestionKeys: readProcedure
    .meta({
      scope: 'project:read',
      answerCache: true,
      openapi: {
        method: 'GET',
        path: '/api/services/{serviceId}/suggestion-keys',
        tags,
        summary: 'Keys worth referencing from this service, and database connection variables',
      },
    })
    .input(z.strictObject({ serviceId: idParam }))
    .output(
      z.object({ suggestions: z.array(z.object({ key: z.string(), label: z.string() })), databaseVariables: z.array(suggestionView) }),
    )
    .query(async ({ ctx, input }) => ctx.services.suggestions.forService(ctx.actor, input.serviceId)),
});

/** Operations on services with no detailed path of their own: the general API opens them (general-api.ts). */
export const serviceOperations = {
  /** One service, as the overview shows it. */
  get: readProcedure
    .meta({ scope: 'project:read' })
    .input(z.strictObject({ serviceId: idParam }))
    .output(z.object({ service: serviceView }))
    .query(async ({ ctx, input }) => ({ service: await ctx.services.serviceReader.get(ctx.actor, input.serviceId) })),

  /** A service in the environment named, instead of the project's default one. */
  createInEnvironment: writeProcedure
    .meta({ scope: 'project:write', created: true })
    .input(z.strictObject({ environmentId: idParam, ...createServiceInput.shape }))
    .output(z.object({ service: serviceView }))
    .mutation(async ({ ctx, input }) => {
      const { environmentId, ...rest } = input;
      return { service: await ctx.services.serviceCreation.createInEnvironment(ctx.actor, environmentId, rest) };
    }),
};
