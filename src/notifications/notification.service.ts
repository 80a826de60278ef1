import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import { assertAdministrator, type Actor } from '../domain/access.js';
import { isKnownEventPattern } from '../domain/events.js';
import { NotFoundError, ValidationError } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import type { ServiceDeps } from '../platform/deps.js';
import { VersionedCache } from '../platform/versioned-cache.js';
import type { Table } from '../persistence/store.js';
import { projectFor } from '../platform/lookup.js';
import type { ChannelSender } from './channel-sender.js';
import type { DeliveryWorker } from './delivery-worker.js';
import { testMessage } from './event-message.js';
import {
  channelConfigs,
  secretFields,
  urlFields,
  type ChannelInput,
  type ChannelPatchInput,
  type DeliveriesQuery,
  type RuleInput,
} from './notification.inputs.js';
import {
  FAILING_AFTER,
  TEST_EVENT_TYPE,
  type AttemptRecord,
  type ChannelConfig,
  type ChannelRecord,
  type ChannelType,
  type DeliveryRecord,
  type RuleRecord,
} from './notification.records.js';
import type { ChannelView, NotificationDeliveryView, NotificationsHealthView, RuleView, TestResultView } from './notification-views.js';
import type { TargetGuard } from './notifier.port.js';
import { isPrivateAddress } from './private-address.js';

const iso = (date: Date | null) => date?.toISOString() ?? null;
const HEALTH_TABLES: readonly Table[] = ['NotificationRule', 'NotificationChannel'];

/** `whsec_` and 32 random bytes in base64: the Standard Webhooks secret format. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

function maskUrl(value: string): string {
  try {
    const url = new URL(value);
    return `${url.protocol}//${url.host}/********`;
  } catch {
    return '********';
  }
}

export function maskConfig(type: ChannelType, config: ChannelConfig): ChannelConfig {
  const masked: ChannelConfig = { ...config };
  for (const field of secretFields[type]) {
    const value = masked[field];
    if (typeof value === 'string') masked[field] = urlFields[type].includes(field) ? maskUrl(value) : '********';
  }
  return masked;
}

/**
 * An error message with the channel's secrets taken out: each secret field's value, and for a URL its
 * credentials, path and query (webhook URLs hold their token there), wherever a receiver or a library
 * echoed them. The senders already name targets by origin only; this is the second lock.
 */
export function redactError(error: string | null, type: ChannelType, config: ChannelConfig): string | null {
  if (!error) return error;
  const secrets = new Set<string>();
  for (const field of secretFields[type]) {
    const value = config[field];
    if (typeof value !== 'string' || value.length === 0) continue;
    secrets.add(value);
    if (!urlFields[type].includes(field)) continue;
    try {
      const url = new URL(value);
      for (const part of [url.username, url.password, url.pathname, url.search, decodeURIComponent(url.pathname)])
        if (part.length >= 4 && part !== '/') secrets.add(part);
    } catch {
      // Not a URL: its whole value is taken out above.
    }
  }
  let text = error;
  // Longest first, so a URL goes before its own path.
  for (const secret of [...secrets].sort((a, b) => b.length - a.length)) text = text.split(secret).join('********');
  return text;
}

export function presentAttempt(attempt: AttemptRecord) {
  return {
    attempt: attempt.attempt,
    at: attempt.at.toISOString(),
    ok: attempt.ok,
    statusCode: attempt.statusCode,
    latencyMs: attempt.latencyMs,
    error: attempt.error,
  };
}

function presentRule(rule: RuleRecord): RuleView {
  return {
    id: rule.id,
    projectId: rule.projectId,
    events: rule.events,
    channelIds: rule.channelIds,
    createdAt: rule.createdAt.toISOString(),
  };
}

