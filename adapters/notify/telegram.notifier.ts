import { DeliveryError, type ChannelTarget, type NotificationMessage, type Notifier, type SendResult } from '../../src/index.js';
import { JSON_HEADERS, truncate, type Http } from './notify-support.js';

const ICON = { info: 'ℹ️', success: '✅', warning: '⚠️', error: '🚨' };

/**
 * Telegram's Bot API `sendMessage` (docs: core.telegram.org/bots/api#sendmessage) at
 * `<TELEGRAM_API_URL>/bot<token>/sendMessage`, as HTML (at most 4,096 characters). The answer is
 * `{ok, result}` or `{ok: false, error_code, description}`. The token is in the path: it is never put
 * in an error.
 */
export class TelegramNotifier implements Notifier {
  readonly type = 'telegram' as const;
  constructor(
    private readonly http: Http,
    private readonly apiUrl: () => string,
  ) {}

  async send(message: NotificationMessage, target: ChannelTarget, signal: AbortSignal): Promise<SendResult> {
    const lines = [
      `${ICON[message.severity]} <b>${html(message.title)}</b>`,
      html(message.text),
      ...message.fields.map((f) => `<b>${html(f.name)}:</b> ${html(f.value)}`),
    ];
    const response = await this.http.request({
      url: `${this.apiUrl()}/bot${target.config.botToken as string}/sendMessage`,
      headers: JSON_HEADERS,
      body: JSON.stringify({
        chat_id: target.config.chatId,
        text: truncate(lines.join('\n'), 4096),
        parse_mode: 'HTML',
        link_preview_options: { is_disabled: true },
      }),
      signal,
      // The operator's own setting; a redirect from it is checked like any target.
      trusted: true,
    });
    let answer: { ok?: boolean; description?: string } = {};
    try {
      answer = JSON.parse(response.body) as typeof answer;
    } catch {
      // Reported below with the status.
    }
    if (response.status !== 200 || answer.ok !== true)
      throw new DeliveryError(
        `Telegram answered ${response.status}${answer.description ? `: ${answer.description}` : ''}`,
        response.status,
      );
    return { statusCode: response.status };
  }
}

function html(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}
