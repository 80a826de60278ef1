import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/*
 * Real receivers on 127.0.0.1, one per notification channel, each checking the payload shape its
 * vendor documents and answering as the vendor does (status and body, errors included):
 *
 *   slack     incoming webhook, Block Kit (api.slack.com/messaging/webhooks, /reference/block-kit):
 *             200 "ok"; 400 "invalid_blocks" / "no_text"
 *   discord   execute webhook (discord.com/developers/docs/resources/webhook): embeds and their limits;
 *             204; 400 {code: 50035, message: "Invalid Form Body"}
 *   telegram  Bot API sendMessage (core.telegram.org/bots/api#sendmessage) at /bot<token>/sendMessage:
 *             {ok: true, result}; {ok: false, error_code, description}
 *   teams     incoming webhook with an Adaptive Card attachment (learn.microsoft.com, adaptivecards.io): 202
 *   ntfy      HTTP publish to the topic URL (docs.ntfy.sh/publish): 200 with the message as JSON
 *   gotify    POST /message with X-Gotify-Key (gotify.net/api-docs): 200 with the stored message
 *   webhook   verified with the Standard Webhooks reference package (`standardwebhooks`)
 *
 * A test can make a receiver fail its next N requests with 500, hang, answer slowly, or redirect
 * in a loop. Mail goes to test/helpers/smtp-server.ts (smtp-server).
 */

export type ReceiverKind = 'slack' | 'discord' | 'telegram' | 'teams' | 'ntfy' | 'gotify' | 'webhook';

export interface Received {
  at: number;
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  json: any;
}

type Verdict = { status: number; body: string; type?: string };

const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v);
const str = (v: unknown, max: number, min = 1): boolean => typeof v === 'string' && v.length >= min && v.length <= max;

export class NotifyReceiver {
  readonly received: Received[] = [];
  /** Requests refused by the shape check, with the reason (a test asserts there are none). */
  readonly refused: Array<{ reason: string; body: string }> = [];
  /** The `webhook-id` of each request answered 500 by failNext (empty for other kinds). */
  readonly failedIds: string[] = [];
  private server: Server | undefined;
  private port = 0;
  private failures = 0;
  private mode: 'normal' | 'hang' | 'redirect-loop' = 'normal';
  private delayMs = 0;
  private readonly hanging = new Set<ServerResponse>();
  /** Telegram's bot token, Gotify's app token, ntfy's access token (when set), the webhook's whsec_ secret. */
  readonly token: string;
  secret = '';
  private readonly listeners = new Set<() => void>();

  constructor(
    readonly kind: ReceiverKind,
    options: { token?: string } = {},
  ) {
    this.token =
      options.token ?? (kind === 'telegram' ? `123456789:${randomBytes(18).toString('base64url')}` : randomBytes(12).toString('hex'));
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => void this.handle(req.method ?? 'GET', req.url ?? '/', req.headers, Buffer.concat(chunks).toString('utf8'), res));
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', () => resolve()));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  get origin(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** What a channel of this kind is configured with. */
  config(): Record<string, unknown> {
    switch (this.kind) {
      case 'slack':
        return { webhookUrl: `${this.origin}/services/T0001/B0001/${this.token}` };
      case 'discord':
        return { webhookUrl: `${this.origin}/api/webhooks/1234567890/${this.token}` };
      case 'teams':
        return { webhookUrl: `${this.origin}/workflows/${this.token}/triggers/manual/paths/invoke` };
      case 'telegram':
        return { botToken: this.token, chatId: -1001234567890 };
      case 'ntfy':
        return { url: `${this.origin}/slipway-alerts`, token: this.token };
      case 'gotify':
        return { url: this.origin, token: this.token };
      case 'webhook':
        return { url: `${this.origin}/hooks/slipway` };
    }
  }

  /** The next `n` requests get a 500. */
  failNext(n: number): void {
    this.failures = n;
  }
  hang(): void {
    this.mode = 'hang';
  }
  redirectLoop(): void {
    this.mode = 'redirect-loop';
  }
  slow(ms: number): void {
    this.delayMs = ms;
  }
  normal(): void {
    this.mode = 'normal';
    this.failures = 0;
    this.delayMs = 0;
  }

