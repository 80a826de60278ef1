import { randomBytes } from 'node:crypto';
import { assertWrite, type Actor } from '../domain/access.js';
import { NotFoundError } from '../domain/errors.js';
import type { ServiceDeps } from '../platform/deps.js';
import { projectFor } from '../platform/lookup.js';
import { DELIVERIES_KEPT } from './git-hook.records.js';
import { type DeliveryView, presentDelivery, type WebhookView, type WebhookWithSecretView } from './git-hook-views.js';

/** The public path every sender posts a project's deliveries to. */
export function webhookPath(projectId: string): string {
  return `/api/hooks/${projectId}`;
}

/**
 * A project's webhook: one URL for every repository, registry and CI of the project, one secret
 * (generated, shown once, rotatable, stored encrypted), and its recent deliveries.
 */
export class WebhookService {
  constructor(
    private readonly deps: ServiceDeps,
    /** The platform's address as senders reach it (PUBLIC_URL, else the API's own). */
    private readonly baseUrl: () => string,
  ) {}

  /** Makes the webhook, or rotates its secret: the answer is the only place the secret is ever shown. */
  async createOrRotate(actor: Actor, projectId: string): Promise<{ webhook: WebhookWithSecretView }> {
    assertWrite(actor);
    const project = await projectFor(this.deps.store, actor, projectId);
    const existing = await this.deps.store.gitHooks.getWebhook(project.id);
    const now = this.deps.clock.now();
    // The Standard Webhooks form (`whsec_` + base64 of 32 random bytes) is also a strong plain secret for the git hosts.
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    const record = {
      projectId: project.id,
      secretEncrypted: this.deps.secrets.encrypt(secret),
      createdAt: existing?.createdAt ?? now,
      rotatedAt: now,
    };
    await this.deps.store.gitHooks.putWebhook(record);
    return { webhook: { ...this.present(record), secret } };
  }

  async get(actor: Actor, projectId: string): Promise<{ webhook: WebhookView }> {
    const project = await projectFor(this.deps.store, actor, projectId);
    const webhook = await this.deps.store.gitHooks.getWebhook(project.id);
    if (!webhook) throw new NotFoundError('Webhook of project', projectId);
    return { webhook: this.present(webhook) };
  }

  /** The last deliveries, newest first: time, sender, event, delivery id, outcome and reason, what was made. */
  async deliveries(actor: Actor, projectId: string): Promise<{ deliveries: DeliveryView[] }> {
    const project = await projectFor(this.deps.store, actor, projectId);
    return { deliveries: (await this.deps.store.gitHooks.listDeliveries(project.id, DELIVERIES_KEPT)).map(presentDelivery) };
  }

  /** The project's secret, for verifying a delivery; null when the project has no webhook. */
  async secretOf(projectId: string): Promise<string | null> {
    const webhook = await this.deps.store.gitHooks.getWebhook(projectId);
    return webhook ? this.deps.secrets.decrypt(webhook.secretEncrypted) : null;
  }

  private present(record: { projectId: string; createdAt: Date; rotatedAt: Date }): WebhookView {
    return {
      url: `${this.baseUrl().replace(/\/+$/, '')}${webhookPath(record.projectId)}`,
      createdAt: record.createdAt.toISOString(),
      rotatedAt: record.rotatedAt.toISOString(),
    };
  }
}
