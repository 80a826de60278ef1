import { z } from 'zod';
import { metricsView } from '../src/index.js';
import { idParam, line } from './schemas.js';
import { readProcedure, router } from './trpc.js';

const step = z
  .union([z.number(), z.string().regex(/^\d{1,6}$/, { message: 'must be an integer' })])
  .transform(Number)
  .pipe(z.number().int().min(60).max(86_400));

export const metricsRouter = router({
  get: readProcedure
    .meta({
      scope: 'project:read',
      openapi: {
        method: 'GET',
        path: '/api/services/{serviceId}/metrics',
        tags: ['Services'],
        summary: "A service's resource use: the current sample and a time series",
        description:
          'Query: `from`, `to` (ISO 8601; default the last hour), `step` (seconds, a multiple of 60, 60..86400; default about 360 points). History is kept per minute for METRICS_RETENTION_HOURS. A stopped service answers its history with `running: false`.',
      },
    })
    .input(
      z.strictObject({
        serviceId: idParam,
        from: line(40).optional(),
        to: line(40).optional(),
        step: step.optional(),
      }),
    )
    .output(metricsView)
    .query(({ ctx, input }) => {
      const { serviceId, ...query } = input;
      return ctx.services.metrics.get(ctx.actor, serviceId, query);
    }),
});