  /** Resolves once `count` requests were accepted, or rejects after `ms`. */
  async waitFor(count: number, ms = 15_000): Promise<Received[]> {
    const deadline = Date.now() + ms;
    while (this.received.length < count) {
      if (Date.now() > deadline) throw new Error(`${this.kind}: ${this.received.length} of ${count} messages within ${ms} ms`);
      await new Promise<void>((resolve) => {
        const done = () => {
          this.listeners.delete(done);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(done, 50);
        this.listeners.add(done);
      });
    }
    return this.received;
  }

  async close(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }

  private async handle(method: string, path: string, headers: IncomingHttpHeaders, body: string, res: ServerResponse): Promise<void> {
    if (this.mode === 'hang') {
      this.hanging.add(res);
      res.on('close', () => this.hanging.delete(res));
      return;
    }
    if (this.mode === 'redirect-loop') {
      res.writeHead(302, { location: path }).end();
      return;
    }
    if (this.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.delayMs));
    if (this.failures > 0) {
      this.failures--;
      this.failedIds.push(String(headers['webhook-id'] ?? ''));
      res.writeHead(500, { 'content-type': 'text/plain' }).end('internal error');
      return;
    }
    let json: any = null;
    try {
      json = body ? JSON.parse(body) : null;
    } catch {
      // Only ntfy takes a body that is not JSON.
    }
    const verdict = this.check(method, path, headers, body, json);
    if (verdict.status < 300) {
      this.received.push({ at: Date.now(), method, path, headers, body, json });
      for (const listener of [...this.listeners]) listener();
    } else {
      this.refused.push({ reason: verdict.body, body });
    }
    res.writeHead(verdict.status, verdict.type ? { 'content-type': verdict.type } : {}).end(verdict.body);
  }

  private check(method: string, path: string, headers: IncomingHttpHeaders, body: string, json: any): Verdict {
    if (method !== 'POST') return { status: 405, body: 'method not allowed' };
    switch (this.kind) {
      case 'slack':
        return checkSlack(path, this.token, headers, json);
      case 'discord':
        return checkDiscord(path, this.token, headers, json);
      case 'telegram':
        return checkTelegram(path, this.token, json);
      case 'teams':
        return checkTeams(path, this.token, json);
      case 'ntfy':
        return checkNtfy(path, this.token, headers, body);
      case 'gotify':
        return checkGotify(path, this.token, headers, json);
      case 'webhook':
        return checkWebhook(this.secret, headers, body);
    }
  }
}

const SLACK_BLOCKS = new Set(['header', 'section', 'context', 'divider', 'actions', 'image', 'rich_text']);

function checkSlack(path: string, token: string, headers: IncomingHttpHeaders, json: any): Verdict {
  const text = (body: string, status = 400): Verdict => ({ status, body, type: 'text/plain' });
  if (!path.endsWith(`/${token}`)) return text('no_service', 404);
  if (!String(headers['content-type']).startsWith('application/json')) return text('invalid_payload');
  if (!json || (typeof json.text !== 'string' && !Array.isArray(json.blocks))) return text('no_text');
  if (json.blocks !== undefined) {
    if (!Array.isArray(json.blocks) || json.blocks.length > 50) return text('invalid_blocks');
    for (const block of json.blocks) {
      if (!SLACK_BLOCKS.has(block?.type)) return text('invalid_blocks');
      if (block.type === 'header' && !(block.text?.type === 'plain_text' && str(block.text.text, 150))) return text('invalid_blocks');
      if (block.type === 'section') {
        const hasText = block.text && ['mrkdwn', 'plain_text'].includes(block.text.type) && str(block.text.text, 3000);
        const hasFields =
          Array.isArray(block.fields) &&
          block.fields.length <= 10 &&
          block.fields.every((f: any) => ['mrkdwn', 'plain_text'].includes(f?.type) && str(f.text, 2000));
        if (!hasText && !hasFields) return text('invalid_blocks');
      }
      if (block.type === 'context' && !(Array.isArray(block.elements) && block.elements.length >= 1 && block.elements.length <= 10))
        return text('invalid_blocks');
    }
  }
  return text('ok', 200);
}

