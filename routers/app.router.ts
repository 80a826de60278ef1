import { z } from 'zod';
import { healthView } from '../src/index.js';
import { aiRouter } from './ai.router.js';
import { metricsRouter } from './metrics.router.js';
import { apiKeyRouter } from './api-key.router.js';
import { authRouter } from './auth.router.js';
import { backupRouter } from './backup.router.js';
import { pitrRouter } from './pitr.router.js';
import { volumeRouter } from './volume.router.js';
import { backupConfigurationRouter } from './backup-configuration.router.js';
// Here, not last: the document's components follow the order in which routers register trusted outputs (service.router's before project.router's).
import { generalApi } from './general-api.js';
import { storageRouter } from './storage.router.js';
import { systemRouter } from './system.router.js';
import { databaseRouter } from './database.router.js';
import { databaseImportRouter } from './database-import.router.js';
import { databaseTlsRouter } from './database-tls.router.js';
import { deploymentRouter } from './deployment.router.js';
import { domainRouter } from './domain.router.js';
import { envRouter } from './env.router.js';
import { environmentRouter } from './environment.router.js';
import { projectRouter } from './project.router.js';
import { serviceRouter } from './service.router.js';
import { settingsRouter } from './settings.router.js';
import { userRouter, usersRouter } from './user.router.js';
import { terminalRouter } from './terminal.router.js';
import { serverRouter } from './server.router.js';
import { auditRouter } from './audit.router.js';
import { eventRouter } from './event.router.js';
import { notificationRouter } from './notification.router.js';
import { webhookRouter } from './webhook.router.js';
import { createCallerFactory, publicProcedure, router } from './trpc.js';

export const appRouter = router({
  health: publicProcedure
    .meta({
      scope: 'public',
      openapi: {
        method: 'GET',
        path: '/api/health',
        tags: ['System'],
        summary: 'Health: the API, the Docker engine, the reverse proxy and the database',
        description:
          'Answers without a key, always 200 while the API runs; `status` is `degraded` when the engine, the proxy or the database is down (each with the reason). Checked at most every 3 s.',
        protect: false,
      },
    })
    .input(z.strictObject({}).optional())
    .output(healthView)
    .query(({ ctx }) => ctx.services.health.check()),
  projects: projectRouter,
  environments: environmentRouter,
  services: serviceRouter,
  env: envRouter,
  domains: domainRouter,
  deployments: deploymentRouter,
  apiKeys: apiKeyRouter,
  settings: settingsRouter,
  databases: databaseRouter,
  databaseImports: databaseImportRouter,
  databaseTls: databaseTlsRouter,
  ai: aiRouter,
  metrics: metricsRouter,
  auth: authRouter,
  user: userRouter,
  users: usersRouter,
  terminals: terminalRouter,
  backups: backupRouter,
  pitr: pitrRouter,
  volumes: volumeRouter,
  webhooks: webhookRouter,
  // The general API's paths: second doors to the procedures above (general-api.ts).
  apps: router(generalApi.apps),
  deploy: router(generalApi.deploy),
  variables: router(generalApi.variables),
  projectDomains: router(generalApi.projectDomains),
  databaseServices: router(generalApi.databaseServices),
  storage: storageRouter,
  system: systemRouter,
  backupConfigurations: backupConfigurationRouter,
  servers: serverRouter,
  notifications: notificationRouter,
  audit: auditRouter,
  events: eventRouter,
});

export type AppRouter = typeof appRouter;
export const createCaller = createCallerFactory(appRouter);
