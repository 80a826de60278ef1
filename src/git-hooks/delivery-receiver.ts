import type { AuditService } from '../audit/audit.service.js';
import { newId } from '../domain/ids.js';
import type { ServiceDeps } from '../platform/deps.js';
import type { DeliveryAnswer } from './git-hook-views.js';
import type { DeliveryOutcome, WebhookDeliveryRecord } from './git-hook.records.js';
import type { GitProvider } from './git-provider.port.js';
import { HookMalformed, HookRefused, type HookEvent, type HookProvider, type HookRequest, type PullRequestEvent } from './hook-event.js';
import type { PushDeployer, TriggerResult } from './push-deployer.js';
import type { TriggerPoller } from './trigger-poller.js';
import type { WebhookService } from './webhook.service.js';

/** Previews take the pull-request events (src/previews). */
export interface PullRequestHandler {
  onPullRequest(
    projectId: string,
    delivery: { provider: HookProvider; deliveryId: string | null },
    event: PullRequestEvent,
  ): Promise<TriggerResult>;
}

/** What the edge answers a delivery: the status, and the body (an error body for 4xx, the outcome for 2xx). */
export type DeliveryResponse =
  | { status: 200 | 202; body: DeliveryAnswer }
  | {
      status: 400 | 401 | 404 | 413;
      error: { code: 'validation_error' | 'unauthorized' | 'not_found' | 'payload_too_large'; message: string };
    };

/** Headers a delivery list may name the sender and event from before anything is verified (never a secret). */
const SENDER_NAME_LIMIT = 100;

/**
 * The public endpoint's use case: which provider sent a delivery (by its headers), its signature checked
 * against the project's secret over the raw body, a replayed delivery id answered `duplicate`, then the
 * events acted on (pushes deploy, pull requests make previews, registry pushes check digests). Every
 * delivery leaves one record, the refused ones included; a refused one leaves nothing else.
 */
export class DeliveryReceiver {
  private pullRequests: PullRequestHandler | null = null;

  constructor(
    private readonly deps: ServiceDeps,
    /** Asked in order: Forgejo before Gitea before GitHub (each sends the next one's headers too), Docker Hub last. */
    private readonly providers: GitProvider[],
    private readonly webhooks: WebhookService,
    private readonly pushes: PushDeployer,
    private readonly poller: TriggerPoller,
    private readonly log: (message: string, extra?: Record<string, unknown>) => void = () => {},
    /** The audit log: every delivery is a write through the git-webhook door, the refused ones included. */
    private readonly audit?: Pick<AuditService, 'record'>,
  ) {}

  /** The public door's body limit, read at each delivery (the configuration is live). */
  limits(): { maxBodyBytes: number } {
    return { maxBodyBytes: this.deps.config.hooks.maxBodyBytes };
  }

  /** Set once previews exist (they are built after this). */
  handlePullRequests(handler: PullRequestHandler): void {
    this.pullRequests = handler;
  }

  /**
   * One delivery, acted on and recorded in the audit log (door `git-webhook`, operation
   * `hooks.<provider>`, the deployments and previews it made as targets; the caller is anonymous:
   * the signature, not a credential, vouches for it). `clientAddress` is the sender's.
   */
  async receive(projectId: string, request: HookRequest, clientAddress: string | null = null): Promise<DeliveryResponse> {
    const provider = this.providers.find((p) => p.recognizes(request))?.id ?? 'unknown';
    let response: DeliveryResponse | null = null;
    try {
      response = await this.handle(projectId, request);
      return response;
    } finally {
      await this.audited(projectId, provider, response, clientAddress);
    }
  }

