import type { EventSeverity } from '../domain/events.js';
import type { Mailer } from '../accounts/mailer.port.js';
import type { EventView } from '../events/event-views.js';
import type { ChannelConfig, ChannelType, DeliveryEventType } from './notification.records.js';

/** One message as every channel family renders it (adapters/notify/<type>.notifier.ts). */
export interface NotificationMessage {
  /** The delivery's id: a signed webhook's `webhook-id` is `msg_<id>`, the same on every retry. */
  id: string;
  eventType: DeliveryEventType;
  occurredAt: Date;
  title: string;
  /** One or two sentences; plain text. */
  text: string;
  severity: EventSeverity;
  /** Label and value pairs (project, service, deployment...), in order. */
  fields: Array<{ name: string; value: string }>;
  /** The event as the stream shows it; null for a test message. */
  event: EventView | null;
}

/** What a send needs of its channel: the decrypted config, a webhook's secret, the mailer for email. */
export interface ChannelTarget {
  config: ChannelConfig;
  secret: string | null;
  /** Email only: the SMTP mailer of the settings (or SMTP_URL); null when none is configured. */
  mailer?: Mailer | null;
}

export interface SendResult {
  /** The receiver's HTTP status (or 250 for mail accepted). */
  statusCode: number | null;
}

/** A send that did not get through: the reason is recorded on the attempt and shown to the user. */
export class DeliveryError extends Error {
  constructor(
    message: string,
    readonly statusCode: number | null = null,
  ) {
    super(message);
    this.name = 'DeliveryError';
  }
}

/**
 * One channel family's wire format. `send` resolves once the receiver accepted the message and
 * throws a DeliveryError otherwise; it honours the signal, which carries the 10-second timeout.
 */
export interface Notifier {
  readonly type: ChannelType;
  send(message: NotificationMessage, target: ChannelTarget, signal: AbortSignal): Promise<SendResult>;
}

/** What checking an outbound URL found: refused (private target, bad scheme), or fine as far as can be told. */
export type TargetCheck = { ok: true } | { ok: false; reason: string };

/** Checks a target on save (resolving its name); an unresolvable name is fine: it may resolve later. */
export interface TargetGuard {
  check(url: string): Promise<TargetCheck>;
}