/** The cursor of the deliveries listing: the last one's time and id. */
function encodeCursor(delivery: DeliveryRecord): string {
  return Buffer.from(`${delivery.createdAt.getTime()}.${delivery.id}`).toString('base64url');
}
function decodeCursor(cursor: string): { createdAt: Date; id: string } {
  const match = /^(\d{1,15})\.([a-z0-9]{1,32})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!match) throw new ValidationError('cursor', 'cursor: not a cursor this API gave');
  return { createdAt: new Date(Number(match[1])), id: match[2]! };
}

/**
 * Notification channels, the rules that route events to them, and their deliveries
 * (docs/notifications.md). The install's owners and admins manage them; secrets in a channel's
 * config are sealed at rest and masked in every answer, and a signed webhook's secret is shown once.
 */
export class NotificationService {
  /**
   * Every service overview asks for its project's notification health: read once per project until a
   * rule or a channel changes here (or a few seconds pass: another process's deliveries move channels too).
   */
  private readonly projectHealth = new VersionedCache<string, NotificationsHealthView>(
    () => this.deps.store.versionOf(HEALTH_TABLES),
    1000,
    5_000,
  );

  constructor(
    private readonly deps: ServiceDeps,
    private readonly sender: ChannelSender,
    private readonly worker: DeliveryWorker,
    /** Resolves names on save; without it only literal addresses are checked. */
    private readonly guard: TargetGuard | null,
  ) {}

  private get store() {
    return this.deps.store.notifications;
  }

  async createChannel(actor: Actor, input: ChannelInput): Promise<{ channel: ChannelView; secret: string | null }> {
    assertAdministrator(actor, 'manage notification channels');
    const config = await this.validConfig(input.type, input.config);
    const now = this.deps.clock.now();
    const secret = input.type === 'webhook' ? newWebhookSecret() : null;
    const record: ChannelRecord = {
      id: newId(),
      type: input.type,
      name: input.name,
      configEncrypted: this.deps.secrets.encrypt(JSON.stringify(config)),
      secretEncrypted: secret ? this.deps.secrets.encrypt(secret) : null,
      consecutiveFailures: 0,
      lastAttemptAt: null,
      lastError: null,
      createdAt: now,
      updatedAt: now,
    };
    await this.store.insertChannel(record);
    return { channel: this.present(record, config), secret };
  }

  async listChannels(actor: Actor): Promise<ChannelView[]> {
    assertAdministrator(actor, 'read notification channels');
    return (await this.store.listChannels()).map((channel) => this.present(channel));
  }

  async getChannel(actor: Actor, id: string): Promise<ChannelView> {
    assertAdministrator(actor, 'read notification channels');
    return this.present(await this.channel(id));
  }

  async updateChannel(actor: Actor, id: string, patch: ChannelPatchInput): Promise<ChannelView> {
    assertAdministrator(actor, 'manage notification channels');
    const channel = await this.channel(id);
    const current = this.sender.configOf(channel);
    const config = patch.config ? await this.validConfig(channel.type, { ...current, ...patch.config }) : current;
    const changes = {
      ...(patch.name !== undefined ? { name: patch.name } : {}),
      ...(patch.config ? { configEncrypted: this.deps.secrets.encrypt(JSON.stringify(config)) } : {}),
      updatedAt: this.deps.clock.now(),
    };
    await this.store.updateChannel(id, changes);
    return this.present({ ...channel, ...changes }, config);
  }

  /** The channel goes, with its deliveries, and leaves every rule that named it. */
  async deleteChannel(actor: Actor, id: string): Promise<void> {
    assertAdministrator(actor, 'manage notification channels');
    await this.channel(id);
    await this.deps.store.transaction(async (tx) => {
      await tx.notifications.removeChannelFromRules(id);
      await tx.notifications.deleteChannel(id);
    });
  }

