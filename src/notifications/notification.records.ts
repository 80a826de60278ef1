import type { EventType } from '../domain/events.js';

/** The channel families, each with its adapter in adapters/notify/<type>.notifier.ts. */
export const CHANNEL_TYPES = ['email', 'slack', 'discord', 'telegram', 'teams', 'ntfy', 'gotify', 'webhook'] as const;
export type ChannelType = (typeof CHANNEL_TYPES)[number];

/** A channel's settings as the user gave them (validated per type by notification.inputs.ts). */
export type ChannelConfig = Record<string, unknown>;

export interface ChannelRecord {
  id: string;
  type: ChannelType;
  name: string;
  /** The whole config as JSON, sealed by the SecretBox: webhook URLs, bot tokens and passwords are in it. */
  configEncrypted: string;
  /** A signed webhook's `whsec_` secret, sealed; null for the other types. */
  secretEncrypted: string | null;
  /** Attempts that failed in a row since the last success: 5 or more makes the channel `failing`. */
  consecutiveFailures: number;
  lastAttemptAt: Date | null;
  lastError: string | null;
  createdAt: Date;
  updatedAt: Date;
}

/** After this many failed attempts in a row a channel is `failing` (health and overview say so). */
export const FAILING_AFTER = 5;

export interface RuleRecord {
  id: string;
  /** null: every event of the install (install-wide events included). */
  projectId: string | null;
  /** Event types, `<family>.*` or `*`. */
  events: string[];
  channelIds: string[];
  createdAt: Date;
}

/** `pending` waits for its next attempt; `sending` is held by a dispatcher until its lease ends. */
export const DELIVERY_STATUSES = ['pending', 'sending', 'succeeded', 'failed'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** The test message of `POST .../test` is a delivery too, of this type. */
export const TEST_EVENT_TYPE = 'notification.test';
export type DeliveryEventType = EventType | typeof TEST_EVENT_TYPE;

export interface DeliveryRecord {
  /** Also the message id a receiver sees (`webhook-id: msg_<id>`): the same on every retry. */
  id: string;
  channelId: string;
  /** null for a test message. */
  eventId: string | null;
  eventType: DeliveryEventType;
  status: DeliveryStatus;
  attempts: number;
  nextAttemptAt: Date | null;
  /** While `sending`: until when the dispatcher that claimed it holds it (a crash lets it go then). */
  leaseUntil: Date | null;
  lastError: string | null;
  createdAt: Date;
  finishedAt: Date | null;
}

export interface AttemptRecord {
  id: number;
  deliveryId: string;
  channelId: string;
  attempt: number;
  at: Date;
  ok: boolean;
  /** The receiver's HTTP status (or SMTP reply code); null when none came (timeout, refused target). */
  statusCode: number | null;
  latencyMs: number;
  error: string | null;
}