function checkDiscord(path: string, token: string, headers: IncomingHttpHeaders, json: any): Verdict {
  const invalid = (field: string): Verdict => ({
    status: 400,
    type: 'application/json',
    body: JSON.stringify({ code: 50035, message: 'Invalid Form Body', errors: { [field]: { _errors: [{ code: 'BASE_TYPE_INVALID' }] } } }),
  });
  if (!/^\/api\/webhooks\/\d+\//.test(path) || !path.split('?')[0]!.endsWith(`/${token}`))
    return { status: 401, type: 'application/json', body: '{"message": "Invalid Webhook Token", "code": 50027}' };
  if (!String(headers['content-type']).startsWith('application/json')) return invalid('content_type');
  if (!json || (!json.content && !Array.isArray(json.embeds))) return invalid('content');
  if (json.content !== undefined && !str(json.content, 2000, 0)) return invalid('content');
  if (json.embeds) {
    if (json.embeds.length > 10) return invalid('embeds');
    let total = 0;
    for (const embed of json.embeds) {
      if (embed.title !== undefined && !str(embed.title, 256)) return invalid('embeds.title');
      if (embed.description !== undefined && !str(embed.description, 4096)) return invalid('embeds.description');
      if (embed.color !== undefined && !(isInt(embed.color) && embed.color >= 0 && embed.color <= 0xffffff)) return invalid('embeds.color');
      if (embed.timestamp !== undefined && Number.isNaN(Date.parse(embed.timestamp))) return invalid('embeds.timestamp');
      if (embed.fields !== undefined) {
        if (!Array.isArray(embed.fields) || embed.fields.length > 25) return invalid('embeds.fields');
        for (const f of embed.fields) if (!str(f?.name, 256) || !str(f?.value, 1024)) return invalid('embeds.fields');
      }
      if (embed.footer !== undefined && !str(embed.footer.text, 2048)) return invalid('embeds.footer');
      total += (embed.title ?? '').length + (embed.description ?? '').length + (embed.footer?.text ?? '').length;
      for (const f of embed.fields ?? []) total += f.name.length + f.value.length;
    }
    if (total > 6000) return invalid('embeds');
  }
  return { status: 204, body: '' };
}

const TELEGRAM_TAGS = new Set(['b', 'strong', 'i', 'em', 'u', 'ins', 's', 'strike', 'del', 'a', 'code', 'pre', 'tg-spoiler', 'blockquote']);

function checkTelegram(path: string, token: string, json: any): Verdict {
  const answer = (status: number, description: string): Verdict => ({
    status,
    type: 'application/json',
    body: JSON.stringify({ ok: false, error_code: status, description }),
  });
  const match = /^\/bot([^/]+)\/sendMessage$/.exec(path);
  if (!match) return answer(404, 'Not Found');
  if (match[1] !== token) return answer(401, 'Unauthorized');
  if (!json) return answer(400, 'Bad Request: message text is empty');
  if (!(isInt(json.chat_id) || (typeof json.chat_id === 'string' && /^(-?\d+|@\w+)$/.test(json.chat_id))))
    return answer(400, 'Bad Request: chat not found');
  if (!str(json.text, 4096)) return answer(400, json.text ? 'Bad Request: message is too long' : 'Bad Request: message text is empty');
  if (json.parse_mode !== undefined && !['HTML', 'MarkdownV2', 'Markdown'].includes(json.parse_mode))
    return answer(400, 'Bad Request: unsupported parse_mode');
  if (json.parse_mode === 'HTML') {
    for (const tag of json.text.matchAll(/<\/?([a-z-]+)[^>]*>/g))
      if (!TELEGRAM_TAGS.has(tag[1])) return answer(400, `Bad Request: can't parse entities: Unsupported start tag "${tag[1]}"`);
    if (/&(?!(amp|lt|gt|quot);)/.test(json.text)) return answer(400, "Bad Request: can't parse entities: unsupported entity");
  }
  return {
    status: 200,
    type: 'application/json',
    body: JSON.stringify({
      ok: true,
      result: {
        message_id: Math.floor(Math.random() * 1e6),
        date: Math.floor(Date.now() / 1000),
        chat: { id: Number(json.chat_id) },
        text: json.text,
      },
    }),
  };
}

const CARD_ELEMENTS = new Set(['TextBlock', 'FactSet', 'ColumnSet', 'Container', 'Image', 'ActionSet', 'RichTextBlock']);

function checkTeams(path: string, token: string, json: any): Verdict {
  const bad = (message: string): Verdict => ({
    status: 400,
    type: 'application/json',
    body: JSON.stringify({ error: { code: 'InvalidRequestContent', message } }),
  });
  if (!path.includes(`/${token}/`)) return { status: 404, body: '' };
  if (json?.type !== 'message' || !Array.isArray(json.attachments) || json.attachments.length === 0)
    return bad('type must be message with attachments');
  for (const attachment of json.attachments) {
    if (attachment.contentType !== 'application/vnd.microsoft.card.adaptive') return bad('contentType');
    const card = attachment.content;
    if (card?.type !== 'AdaptiveCard' || !/^1\.\d$/.test(card.version ?? '') || !Array.isArray(card.body))
      return bad('content must be an AdaptiveCard');
    for (const element of card.body) {
      if (!CARD_ELEMENTS.has(element?.type)) return bad(`unknown element ${element?.type}`);
      if (element.type === 'TextBlock' && typeof element.text !== 'string') return bad('TextBlock.text');
      if (
        element.type === 'FactSet' &&
        !(Array.isArray(element.facts) && element.facts.every((f: any) => typeof f.title === 'string' && typeof f.value === 'string'))
      )
        return bad('FactSet.facts');
    }
  }
  return { status: 202, body: '' };
}

function checkNtfy(path: string, token: string, headers: IncomingHttpHeaders, body: string): Verdict {
  const error = (status: number, message: string): Verdict => ({
    status,
    type: 'application/json',
    body: JSON.stringify({ code: status * 100 + 1, http: status, error: message }),
  });
  const topic = path.slice(1).split('?')[0]!;
  if (!/^[-_A-Za-z0-9]{1,64}$/.test(topic)) return error(404, 'page not found');
  if (headers.authorization !== `Bearer ${token}`) return error(403, 'forbidden');
  if (body.length === 0) return error(400, 'invalid request: message empty');
  const priority = headers.priority ?? headers['x-priority'];
  if (priority !== undefined && !/^([1-5]|min|low|default|high|max|urgent)$/.test(String(priority))) return error(400, 'invalid priority');
  const title = String(headers.title ?? headers['x-title'] ?? '');
  const decoded = /^=\?UTF-8\?B\?(.+)\?=$/.exec(title);
  return {
    status: 200,
    type: 'application/json',
    body: JSON.stringify({
      id: randomBytes(6).toString('hex'),
      time: Math.floor(Date.now() / 1000),
      expires: Math.floor(Date.now() / 1000) + 43_200,
      event: 'message',
      topic,
      title: decoded ? Buffer.from(decoded[1]!, 'base64').toString('utf8') : title,
      message: body,
      priority: Number(priority ?? 3),
      tags: String(headers.tags ?? '')
        .split(',')
        .filter(Boolean),
    }),
  };
}

function checkGotify(path: string, token: string, headers: IncomingHttpHeaders, json: any): Verdict {
  const error = (status: number, name: string, description: string): Verdict => ({
    status,
    type: 'application/json',
    body: JSON.stringify({ error: name, errorCode: status, errorDescription: description }),
  });
  const [route, query] = path.split('?');
  if (route !== '/message') return error(404, 'Not Found', 'page not found');
  const key = headers['x-gotify-key'] ?? new URLSearchParams(query ?? '').get('token');
  if (key !== token) return error(401, 'Unauthorized', 'you need to provide a valid access token or user credentials to access this api');
  if (!json || !str(json.message, 1_000_000)) return error(400, 'Bad Request', "Field 'message' is required");
  if (json.title !== undefined && typeof json.title !== 'string') return error(400, 'Bad Request', "Field 'title' must be a string");
  if (json.priority !== undefined && !isInt(json.priority)) return error(400, 'Bad Request', "Field 'priority' must be an integer");
  if (json.extras !== undefined && (typeof json.extras !== 'object' || Array.isArray(json.extras)))
    return error(400, 'Bad Request', "Field 'extras' must be an object");
  return {
    status: 200,
    type: 'application/json',
    body: JSON.stringify({
      id: Math.floor(Math.random() * 1e6),
      appid: 1,
      message: json.message,
      title: json.title ?? '',
      priority: json.priority ?? 0,
      date: new Date().toISOString(),
    }),
  };
}

function checkWebhook(secret: string, headers: IncomingHttpHeaders, body: string): Verdict {
  if (!secret) return { status: 500, body: 'the test did not give the receiver its secret' };
  try {
    new Webhook(secret).verify(body, {
      'webhook-id': String(headers['webhook-id'] ?? ''),
      'webhook-timestamp': String(headers['webhook-timestamp'] ?? ''),
      'webhook-signature': String(headers['webhook-signature'] ?? ''),
    });
  } catch (error) {
    return { status: 401, body: `signature: ${(error as Error).message}` };
  }
  const json = JSON.parse(body);
  if (typeof json.type !== 'string' || typeof json.timestamp !== 'string' || typeof json.data !== 'object')
    return { status: 400, body: 'payload' };
  return { status: 204, body: '' };
}

/** One started receiver per kind. */
export async function startReceivers(): Promise<Record<ReceiverKind, NotifyReceiver> & { close(): Promise<void> }> {
  const kinds: ReceiverKind[] = ['slack', 'discord', 'telegram', 'teams', 'ntfy', 'gotify', 'webhook'];
  const receivers = Object.fromEntries(
    await Promise.all(kinds.map(async (kind) => [kind, await new NotifyReceiver(kind).start()])),
  ) as Record<ReceiverKind, NotifyReceiver>;
  return { ...receivers, close: async () => void (await Promise.all(kinds.map((kind) => receivers[kind].close()))) };
}
