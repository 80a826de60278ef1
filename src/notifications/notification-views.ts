import { z } from 'zod';
import { EVENT_TYPES } from '../domain/events.js';
import { CHANNEL_TYPES, DELIVERY_STATUSES, TEST_EVENT_TYPE } from './notification.records.js';

export const CHANNEL_STATES = ['ok', 'failing'] as const;

export const channelView = z
  .object({
    id: z.string(),
    type: z.enum(CHANNEL_TYPES),
    name: z.string(),
    /** Secret fields masked: a webhook URL shows its origin only, a token `********`. */
    config: z.record(z.string(), z.unknown()),
    /** `failing` once its last 5 attempts failed. */
    state: z.enum(CHANNEL_STATES),
    consecutiveFailures: z.number().int(),
    lastAttemptAt: z.string().nullable(),
    lastError: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'NotificationChannel' });
export type ChannelView = z.infer<typeof channelView>;

export const ruleView = z
  .object({
    id: z.string(),
    projectId: z.string().nullable(),
    events: z.array(z.string()),
    channelIds: z.array(z.string()),
    createdAt: z.string(),
  })
  .meta({ id: 'NotificationRule' });
export type RuleView = z.infer<typeof ruleView>;

export const attemptView = z
  .object({
    attempt: z.number().int(),
    at: z.string(),
    ok: z.boolean(),
    statusCode: z.number().int().nullable(),
    latencyMs: z.number().int(),
    error: z.string().nullable(),
  })
  .meta({ id: 'NotificationAttempt' });
export type AttemptView = z.infer<typeof attemptView>;

export const notificationDeliveryView = z
  .object({
    /** A signed webhook's `webhook-id` is `msg_<id>`. */
    id: z.string(),
    channelId: z.string(),
    eventId: z.string().nullable(),
    eventType: z.enum([...EVENT_TYPES, TEST_EVENT_TYPE]),
    status: z.enum(DELIVERY_STATUSES),
    nextAttemptAt: z.string().nullable(),
    lastError: z.string().nullable(),
    createdAt: z.string(),
    finishedAt: z.string().nullable(),
    attempts: z.array(attemptView),
  })
  .meta({ id: 'NotificationDelivery' });
export type NotificationDeliveryView = z.infer<typeof notificationDeliveryView>;

export const testResultView = z
  .object({
    ok: z.boolean(),
    statusCode: z.number().int().nullable(),
    latencyMs: z.number().int(),
    /** Why it did not get through: the receiver's answer, a timeout, a refused target... */
    error: z.string().nullable(),
    deliveryId: z.string(),
  })
  .meta({ id: 'NotificationTestResult' });
export type TestResultView = z.infer<typeof testResultView>;

/** What health and overview answers say of the channels. */
export const notificationsHealthView = z
  .object({
    status: z.enum(CHANNEL_STATES),
    channels: z.number().int(),
    failing: z.array(z.object({ id: z.string(), name: z.string(), type: z.enum(CHANNEL_TYPES), lastError: z.string().nullable() })),
  })
  .meta({ id: 'NotificationsHealth' });
export type NotificationsHealthView = z.infer<typeof notificationsHealthView>;
