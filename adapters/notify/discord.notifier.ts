import type { ChannelTarget, NotificationMessage, Notifier, SendResult } from '../../src/index.js';
import { expectOk, JSON_HEADERS, SEVERITY_COLORS, truncate, type Http } from './notify-support.js';

/**
 * Discord webhooks (docs: discord.com/developers/docs/resources/webhook#execute-webhook): one embed
 * with title, description, colour, fields, timestamp and footer, within Discord's limits (title 256,
 * description 4096, 25 fields of 256/1024). Discord answers 204, or 200 with `?wait=true`.
 */
export class DiscordNotifier implements Notifier {
  readonly type = 'discord' as const;
  constructor(private readonly http: Http) {}

  async send(message: NotificationMessage, target: ChannelTarget, signal: AbortSignal): Promise<SendResult> {
    const embed = {
      title: truncate(message.title, 256),
      description: truncate(message.text, 4096),
      color: SEVERITY_COLORS[message.severity],
      fields: message.fields.slice(0, 25).map((f) => ({ name: truncate(f.name, 256), value: truncate(f.value, 1024), inline: true })),
      timestamp: message.occurredAt.toISOString(),
      footer: { text: `Slipway · ${message.eventType}` },
    };
    const response = await this.http.request({
      url: target.config.webhookUrl as string,
      headers: JSON_HEADERS,
      body: JSON.stringify({ username: 'Slipway', embeds: [embed], allowed_mentions: { parse: [] } }),
      signal,
    });
    return expectOk('Discord', response);
  }
}
