import { raw } from '@mikro-orm/sql';
import { NotificationAttempt, NotificationChannel, NotificationDelivery, NotificationRule } from '../persistence/event-entities.js';
import { Repository, type Patch } from '../persistence/repository.js';
import type { AttemptRecord, ChannelRecord, DeliveryRecord, RuleRecord } from './notification.records.js';

/** SQLite hands JSON columns back as text through the query builder; PostgreSQL as values. */
function json<T>(value: T | string): T {
  return typeof value === 'string' ? (JSON.parse(value) as T) : value;
}
const toRule = (rule: RuleRecord): RuleRecord => ({ ...rule, events: json(rule.events), channelIds: json(rule.channelIds) });

/** Channels, rules, and the delivery queue with its attempts. */
export class NotificationRepository extends Repository {
  // Channels

  insertChannel(channel: ChannelRecord): Promise<ChannelRecord> {
    return this.insertRow(NotificationChannel, channel, 'channel');
  }
  getChannel(id: string): Promise<ChannelRecord | null> {
    return this.row(NotificationChannel, { id });
  }
  listChannels(ids?: readonly string[]): Promise<ChannelRecord[]> {
    return this.rows(NotificationChannel, ids ? { id: { $in: [...ids] } } : {}, { createdAt: 'asc', id: 'asc' });
  }
  updateChannel(id: string, patch: Patch<ChannelRecord>): Promise<void> {
    return this.updateRow(NotificationChannel, id, patch, 'channel');
  }
  /** The failure count moves the channels' version only (the overviews' notification health reads it). */
  async recordChannelAttempt(id: string, ok: boolean, at: Date, error: string | null): Promise<void> {
    this.written(NotificationChannel);
    const em = this.fork();
    if (ok) {
      await em.nativeUpdate(NotificationChannel, { id }, { consecutiveFailures: 0, lastAttemptAt: at, lastError: null });
      return;
    }
    await em.nativeUpdate(NotificationChannel, { id }, {
      consecutiveFailures: raw('consecutive_failures + 1'),
      lastAttemptAt: at,
      lastError: error,
    } as never);
  }
  async deleteChannel(id: string): Promise<void> {
    await this.deleteRows(NotificationChannel, { id });
    await this.fork().nativeDelete(NotificationAttempt, { channelId: id });
    await this.fork().nativeDelete(NotificationDelivery, { channelId: id });
  }

  // Rules

  insertRule(rule: RuleRecord): Promise<RuleRecord> {
    return this.insertRow(NotificationRule, rule, 'rule');
  }
  async getRule(id: string): Promise<RuleRecord | null> {
    const rule = await this.row(NotificationRule, { id });
    return rule ? toRule(rule) : null;
  }
  async listRules(projectIds?: readonly string[] | null): Promise<RuleRecord[]> {
    const where = projectIds ? { $or: [{ projectId: { $in: [...projectIds] } }, { projectId: null }] } : {};
    return (await this.rows(NotificationRule, where, { createdAt: 'asc', id: 'asc' })).map(toRule);
  }
  async deleteRule(id: string): Promise<void> {
    await this.deleteRows(NotificationRule, { id });
  }
  async deleteRulesOfProjects(projectIds: string[]): Promise<void> {
    if (projectIds.length > 0) await this.deleteRows(NotificationRule, { projectId: { $in: projectIds } });
  }
  /** A channel leaves every rule that named it. */
  async removeChannelFromRules(channelId: string): Promise<void> {
    for (const rule of await this.listRules()) {
      if (!rule.channelIds.includes(channelId)) continue;
      this.written(NotificationRule);
      await this.fork().nativeUpdate(NotificationRule, { id: rule.id }, { channelIds: rule.channelIds.filter((id) => id !== channelId) });
    }
  }

  // Deliveries: appended by the fan-out, claimed by the worker

  async insertDeliveries(deliveries: DeliveryRecord[]): Promise<void> {
    if (deliveries.length > 0) await this.fork().insertMany(NotificationDelivery, deliveries);
  }
  getDelivery(id: string): Promise<DeliveryRecord | null> {
    return this.row(NotificationDelivery, { id });
  }
  /** Deliveries whose attempt is due (or whose holder's lease ran out), oldest first. */
  due(now: Date, limit: number): Promise<DeliveryRecord[]> {
    return this.rows(
      NotificationDelivery,
      {
        $or: [
          { status: 'pending', nextAttemptAt: { $lte: now } },
          { status: 'sending', leaseUntil: { $lt: now } },
        ],
      },
      { nextAttemptAt: 'asc', id: 'asc' },
      limit,
    );
  }
  /** The compare-and-set of a claim: the delivery is this caller's until `leaseUntil`. */
  async claim(delivery: DeliveryRecord, now: Date, leaseUntil: Date): Promise<boolean> {
    const changed = await this.fork().nativeUpdate(
      NotificationDelivery,
      {
        id: delivery.id,
        $or: [
          { status: 'pending', nextAttemptAt: { $lte: now } },
          { status: 'sending', leaseUntil: { $lt: now } },
        ],
      },
      { status: 'sending', leaseUntil },
    );
    return changed > 0;
  }
  async finishAttempt(id: string, patch: Patch<DeliveryRecord>, attempt: Omit<AttemptRecord, 'id'>): Promise<void> {
    const em = this.fork();
    await em.nativeUpdate(NotificationDelivery, { id }, patch as never);
    await em.insert(NotificationAttempt, attempt as AttemptRecord);
  }
  /** A channel's deliveries, newest first; `before` pages on (createdAt, id). */
  listDeliveries(
    filter: { channelId?: string; channelIds?: string[] },
    limit: number,
    before?: { createdAt: Date; id: string },
  ): Promise<DeliveryRecord[]> {
    const where: Record<string, unknown> = {};
    if (filter.channelId) where.channelId = filter.channelId;
    else if (filter.channelIds) where.channelId = { $in: filter.channelIds };
    if (before) where.$or = [{ createdAt: { $lt: before.createdAt } }, { createdAt: before.createdAt, id: { $lt: before.id } }];
    return this.rows(NotificationDelivery, where, { createdAt: 'desc', id: 'desc' }, limit);
  }
  attemptsOf(deliveryIds: string[]): Promise<AttemptRecord[]> {
    if (deliveryIds.length === 0) return Promise.resolve([]);
    return this.rows(NotificationAttempt, { deliveryId: { $in: deliveryIds } }, { id: 'asc' });
  }
  countOpen(): Promise<number> {
    return this.fork().count(NotificationDelivery, { status: { $in: ['pending', 'sending'] } });
  }
  /** Retention: finished deliveries (and their attempts) older than the cutoff. */
  async deleteFinishedBefore(cutoff: Date): Promise<void> {
    const old = await this.rows(
      NotificationDelivery,
      { status: { $in: ['succeeded', 'failed'] }, createdAt: { $lt: cutoff } },
      undefined,
      1000,
    );
    if (old.length === 0) return;
    const ids = old.map((d) => d.id);
    await this.fork().nativeDelete(NotificationAttempt, { deliveryId: { $in: ids } });
    await this.fork().nativeDelete(NotificationDelivery, { id: { $in: ids } });
  }
}
