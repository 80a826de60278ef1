import { UniqueConstraintViolationException } from '@mikro-orm/core';
import { CommitStatus, ProjectWebhook, ServicePoll, WebhookDelivery } from '../persistence/entities.js';
import { fromJson, Repository, type Patch } from '../persistence/repository.js';
import {
  DELIVERIES_KEPT,
  type CommitStatusRecord,
  type ProjectWebhookRecord,
  type ServicePollRecord,
  type WebhookDeliveryRecord,
} from './git-hook.records.js';

/**
 * Project webhooks, their deliveries, polling state and commit statuses to post. Deliveries and
 * statuses are no part of any cached read: writing them does not move the store's version.
 */
export class GitHookRepository extends Repository {
  getWebhook(projectId: string): Promise<ProjectWebhookRecord | null> {
    return this.row(ProjectWebhook, { projectId });
  }
  /** Creates the project's webhook, or replaces its secret (a rotation). */
  async putWebhook(webhook: ProjectWebhookRecord): Promise<void> {
    this.written(ProjectWebhook);
    await this.fork().upsert(ProjectWebhook, webhook);
  }
  async deleteWebhook(projectId: string): Promise<void> {
    await this.deleteRows(ProjectWebhook, { projectId });
    await this.fork().nativeDelete(WebhookDelivery, { projectId });
  }

  /**
   * Records a delivery and keeps the project's newest DELIVERIES_KEPT. Resolves false when a verified
   * delivery with the same dedupe key is already recorded (a replay, or the same delivery twice at once).
   */
  async recordDelivery(delivery: WebhookDeliveryRecord): Promise<boolean> {
    const em = this.fork();
    try {
      await em.insert(WebhookDelivery, delivery);
    } catch (error) {
      if (error instanceof UniqueConstraintViolationException) return false;
      throw error;
    }
    const kept = await this.rows(WebhookDelivery, { projectId: delivery.projectId }, { receivedAt: 'desc', id: 'desc' }, DELIVERIES_KEPT);
    if (kept.length === DELIVERIES_KEPT) {
      const oldest = kept[kept.length - 1]!;
      await this.fork().nativeDelete(WebhookDelivery, {
        projectId: delivery.projectId,
        $or: [{ receivedAt: { $lt: oldest.receivedAt } }, { receivedAt: oldest.receivedAt, id: { $lt: oldest.id } }],
      });
    }
    return true;
  }
  /** A verified delivery recorded with this key: the first of a replayed one. */
  async findDelivery(dedupeKey: string): Promise<WebhookDeliveryRecord | null> {
    const row = await this.row(WebhookDelivery, { dedupeKey });
    return row && withLists(row);
  }
  async updateDelivery(id: string, patch: Patch<WebhookDeliveryRecord>): Promise<void> {
    await this.fork().nativeUpdate(WebhookDelivery, { id }, patch);
  }
  /** Newest first. */
  async listDeliveries(projectId: string, limit = DELIVERIES_KEPT): Promise<WebhookDeliveryRecord[]> {
    return (await this.rows(WebhookDelivery, { projectId }, { receivedAt: 'desc', id: 'desc' }, limit)).map(withLists);
  }

  pollsOf(serviceIds: string[]): Promise<ServicePollRecord[]> {
    if (serviceIds.length === 0) return Promise.resolve([]);
    return this.rows(ServicePoll, { serviceId: { $in: serviceIds } });
  }
  /** Polls whose next check has come, soonest first. */
  duePolls(now: Date, limit: number): Promise<ServicePollRecord[]> {
    return this.rows(ServicePoll, { nextCheckAt: { $lte: now } }, { nextCheckAt: 'asc', serviceId: 'asc' }, limit);
  }
  allPolls(): Promise<ServicePollRecord[]> {
    return this.rows(ServicePoll, {});
  }
  async putPoll(poll: ServicePollRecord): Promise<void> {
    this.written(ServicePoll);
    await this.fork().upsert(ServicePoll, poll);
  }
  async deletePolls(serviceIds: string[]): Promise<void> {
    if (serviceIds.length > 0) await this.deleteRows(ServicePoll, { serviceId: { $in: serviceIds } });
  }

  async insertStatus(status: CommitStatusRecord): Promise<void> {
    await this.fork().insert(CommitStatus, status);
  }
  /** Statuses still to post whose next attempt has come. */
  dueStatuses(now: Date, limit: number): Promise<CommitStatusRecord[]> {
    return this.rows(CommitStatus, { done: false, nextAttemptAt: { $lte: now } }, { createdAt: 'asc', id: 'asc' }, limit);
  }
  statusesOf(deploymentIds: string[]): Promise<CommitStatusRecord[]> {
    if (deploymentIds.length === 0) return Promise.resolve([]);
    return this.rows(CommitStatus, { deploymentId: { $in: deploymentIds } });
  }
  async updateStatus(id: string, patch: Patch<CommitStatusRecord>): Promise<void> {
    await this.fork().nativeUpdate(CommitStatus, { id }, patch);
  }
  async deleteStatusesOfServices(serviceIds: string[]): Promise<void> {
    if (serviceIds.length > 0) await this.fork().nativeDelete(CommitStatus, { serviceId: { $in: serviceIds } });
  }
}

function withLists(row: WebhookDeliveryRecord): WebhookDeliveryRecord {
  return { ...row, deploymentIds: fromJson(row.deploymentIds), previewIds: fromJson(row.previewIds) };
}
