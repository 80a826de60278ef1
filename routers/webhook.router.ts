import { z } from 'zod';
import { deliveryView, previewView, webhookView, webhookWithSecretView } from '../src/index.js';
import { idParam } from './schemas.js';
import { readProcedure, router, writeProcedure } from './trpc.js';

/**
 * A project's webhook for push to deploy (docs/push-to-deploy.md): one URL every git host, CI and
 * registry posts to, its secret (shown once, rotated by asking again), its recent deliveries, and the
 * pull-request previews they made. The deliveries themselves arrive on the public endpoint
 * (adapters/http/webhook-endpoint.ts), not through this router: they are verified over the raw body.
 */
const tags = ['Push to deploy'];
const base = '/api/projects/{projectId}';
const projectParam = z.strictObject({ projectId: idParam });

export const webhookRouter = router({
  createOrRotate: writeProcedure
    .meta({
      scope: 'project:write',
      openapi: {
        method: 'POST',
        path: `${base}/webhook`,
        tags,
        summary: "Make the project's webhook, or rotate its secret: the answer is the only time the secret is shown",
        description:
          'Every provider posts to the one URL; the platform tells the sender by its headers (GitHub, GitLab, Gitea, Forgejo, Bitbucket Cloud, Standard Webhooks, Docker Hub). Calling it again makes a new secret: the old one stops verifying at once.',
      },
    })
    .input(projectParam)
    .output(z.object({ webhook: webhookWithSecretView }))
    .mutation(({ ctx, input }) => ctx.services.webhooks.createOrRotate(ctx.actor, input.projectId)),

  get: readProcedure
    .meta({
      scope: 'project:read',
      answerCache: true,
      openapi: {
        method: 'GET',
        path: `${base}/webhook`,
        tags,
        summary: "The project's webhook URL (never its secret); 404 before one is made",
      },
    })
    .input(projectParam)
    .output(z.object({ webhook: webhookView }))
    .query(({ ctx, input }) => ctx.services.webhooks.get(ctx.actor, input.projectId)),

  deliveries: readProcedure
    .meta({
      scope: 'project:read',
      answerCache: true,
      openapi: {
        method: 'GET',
        path: `${base}/webhook/deliveries`,
        tags,
        summary:
          'The last 100 deliveries to the webhook, newest first: time, sender, event, delivery id, outcome and reason, what was made',
      },
    })
    .input(projectParam)
    .output(z.object({ deliveries: z.array(deliveryView) }))
    .query(({ ctx, input }) => ctx.services.webhooks.deliveries(ctx.actor, input.projectId)),

  previews: readProcedure
    .meta({
      scope: 'project:read',
      answerCache: true,
      openapi: {
        method: 'GET',
        path: `${base}/previews`,
        tags,
        summary: "The project's pull-request previews: status, URL, head commit, services and databases",
      },
    })
    .input(projectParam)
    .output(z.object({ previews: z.array(previewView) }))
    .query(({ ctx, input }) => ctx.services.previews.list(ctx.actor, input.projectId)),
});