  private async handle(projectId: string, request: HookRequest): Promise<DeliveryResponse> {
    const project = await this.deps.store.projects.get(projectId);
    if (!project) return { status: 404, error: { code: 'not_found', message: `Project ${JSON.stringify(projectId)} was not found` } };
    const provider = this.providers.find((p) => p.recognizes(request)) ?? null;
    const base = {
      projectId: project.id,
      provider: provider?.id ?? 'unknown',
      event: clip(provider?.eventName(request) ?? 'unknown'),
      deliveryId: provider ? clipOrNull(provider.deliveryId(request)) : null,
      receivedAt: request.receivedAt,
    };
    const refuse = (status: 400 | 401, message: string) => this.refuse(base, status, message);
    if (!provider)
      return refuse(
        401,
        'Unsigned delivery: no provider signature headers (X-Hub-Signature-256, X-Gitlab-Token, X-Gitea-Signature, X-Forgejo-Signature, X-Hub-Signature, webhook-signature)',
      );
    const secret = await this.webhooks.secretOf(project.id);
    if (!secret) return refuse(401, 'This project has no webhook secret yet: POST /api/projects/{projectId}/webhook makes one');
    try {
      // Docker Hub cannot sign (verify is false): its delivery is a hint the poller checks against the registry.
      provider.verify(request, secret);
    } catch (error) {
      if (error instanceof HookRefused) return refuse(401, error.message);
      throw error;
    }
    let events: HookEvent[];
    try {
      events = provider.parse(request, JSON.parse(request.body.toString('utf8')));
    } catch (error) {
      if (error instanceof SyntaxError) return refuse(400, `The body is not JSON: ${error.message}`);
      if (error instanceof HookMalformed) return refuse(400, `The body is not a ${provider.id} ${base.event} payload: ${error.message}`);
      throw error;
    }

    // Recorded first with its key: a replay, or the same delivery twice at once, finds it taken.
    const record: WebhookDeliveryRecord = {
      ...base,
      id: newId(),
      dedupeKey: base.deliveryId ? `${project.id}:${provider.id}:${base.deliveryId}` : null,
      outcome: 'ignored',
      reason: 'Being handled',
      httpStatus: 202,
      deploymentIds: [],
      previewIds: [],
    };
    if (!(await this.deps.store.gitHooks.recordDelivery(record))) {
      const first = record.dedupeKey ? await this.deps.store.gitHooks.findDelivery(record.dedupeKey) : null;
      const reason = `Delivery ${base.deliveryId} was received before${first ? ` (${first.receivedAt.toISOString()}, ${first.outcome})` : ''}: nothing deployed`;
      await this.deps.store.gitHooks.recordDelivery({
        ...record,
        id: newId(),
        dedupeKey: null,
        outcome: 'duplicate',
        reason,
        httpStatus: 200,
      });
      return { status: 200, body: answer('duplicate', reason, base.deliveryId, [], []) };
    }

    let result: { outcome: DeliveryOutcome; status: 200 | 202; reason: string; deploymentIds: string[]; previewIds: string[] };
    try {
      result = await this.act(project.id, provider.id, base.deliveryId, events);
    } catch (error) {
      this.log('delivery handling failed', { projectId: project.id, provider: provider.id, error: (error as Error).message });
      await this.deps.store.gitHooks.updateDelivery(record.id, {
        outcome: 'refused',
        reason: 'Internal error while handling it',
        httpStatus: 500,
      });
      throw error;
    }
    await this.deps.store.gitHooks.updateDelivery(record.id, {
      outcome: result.outcome,
      reason: result.reason,
      httpStatus: result.status,
      deploymentIds: result.deploymentIds,
      previewIds: result.previewIds,
    });
    return { status: result.status, body: answer(result.outcome, result.reason, base.deliveryId, result.deploymentIds, result.previewIds) };
  }

  /** A body over the limit, refused before it was read (413): recorded with what the headers say. */
  async refuseTooLarge(
    projectId: string,
    request: Omit<HookRequest, 'body'>,
    limitBytes: number,
    clientAddress: string | null = null,
  ): Promise<DeliveryResponse> {
    const withoutBody: HookRequest = { ...request, body: Buffer.alloc(0) };
    const provider = this.providers.find((p) => p.recognizes(withoutBody))?.id ?? 'unknown';
    const response = await this.refuseTooLargeUnaudited(projectId, request, limitBytes);
    await this.audited(projectId, provider, response, clientAddress);
    return response;
  }

  /** The audit record of one delivery: null when handling it threw (the caller got a 500). */
  private async audited(projectId: string, provider: string, response: DeliveryResponse | null, clientAddress: string | null) {
    if (!this.audit) return;
    const found = response && !('error' in response && response.error.code === 'not_found');
    await this.audit.record({
      who: null,
      operation: `hooks.${provider}`,
      door: 'git-webhook',
      targetIds: [projectId, ...(response && 'body' in response ? [...response.body.deploymentIds, ...response.body.previewIds] : [])],
      projectId: found ? projectId : null,
      clientAddress,
      outcome: !response ? 'internal_error' : 'error' in response ? response.error.code : 'success',
    });
  }