  /** Sends a test message now and answers how it went; recorded as a delivery of its own. */
  async testChannel(actor: Actor, id: string): Promise<TestResultView> {
    assertAdministrator(actor, 'test notification channels');
    const channel = await this.channel(id);
    const now = this.deps.clock.now();
    const delivery: DeliveryRecord = {
      id: newId(),
      channelId: channel.id,
      eventId: null,
      eventType: TEST_EVENT_TYPE,
      status: 'sending',
      attempts: 0,
      nextAttemptAt: null,
      leaseUntil: new Date(now.getTime() + this.deps.config.events.deliveryTimeoutMs),
      lastError: null,
      createdAt: now,
      finishedAt: null,
    };
    await this.store.insertDeliveries([delivery]);
    const outcome = await this.sender.send(channel, testMessage(delivery.id, channel.name, now));
    // A test is tried once: the user is waiting for its answer.
    await this.worker.record(delivery, outcome, true);
    return { ...outcome, deliveryId: delivery.id };
  }

  async createRule(actor: Actor, input: RuleInput): Promise<RuleView> {
    assertAdministrator(actor, 'manage notification rules');
    if (input.projectId !== null) await projectFor(this.deps.store, actor, input.projectId);
    input.events.forEach((pattern, index) => {
      if (!isKnownEventPattern(pattern))
        throw new ValidationError(`events.${index}`, `events.${index}: unknown event type ${JSON.stringify(pattern)} (see docs/events.md)`);
    });
    const channels = new Set((await this.store.listChannels(input.channelIds)).map((c) => c.id));
    input.channelIds.forEach((channelId, index) => {
      if (!channels.has(channelId))
        throw new ValidationError(`channelIds.${index}`, `channelIds.${index}: no channel ${JSON.stringify(channelId)}`);
    });
    const rule: RuleRecord = {
      id: newId(),
      projectId: input.projectId,
      events: [...new Set(input.events)],
      channelIds: [...new Set(input.channelIds)],
      createdAt: this.deps.clock.now(),
    };
    await this.store.insertRule(rule);
    return presentRule(rule);
  }

  async listRules(actor: Actor): Promise<RuleView[]> {
    assertAdministrator(actor, 'read notification rules');
    return (await this.store.listRules()).map(presentRule);
  }

  async getRule(actor: Actor, id: string): Promise<RuleView> {
    assertAdministrator(actor, 'read notification rules');
    const rule = await this.store.getRule(id);
    if (!rule) throw new NotFoundError('Rule', id);
    return presentRule(rule);
  }

  async deleteRule(actor: Actor, id: string): Promise<void> {
    assertAdministrator(actor, 'manage notification rules');
    if (!(await this.store.getRule(id))) throw new NotFoundError('Rule', id);
    await this.store.deleteRule(id);
  }

  /** Deliveries newest first, each with its attempts. */
  async listDeliveries(
    actor: Actor,
    query: DeliveriesQuery,
  ): Promise<{ deliveries: NotificationDeliveryView[]; nextCursor: string | null }> {
    assertAdministrator(actor, 'read notification deliveries');
    if (query.channelId) await this.channel(query.channelId);
    const limit = query.limit ?? 50;
    const page = await this.store.listDeliveries(
      { channelId: query.channelId },
      limit,
      query.cursor ? decodeCursor(query.cursor) : undefined,
    );
    const attempts = await this.store.attemptsOf(page.map((d) => d.id));
    const byDelivery = new Map<string, AttemptRecord[]>();
    for (const attempt of attempts) byDelivery.set(attempt.deliveryId, [...(byDelivery.get(attempt.deliveryId) ?? []), attempt]);
    return {
      deliveries: page.map((delivery) => ({
        id: delivery.id,
        channelId: delivery.channelId,
        eventId: delivery.eventId,
        eventType: delivery.eventType,
        status: delivery.status,
        nextAttemptAt: iso(delivery.nextAttemptAt),
        lastError: delivery.lastError,
        createdAt: delivery.createdAt.toISOString(),
        finishedAt: iso(delivery.finishedAt),
        attempts: (byDelivery.get(delivery.id) ?? []).map(presentAttempt),
      })),
      nextCursor: page.length === limit ? encodeCursor(page.at(-1)!) : null,
    };
  }

