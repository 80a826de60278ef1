import type { ChannelTarget, NotificationMessage, Notifier, SendResult } from '../../src/index.js';
import { expectOk, JSON_HEADERS, truncate, type Http } from './notify-support.js';

const PRIORITY = { info: 2, success: 2, warning: 5, error: 8 };

/**
 * Gotify's message API (docs: gotify.net/api-docs, `POST /message`): `{title, message, priority,
 * extras}` with the application token in `X-Gotify-Key`. Gotify answers 200 with the stored message.
 */
export class GotifyNotifier implements Notifier {
  readonly type = 'gotify' as const;
  constructor(private readonly http: Http) {}

  async send(message: NotificationMessage, target: ChannelTarget, signal: AbortSignal): Promise<SendResult> {
    const base = (target.config.url as string).replace(/\/+$/, '');
    const text = [message.text, ...message.fields.map((f) => `${f.name}: ${f.value}`)].join('\n');
    const response = await this.http.request({
      url: `${base}/message`,
      headers: { ...JSON_HEADERS, 'x-gotify-key': target.config.token as string },
      body: JSON.stringify({
        title: truncate(message.title, 250),
        message: truncate(text, 4000),
        priority: (target.config.priority as number | undefined) ?? PRIORITY[message.severity],
        extras: { 'client::display': { contentType: 'text/plain' }, 'slipway::event': { type: message.eventType } },
      }),
      signal,
    });
    return expectOk('Gotify', response);
  }
}