  private async refuseTooLargeUnaudited(
    projectId: string,
    request: Omit<HookRequest, 'body'>,
    limitBytes: number,
  ): Promise<DeliveryResponse> {
    const project = await this.deps.store.projects.get(projectId);
    const message = `The body is over the ${limitBytes}-byte limit of a delivery`;
    if (!project) return { status: 404, error: { code: 'not_found', message: `Project ${JSON.stringify(projectId)} was not found` } };
    const withoutBody: HookRequest = { ...request, body: Buffer.alloc(0) };
    const provider =
      this.providers.filter((p) => p.id !== 'dockerhub' && p.id !== 'generic').find((p) => p.recognizes(withoutBody)) ?? null;
    await this.deps.store.gitHooks.recordDelivery({
      id: newId(),
      projectId: project.id,
      provider: provider?.id ?? 'unknown',
      event: clip(provider?.eventName(withoutBody) ?? 'unknown'),
      deliveryId: provider ? clipOrNull(provider.deliveryId(withoutBody)) : null,
      dedupeKey: null,
      outcome: 'refused',
      reason: message,
      httpStatus: 413,
      deploymentIds: [],
      previewIds: [],
      receivedAt: request.receivedAt,
    });
    return { status: 413, error: { code: 'payload_too_large', message } };
  }

  private async act(
    projectId: string,
    provider: HookProvider,
    deliveryId: string | null,
    events: HookEvent[],
  ): Promise<{ outcome: DeliveryOutcome; status: 200 | 202; reason: string; deploymentIds: string[]; previewIds: string[] }> {
    const delivery = { provider, deliveryId };
    const results: TriggerResult[] = [];
    let ping = false;
    for (const event of events) {
      switch (event.kind) {
        case 'ping':
          ping = true;
          results.push({ deploymentIds: [], previewIds: [], reason: 'The webhook is set up: pushes and pull requests will be acted on' });
          break;
        case 'ignored':
          results.push({ deploymentIds: [], previewIds: [], reason: event.reason });
          break;
        case 'push':
          results.push(await this.pushes.onPush(projectId, delivery, event));
          break;
        case 'pull_request':
          results.push(
            this.pullRequests
              ? await this.pullRequests.onPullRequest(projectId, delivery, event)
              : { deploymentIds: [], previewIds: [], reason: 'Previews are not available on this platform' },
          );
          break;
        case 'image_push':
          results.push(await this.poller.onImagePush(projectId, delivery, event));
          break;
      }
    }
    const deploymentIds = results.flatMap((r) => r.deploymentIds);
    const previewIds = results.flatMap((r) => r.previewIds);
    const made = deploymentIds.length > 0 || previewIds.length > 0;
    return {
      outcome: made ? 'deployed' : 'ignored',
      status: ping ? 200 : 202,
      reason: results.map((r) => r.reason).join('; ') || 'Nothing to do',
      deploymentIds,
      previewIds,
    };
  }

  private async refuse(
    base: Pick<WebhookDeliveryRecord, 'projectId' | 'provider' | 'event' | 'deliveryId' | 'receivedAt'>,
    status: 400 | 401,
    message: string,
  ): Promise<DeliveryResponse> {
    await this.deps.store.gitHooks.recordDelivery({
      ...base,
      id: newId(),
      dedupeKey: null,
      outcome: 'refused',
      reason: message,
      httpStatus: status,
      deploymentIds: [],
      previewIds: [],
    });
    return { status, error: { code: status === 401 ? 'unauthorized' : 'validation_error', message } };
  }
}

function answer(
  outcome: DeliveryOutcome,
  reason: string,
  deliveryId: string | null,
  deploymentIds: string[],
  previewIds: string[],
): DeliveryAnswer {
  return { outcome, reason, deliveryId, deploymentIds, previewIds };
}

/** Header values a stranger chose: kept short in the record. */
function clip(value: string): string {
  return value.length > SENDER_NAME_LIMIT ? value.slice(0, SENDER_NAME_LIMIT) : value;
}

function clipOrNull(value: string | null): string | null {
  return value === null ? null : value.slice(0, 200);
}
