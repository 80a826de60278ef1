import { z } from 'zod';
import { deploymentView, domainView, envVarView, projectView, proxyResultView, serviceView, suggestionView } from '../src/index.js';
import { buildMethod, idParam, line, nullableLine, nullableText, port, runtimeMode, strictBoolean, text, trustedOutput } from './schemas.js';
import { readProcedure, router, writeProcedure } from './trpc.js';

const tags = ['Services'];

const envEntry = z.strictObject({ key: line(255), value: text(), secret: strictBoolean().optional() });

const createServiceInput = z.strictObject({
  projectId: idParam,
  name: line(100).min(1),
  repoFullName: nullableLine(512),
  repoUrl: nullableLine(2048).meta({ description: 'Credentials in the URL (https://user:token@host/...) are kept as the git token, encrypted, and removed from the URL' }),
  containerImage: nullableLine(512),
  branch: line(255).min(1).optional(),
  rootDir: nullableLine(1024),
  gitToken: nullableLine().meta({ description: 'Write-only: a token for private repositories; never returned (see hasGitToken)' }),
  installCommand: nullableText(),
  buildCommand: nullableText(),
  startCommand: nullableText(),
  staticOutput: nullableLine(1024),
  buildMethod: buildMethod.optional(),
  dockerfilePath: nullableLine(1024),
  runtimeMode: runtimeMode.optional(),
  internalPort: port.optional(),
  env: z.array(envEntry).max(500).optional(),
  databasePublicEnabled: strictBoolean().optional(),
  databasePublicHostname: nullableLine(253),
  postgresLogicalReplicationEnabled: strictBoolean().optional(),
});

/** PATCH takes the build and run settings of creation, each optional. */
const updateServiceInput = createServiceInput
  .pick({
    branch: true,
    rootDir: true,
    gitToken: true,
    installCommand: true,
    buildCommand: true,
    startCommand: true,
    staticOutput: true,
    buildMethod: true,
    dockerfilePath: true,
    runtimeMode: true,
    internalPort: true,
  })
  .extend({ serviceId: idParam });

export const serviceRouter = router({
  create: writeProcedure
    .meta({ created: true, openapi: { method: 'POST', path: '/api/projects/{projectId}/services', tags, summary: 'Create a repository, container-image, database, worker or static-site service' } })
    .input(createServiceInput)
    .output(z.object({ service: serviceView }))
    .mutation(async ({ ctx, input }) => {
      const { projectId, ...rest } = input;
      return { service: await ctx.services.services.create(ctx.actor, projectId, rest) };
    }),

  overview: readProcedure
    .meta({ openapi: { method: 'GET', path: '/api/services/{serviceId}/overview', tags, summary: 'A service with its deployments, variables and domains' } })
    .input(z.strictObject({ serviceId: idParam }))
    .output(
      trustedOutput(
        'ServiceOverview',
        z.object({ service: serviceView, deployments: z.array(deploymentView), env: z.array(envVarView), domains: z.array(domainView), publicIp: z.string() }),
      ),
    )
    .query(async ({ ctx, input }) => ctx.services.services.overview(ctx.actor, input.serviceId)),

  update: writeProcedure
    .meta({ openapi: { method: 'PATCH', path: '/api/services/{serviceId}', tags, summary: 'Change how a service is built and run' } })
    .input(updateServiceInput)
    .output(z.object({ service: serviceView }))
    .mutation(async ({ ctx, input }) => {
      const { serviceId, ...patch } = input;
      return { service: await ctx.services.services.update(ctx.actor, serviceId, patch) };
    }),

  transfer: writeProcedure
    .meta({ openapi: { method: 'POST', path: '/api/services/{serviceId}/transfer', tags, summary: 'Move a service to another project (the key must see both)' } })
    .input(z.strictObject({ serviceId: idParam, targetProjectId: idParam }))
    .output(z.object({ service: serviceView, project: projectView, proxy: proxyResultView }))
    .mutation(async ({ ctx, input }) => ctx.services.services.transfer(ctx.actor, input.serviceId, input.targetProjectId)),

  delete: writeProcedure
    .meta({ openapi: { method: 'DELETE', path: '/api/services/{serviceId}', tags, summary: 'Delete a service with its domains, variables, deployments and logs' } })
    .input(z.strictObject({ serviceId: idParam }))
    .output(z.object({ ok: z.literal(true), proxy: proxyResultView }))
    .mutation(async ({ ctx, input }) => ({ ok: true as const, proxy: await ctx.services.services.delete(ctx.actor, input.serviceId) })),

  suggestionKeys: readProcedure
    .meta({ openapi: { method: 'GET', path: '/api/services/{serviceId}/suggestion-keys', tags, summary: 'Keys worth referencing from this service, and database connection variables' } })
    .input(z.strictObject({ serviceId: idParam }))
    .output(z.object({ suggestions: z.array(z.object({ key: z.string(), label: z.string() })), databaseVariables: z.array(suggestionView) }))
    .query(async ({ ctx, input }) => ctx.services.services.suggestionKeys(ctx.actor, input.serviceId)),
});
