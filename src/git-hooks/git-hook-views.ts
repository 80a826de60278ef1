import { z } from 'zod';
import { DELIVERY_OUTCOMES, type WebhookDeliveryRecord } from './git-hook.records.js';

/** The webhook endpoints' answers, declared once: routers answer them, the OpenAPI document and the typed client read them. */
const timestamp = z.string().meta({ description: 'ISO 8601 UTC timestamp with milliseconds', example: '2026-11-21T12:00:00.000Z' });

export const webhookView = z
  .object({
    url: z.string().meta({ description: 'Where every git host, CI and registry posts; the platform tells the sender by its headers' }),
    createdAt: timestamp,
    rotatedAt: timestamp.meta({ description: 'When the secret was last made (POST rotates it)' }),
  })
  .meta({ id: 'ProjectWebhook' });
export type WebhookView = z.infer<typeof webhookView>;

export const webhookWithSecretView = webhookView
  .extend({
    secret: z.string().meta({
      description:
        'Shown this once: the GitHub, Gitea, Forgejo and Bitbucket webhook secret, GitLab secret token and Standard Webhooks signing secret (whsec_...). Stored encrypted; POST again to rotate it.',
    }),
  })
  .meta({ id: 'ProjectWebhookWithSecret' });
export type WebhookWithSecretView = z.infer<typeof webhookWithSecretView>;

export const deliveryView = z
  .object({
    id: z.string(),
    receivedAt: timestamp,
    provider: z
      .string()
      .meta({ description: 'github, gitlab, gitea, forgejo, bitbucket, generic, dockerhub; unknown when no sender was recognised' }),
    event: z.string().meta({ description: "The sender's name of the event (push, Merge Request Hook, repo:push...)" }),
    deliveryId: z.string().nullable().meta({ description: "The sender's delivery id (X-GitHub-Delivery, X-Request-UUID, webhook-id...)" }),
    outcome: z.enum(DELIVERY_OUTCOMES).meta({
      description:
        '`deployed`: deployments or previews were made; `ignored`: verified, nothing to do (reason); `refused`: not verified or not readable (reason); `duplicate`: a replayed delivery id',
    }),
    reason: z.string(),
    httpStatus: z.number().int().meta({ description: 'What the sender was answered' }),
    deploymentIds: z.array(z.string()),
    previewIds: z.array(z.string()),
  })
  .meta({ id: 'WebhookDelivery' });
export type DeliveryView = z.infer<typeof deliveryView>;

export function presentDelivery(delivery: WebhookDeliveryRecord): DeliveryView {
  return {
    id: delivery.id,
    receivedAt: delivery.receivedAt.toISOString(),
    provider: delivery.provider,
    event: delivery.event,
    deliveryId: delivery.deliveryId,
    outcome: delivery.outcome,
    reason: delivery.reason,
    httpStatus: delivery.httpStatus,
    deploymentIds: delivery.deploymentIds,
    previewIds: delivery.previewIds,
  };
}

/** What the sender reads back (git hosts show it on their delivery page). */
export interface DeliveryAnswer {
  outcome: WebhookDeliveryRecord['outcome'];
  reason: string;
  deliveryId: string | null;
  deploymentIds: string[];
  previewIds: string[];
}