  /** For the health answer: the channels whose last attempts all failed. A failure is never silent. */
  async health(): Promise<NotificationsHealthView> {
    return this.healthOf(await this.store.listChannels());
  }

  /**
   * For a service's overview: the channels its project's events go to (its rules and the install's),
   * the failing ones with their last error, secrets taken out. Readers of the project see them: a
   * silent alert is the failure this answer exists to show.
   */
  async healthForProject(projectId: string): Promise<NotificationsHealthView> {
    const cached = this.projectHealth.get(projectId);
    if (cached) return cached;
    const version = this.deps.store.versionOf(HEALTH_TABLES);
    const routed = new Set((await this.store.listRules([projectId])).flatMap((rule) => rule.channelIds));
    const health: NotificationsHealthView =
      routed.size === 0
        ? { status: 'ok', channels: 0, failing: [] }
        : this.healthOf((await this.store.listChannels()).filter((channel) => routed.has(channel.id)));
    this.projectHealth.set(projectId, health, version);
    return health;
  }

  private healthOf(channels: ChannelRecord[]): NotificationsHealthView {
    const failing = channels
      .filter((c) => c.consecutiveFailures >= FAILING_AFTER)
      .map((c) => ({ id: c.id, name: c.name, type: c.type, lastError: this.lastErrorOf(c) }));
    return { status: failing.length > 0 ? 'failing' : 'ok', channels: channels.length, failing };
  }

  private lastErrorOf(channel: ChannelRecord, error = channel.lastError): string | null {
    if (!error) return error;
    try {
      return redactError(error, channel.type, this.sender.configOf(channel));
    } catch {
      // A config that no longer decrypts (another SECRET_KEY): nothing of it can be in the answer but the error's own words.
      return error;
    }
  }

  private async channel(id: string): Promise<ChannelRecord> {
    const channel = await this.store.getChannel(id);
    if (!channel) throw new NotFoundError('Channel', id);
    return channel;
  }

  private present(channel: ChannelRecord, config = this.sender.configOf(channel)): ChannelView {
    return {
      id: channel.id,
      type: channel.type,
      name: channel.name,
      config: maskConfig(channel.type, config),
      state: channel.consecutiveFailures >= FAILING_AFTER ? 'failing' : 'ok',
      consecutiveFailures: channel.consecutiveFailures,
      lastAttemptAt: iso(channel.lastAttemptAt),
      lastError: this.lastErrorOf(channel),
      createdAt: channel.createdAt.toISOString(),
      updatedAt: channel.updatedAt.toISOString(),
    };
  }

  /** The type's schema, then every URL's target: a private one is refused unless the operator allows them. */
  private async validConfig(type: ChannelType, raw: ChannelConfig): Promise<ChannelConfig> {
    const parsed = channelConfigs[type].safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const path =
        issue.code === 'unrecognized_keys' && issue.keys.length > 0
          ? [...issue.path, issue.keys[0]!]
          : issue.path.length > 0
            ? issue.path
            : [];
      const field = ['config', ...path.map(String)].join('.');
      const message = issue.code === 'unrecognized_keys' ? `unknown field for a ${type} channel` : issue.message;
      throw new ValidationError(field, `${field}: ${message}`);
    }
    const config = parsed.data as ChannelConfig;
    if (this.deps.config.events.allowPrivateTargets) return config;
    for (const name of urlFields[type]) {
      const url = new URL(config[name] as string);
      const host = url.hostname.replace(/^\[|\]$/g, '');
      const refused =
        isIP(host) !== 0
          ? isPrivateAddress(host)
            ? `${host} is a loopback, private or link-local address`
            : null
          : host === 'localhost' || host.endsWith('.localhost')
            ? `${host} is a loopback name`
            : await this.guard?.check(url.toString()).then((check) => (check.ok ? null : check.reason));
      if (refused)
        throw new ValidationError(
          `config.${name}`,
          `config.${name}: ${refused}; outbound targets must be public (NOTIFY_ALLOW_PRIVATE_TARGETS)`,
        );
    }
    return config;
  }
}
