import type { ChannelTarget, NotificationMessage, Notifier, SendResult } from '../../src/index.js';
import { expectOk, truncate, type Http } from './notify-support.js';

const PRIORITY = { info: 3, success: 3, warning: 4, error: 5 };
const TAGS = { info: 'information_source', success: 'white_check_mark', warning: 'warning', error: 'rotating_light' };

/**
 * ntfy's HTTP publish (docs: docs.ntfy.sh/publish): the message as the body of a POST to the topic
 * URL, with `Title`, `Priority` (1-5) and `Tags` headers, and the access token as a bearer. Header
 * values outside ASCII go as RFC 2047 encoded words, which ntfy decodes. ntfy answers 200 with the
 * message as JSON.
 */
export class NtfyNotifier implements Notifier {
  readonly type = 'ntfy' as const;
  constructor(private readonly http: Http) {}

  async send(message: NotificationMessage, target: ChannelTarget, signal: AbortSignal): Promise<SendResult> {
    const token = target.config.token as string | undefined;
    const priority = (target.config.priority as number | undefined) ?? PRIORITY[message.severity];
    const body = [message.text, ...message.fields.map((f) => `${f.name}: ${f.value}`)].join('\n');
    const response = await this.http.request({
      url: target.config.url as string,
      headers: {
        'content-type': 'text/plain; charset=utf-8',
        title: encodedWord(truncate(message.title, 250)),
        priority: String(priority),
        tags: `${TAGS[message.severity]},slipway`,
        ...(token ? { authorization: `Bearer ${token}` } : {}),
      },
      body: truncate(body, 4000),
      signal,
    });
    return expectOk('ntfy', response);
  }
}

/** A header value: ASCII as it is, anything else as `=?UTF-8?B?...?=`. */
function encodedWord(value: string): string {
  return /^[\x20-\x7e]*$/.test(value) ? value : `=?UTF-8?B?${Buffer.from(value, 'utf8').toString('base64')}?=`;
}
