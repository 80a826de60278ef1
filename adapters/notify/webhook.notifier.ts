import { createHmac } from 'node:crypto';
import { DeliveryError, type ChannelTarget, type NotificationMessage, type Notifier, type SendResult } from '../../src/index.js';
import { expectOk, JSON_HEADERS, type Http } from './notify-support.js';

/**
 * A generic webhook signed with the Standard Webhooks scheme (standardwebhooks.com): the body is
 * `{type, timestamp, data}`; `webhook-id` is `msg_<delivery id>` (the same on every retry, so a
 * receiver can drop duplicates), `webhook-timestamp` the attempt's Unix seconds, and
 * `webhook-signature` `v1,` + base64 HMAC-SHA256, keyed with the base64 part of the `whsec_`
 * secret, of `<id>.<timestamp>.<body>`.
 */
export class WebhookNotifier implements Notifier {
  readonly type = 'webhook' as const;
  constructor(
    private readonly http: Http,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async send(message: NotificationMessage, target: ChannelTarget, signal: AbortSignal): Promise<SendResult> {
    if (!target.secret?.startsWith('whsec_')) throw new DeliveryError('This webhook has no signing secret');
    const id = `msg_${message.id}`;
    const timestamp = Math.floor(this.now().getTime() / 1000);
    const body = JSON.stringify({
      type: message.eventType,
      timestamp: message.occurredAt.toISOString(),
      data: message.event ?? { test: true, title: message.title, message: message.text },
    });
    const response = await this.http.request({
      url: target.config.url as string,
      headers: { ...JSON_HEADERS, ...standardWebhookHeaders(target.secret, id, timestamp, body) },
      body,
      signal,
    });
    return expectOk('The webhook', response);
  }
}

export function standardWebhookHeaders(secret: string, id: string, timestamp: number, body: string): Record<string, string> {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const signature = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64');
  return { 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': `v1,${signature}` };
}
