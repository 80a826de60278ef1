import type { ChannelTarget, NotificationMessage, Notifier, SendResult } from '../../src/index.js';
import { expectOk, JSON_HEADERS, truncate, type Http } from './notify-support.js';

const EMOJI = { info: ':information_source:', success: ':white_check_mark:', warning: ':warning:', error: ':rotating_light:' };

/**
 * Slack incoming webhooks (docs: api.slack.com/messaging/webhooks, Block Kit): `text` as the
 * notification's fallback and `blocks` with a header, a section and the facts as fields. Slack
 * answers 200 `ok`.
 */
export class SlackNotifier implements Notifier {
  readonly type = 'slack' as const;
  constructor(private readonly http: Http) {}

  async send(message: NotificationMessage, target: ChannelTarget, signal: AbortSignal): Promise<SendResult> {
    const blocks: unknown[] = [
      { type: 'header', text: { type: 'plain_text', text: truncate(message.title, 150), emoji: true } },
      { type: 'section', text: { type: 'mrkdwn', text: truncate(`${EMOJI[message.severity]} ${mrkdwn(message.text)}`, 3000) } },
    ];
    // A section holds at most 10 fields of at most 2,000 characters each.
    if (message.fields.length > 0)
      blocks.push({
        type: 'section',
        fields: message.fields
          .slice(0, 10)
          .map((f) => ({ type: 'mrkdwn', text: truncate(`*${mrkdwn(f.name)}*\n${mrkdwn(f.value)}`, 2000) })),
      });
    blocks.push({
      type: 'context',
      elements: [{ type: 'mrkdwn', text: `Slipway · ${message.eventType} · ${message.occurredAt.toISOString()}` }],
    });
    const response = await this.http.request({
      url: target.config.webhookUrl as string,
      headers: JSON_HEADERS,
      body: JSON.stringify({ text: truncate(`${message.title}: ${message.text}`, 3000), blocks }),
      signal,
    });
    return expectOk('Slack', response);
  }
}

/** Slack's mrkdwn control characters. */
function mrkdwn(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
