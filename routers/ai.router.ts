import { z } from 'zod';
import { aiRequestInput, failureExplanationView } from '../src/index.js';
import { router, writeProcedure } from './trpc.js';

const tags = ['Deployments'];
const output = z.object({ explanation: failureExplanationView });

/** AI explanations of deployments: a connected provider (settings `aiProviders`) is asked once, with secrets masked. */
export const aiRouter = router({
  explainFailure: writeProcedure
    .meta({
      scope: 'logs:read',
      upstream: 'the AI provider',
      openapi: {
        method: 'POST',
        path: '/api/deployments/{deploymentId}/explain-failure',
        tags,
        summary: 'Explain a failed deployment with a connected AI provider',
        description:
          'Sends the provider the tail of the deployment log (secrets masked), the build settings and the detected builder. 409 when the deployment did not fail, 404 for an unknown provider, 502 upstream_error when the provider fails, times out (AI_TIMEOUT_MS) or answers outside the shape.',
      },
    })
    .input(aiRequestInput)
    .output(output)
    .mutation(async ({ ctx, input }) => {
      const { deploymentId, ...request } = input;
      return ctx.services.ai.explainFailure(ctx.actor, deploymentId, request);
    }),

  diagnostics: writeProcedure
    .meta({
      scope: 'logs:read',
      upstream: 'the AI provider',
      openapi: {
        method: 'POST',
        path: '/api/deployments/{deploymentId}/diagnostics',
        tags,
        summary: 'AI diagnostics of any deployment, with the runtime log tail and the latest metrics',
        description:
          'As explain-failure, for a deployment in any state, adding the running container log tail and the latest resource sample (secrets masked).',
      },
    })
    .input(aiRequestInput)
    .output(output)
    .mutation(async ({ ctx, input }) => {
      const { deploymentId, ...request } = input;
      return ctx.services.ai.diagnose(ctx.actor, deploymentId, request);
    }),
});
