import { z } from 'zod';
import { apiKeyRouter } from './api-key.router.js';
import { deploymentRouter } from './deployment.router.js';
import { domainRouter } from './domain.router.js';
import { envRouter } from './env.router.js';
import { projectRouter } from './project.router.js';
import { serviceRouter } from './service.router.js';
import { settingsRouter } from './settings.router.js';
import { createCallerFactory, publicProcedure, router } from './trpc.js';

export const appRouter = router({
  health: publicProcedure
    .meta({ openapi: { method: 'GET', path: '/api/health', tags: ['System'], summary: 'Liveness: answers without a key', protect: false } })
    .input(z.strictObject({}).optional())
    .output(z.object({ ok: z.literal(true) }))
    .query(() => ({ ok: true as const })),
  projects: projectRouter,
  services: serviceRouter,
  env: envRouter,
  domains: domainRouter,
  deployments: deploymentRouter,
  apiKeys: apiKeyRouter,
  settings: settingsRouter,
});

export type AppRouter = typeof appRouter;
export const createCaller = createCallerFactory(appRouter);
