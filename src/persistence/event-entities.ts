import { defineEntity, p } from '@mikro-orm/core';
import { type Row, type Same, same } from './row-types.js';
import type { AuditActorKind, AuditDoor, AuditRecord } from '../audit/audit.records.js';
import type { EventType } from '../domain/events.js';
import type {
  AttemptRecord,
  ChannelRecord,
  ChannelType,
  DeliveryEventType,
  DeliveryRecord,
  DeliveryStatus,
  RuleRecord,
} from '../notifications/notification.records.js';

/*
 * The tables of events, notifications and the audit log (src/events, src/notifications, src/audit),
 * declared as entities.ts declares the others and listed in ALL_ENTITIES there.
 */

const id = () => p.string().length(32).primary();
const fk = () => p.string().length(32).index();

/**
 * The outbox: an event is inserted in the transaction of the change it reports. `seq` orders the
 * stream (its SSE id); `dispatched` turns true once the dispatcher has handed it to its durable
 * subscribers (deliveries), in one transaction with them.
 */
export const EventRow = defineEntity({
  name: 'EventRow',
  tableName: 'events',
  indexes: [{ properties: ['dispatched', 'seq'] }, { properties: ['occurredAt'] }],
  properties: {
    seq: p.integer().primary().autoincrement(),
    id: p.string().length(32).unique(),
    type: p.string().length(64).$type<EventType>(),
    projectId: p.string().length(32).strictNullable().index(),
    payload: p.text(),
    dispatched: p.boolean(),
    occurredAt: p.datetime(),
  },
});

export const NotificationChannel = defineEntity({
  name: 'NotificationChannel',
  tableName: 'notification_channels',
  properties: {
    id: id(),
    type: p.string().length(16).$type<ChannelType>(),
    name: p.string().length(255),
    configEncrypted: p.text(),
    secretEncrypted: p.text().strictNullable(),
    consecutiveFailures: p.integer(),
    lastAttemptAt: p.datetime().strictNullable(),
    lastError: p.text().strictNullable(),
    createdAt: p.datetime(),
    updatedAt: p.datetime(),
  },
});

export const NotificationRule = defineEntity({
  name: 'NotificationRule',
  tableName: 'notification_rules',
  properties: {
    id: id(),
    projectId: p.string().length(32).strictNullable().index(),
    events: p.json<string[]>(),
    channelIds: p.json<string[]>(),
    createdAt: p.datetime(),
  },
});

/** One message to one channel; the queue of the delivery worker (claimed by compare-and-set, leased). */
export const NotificationDelivery = defineEntity({
  name: 'NotificationDelivery',
  tableName: 'notification_deliveries',
  indexes: [{ properties: ['status', 'nextAttemptAt'] }, { properties: ['channelId', 'createdAt'] }],
  properties: {
    id: id(),
    channelId: p.string().length(32),
    eventId: p.string().length(32).strictNullable(),
    eventType: p.string().length(64).$type<DeliveryEventType>(),
    status: p.string().length(16).$type<DeliveryStatus>(),
    attempts: p.integer(),
    nextAttemptAt: p.datetime().strictNullable(),
    leaseUntil: p.datetime().strictNullable(),
    lastError: p.text().strictNullable(),
    createdAt: p.datetime(),
    finishedAt: p.datetime().strictNullable(),
  },
});

export const NotificationAttempt = defineEntity({
  name: 'NotificationAttempt',
  tableName: 'notification_attempts',
  properties: {
    id: p.integer().primary().autoincrement(),
    deliveryId: fk(),
    channelId: p.string().length(32),
    attempt: p.integer(),
    at: p.datetime(),
    ok: p.boolean(),
    statusCode: p.integer().strictNullable(),
    latencyMs: p.integer(),
    error: p.text().strictNullable(),
  },
});

/** Append-only: the repository has no update, and deletes only past the retention. */
export const AuditEntry = defineEntity({
  name: 'AuditEntry',
  tableName: 'audit_entries',
  indexes: [
    { properties: ['at'] },
    { properties: ['projectId', 'id'] },
    { properties: ['actorId', 'id'] },
    { properties: ['operation', 'id'] },
  ],
  properties: {
    id: p.integer().primary().autoincrement(),
    at: p.datetime(),
    actorKind: p.string().length(16).$type<AuditActorKind>(),
    actorId: p.string().length(64).strictNullable(),
    userId: p.string().length(32).strictNullable(),
    operation: p.string().length(128),
    door: p.string().length(16).$type<AuditDoor>(),
    targetIds: p.json<string[]>(),
    projectId: p.string().length(32).strictNullable(),
    clientAddress: p.string().length(64).strictNullable(),
    outcome: p.string().length(32),
  },
});

/** The addresses each user signed in from: a sign-in from another one is an event. */
export const SigninAddress = defineEntity({
  name: 'SigninAddress',
  tableName: 'signin_addresses',
  uniques: [{ properties: ['userId', 'address'] }],
  properties: {
    id: id(),
    userId: fk(),
    address: p.string().length(64),
    firstSeenAt: p.datetime(),
    lastSeenAt: p.datetime(),
  },
});

export const EVENT_ENTITIES = [
  EventRow,
  NotificationChannel,
  NotificationRule,
  NotificationDelivery,
  NotificationAttempt,
  AuditEntry,
  SigninAddress,
] as const;

export type EventRowRow = Row<typeof EventRow>;
export type SigninAddressRow = Row<typeof SigninAddress>;

same<Same<Row<typeof NotificationChannel>, ChannelRecord>>();
same<Same<Row<typeof NotificationRule>, RuleRecord>>();
same<Same<Row<typeof NotificationDelivery>, DeliveryRecord>>();
same<Same<Row<typeof NotificationAttempt>, AttemptRecord>>();
same<Same<Row<typeof AuditEntry>, AuditRecord>>();
