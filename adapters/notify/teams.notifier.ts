import type { ChannelTarget, NotificationMessage, Notifier, SendResult } from '../../src/index.js';
import { expectOk, JSON_HEADERS, truncate, type Http } from './notify-support.js';

const COLOR = { info: 'Accent', success: 'Good', warning: 'Warning', error: 'Attention' };

/**
 * Microsoft Teams incoming webhooks (Workflows' "post to a channel when a webhook request is
 * received", and the older connectors): a `message` whose one attachment is an Adaptive Card 1.4
 * (docs: learn.microsoft.com, "Create incoming webhooks"; adaptivecards.io). Teams answers 200 or 202.
 */
export class TeamsNotifier implements Notifier {
  readonly type = 'teams' as const;
  constructor(private readonly http: Http) {}

  async send(message: NotificationMessage, target: ChannelTarget, signal: AbortSignal): Promise<SendResult> {
    const card = {
      $schema: 'http://adaptivecards.io/schemas/adaptive-card.json',
      type: 'AdaptiveCard',
      version: '1.4',
      body: [
        {
          type: 'TextBlock',
          text: truncate(message.title, 200),
          size: 'Medium',
          weight: 'Bolder',
          color: COLOR[message.severity],
          wrap: true,
        },
        { type: 'TextBlock', text: truncate(message.text, 2000), wrap: true },
        ...(message.fields.length > 0
          ? [
              {
                type: 'FactSet',
                facts: message.fields.slice(0, 20).map((f) => ({ title: truncate(f.name, 100), value: truncate(f.value, 500) })),
              },
            ]
          : []),
        {
          type: 'TextBlock',
          text: `Slipway · ${message.eventType} · ${message.occurredAt.toISOString()}`,
          isSubtle: true,
          size: 'Small',
          wrap: true,
        },
      ],
    };
    const response = await this.http.request({
      url: target.config.webhookUrl as string,
      headers: JSON_HEADERS,
      body: JSON.stringify({
        type: 'message',
        attachments: [{ contentType: 'application/vnd.microsoft.card.adaptive', contentUrl: null, content: card }],
      }),
      signal,
    });
    return expectOk('Teams', response);
  }
}
