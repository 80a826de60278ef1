import { randomBytes } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Local stand-ins for OpenAI's Chat Completions API and Anthropic's Messages API: node:http on
 * 127.0.0.1, each vendor's paths, auth headers, request checks, JSON answers and error bodies (as
 * their API references document them). Every request is recorded; answers and failures are set by
 * the test.
 */

export interface RecordedAiRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: any;
}

type Next =
  | { kind: 'answer'; value: unknown }
  | { kind: 'fail'; status: number; message: string }
  | { kind: 'hang' }
  | { kind: 'raw'; text: string };

abstract class AiStandin {
  readonly requests: RecordedAiRequest[] = [];
  private server: Server | undefined;
  private port = 0;
  private readonly queue: Next[] = [];
  private readonly hanging = new Set<ServerResponse>();
  /** What the model "answers" when nothing else is queued. */
  answer: unknown = {
    summary: 'The build failed.',
    likelyCause: 'A RUN step exited 1.',
    suggestedFix: 'Fix the failing step.',
    commands: ['docker build .'],
  };

  constructor(
    /** The key the stand-in accepts. */
    public apiKey: string,
    private readonly prefix: string,
  ) {}

  /** The base URL to connect, as the vendor's would be given. */
  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}${this.prefix}`;
  }

  /** The next request gets this structured answer (an object; any shape, to test validation). */
  answerNext(value: unknown): void {
    this.queue.push({ kind: 'answer', value });
  }
  /** The next request gets the vendor's error body with this status and message. */
  failNext(status: number, message: string): void {
    this.queue.push({ kind: 'fail', status, message });
  }
  /** The next request is never answered (until the client gives up). */
  hangNext(): void {
    this.queue.push({ kind: 'hang' });
  }
  /** The model's text/input is this raw string (OpenAI: message content; Anthropic: not JSON, so a text block). */
  rawNext(text: string): void {
    this.queue.push({ kind: 'raw', text });
  }

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        let body: unknown;
        try {
          body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
        } catch {
          body = undefined;
        }
        const path = (req.url ?? '/').split('?')[0]!;
        this.requests.push({ method: req.method ?? '', path, headers: req.headers, body });
        const reply = (status: number, payload: unknown) => {
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(JSON.stringify(payload));
        };
        if (req.method !== 'POST' || path !== this.endpoint) return reply(404, this.errorBody(404, `Unknown path ${path}`));
        const authProblem = this.checkAuth(req.headers);
        if (authProblem) return reply(authProblem.status, this.errorBody(authProblem.status, authProblem.message));
        const bodyProblem = this.checkBody(body);
        if (bodyProblem) return reply(400, this.errorBody(400, bodyProblem));
        const next = this.queue.shift() ?? { kind: 'answer', value: this.answer };
        if (next.kind === 'hang') {
          this.hanging.add(res);
          res.on('close', () => this.hanging.delete(res));
          return;
        }
        if (next.kind === 'fail') return reply(next.status, this.errorBody(next.status, next.message));
        return reply(200, this.success(body as Record<string, any>, next));
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  async close(): Promise<void> {
    for (const res of this.hanging) res.destroy();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  protected abstract readonly endpoint: string;
  protected abstract checkAuth(headers: IncomingHttpHeaders): { status: number; message: string } | null;
  protected abstract checkBody(body: unknown): string | null;
  protected abstract errorBody(status: number, message: string): unknown;
  protected abstract success(body: Record<string, any>, next: Next): unknown;
}

/** OpenAI Chat Completions: `POST /v1/chat/completions`, `Authorization: Bearer`, `response_format: json_schema`. */
export class OpenAiStandin extends AiStandin {
  protected readonly endpoint = '/v1/chat/completions';

  constructor(apiKey = `sk-test-${randomBytes(12).toString('hex')}`) {
    super(apiKey, '/v1');
  }

  protected checkAuth(headers: IncomingHttpHeaders) {
    const auth = headers.authorization;
    if (!auth) return { status: 401, message: "You didn't provide an API key." };
    if (auth !== `Bearer ${this.apiKey}`) return { status: 401, message: `Incorrect API key provided: ${auth.slice(7, 11)}****.` };
    return null;
  }

  protected checkBody(body: any): string | null {
    if (typeof body?.model !== 'string') return 'you must provide a model parameter';
    if (!Array.isArray(body.messages) || body.messages.length === 0) return "Missing required parameter: 'messages'.";
    for (const m of body.messages)
      if (!['system', 'user', 'assistant', 'developer'].includes(m?.role) || typeof m.content !== 'string')
        return "Invalid value for 'messages': each message needs a role and content.";
    const format = body.response_format;
    if (format !== undefined) {
      if (format.type !== 'json_schema') return "Invalid value: 'response_format.type'.";
      if (typeof format.json_schema?.name !== 'string' || typeof format.json_schema.schema !== 'object')
        return "Missing required parameter: 'response_format.json_schema.name'.";
      if (format.json_schema.strict && format.json_schema.schema.additionalProperties !== false)
        return "Invalid schema for response_format: 'additionalProperties' is required to be supplied and to be false.";
    }
    return null;
  }

  protected errorBody(status: number, message: string) {
    const type = status === 429 ? 'rate_limit_exceeded' : status >= 500 ? 'server_error' : 'invalid_request_error';
    return { error: { message, type, param: null, code: status === 401 ? 'invalid_api_key' : null } };
  }

  protected success(body: Record<string, any>, next: Next) {
    const content = next.kind === 'raw' ? next.text : JSON.stringify((next as { value: unknown }).value);
    return {
      id: `chatcmpl-${randomBytes(8).toString('hex')}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: body.model,
      choices: [{ index: 0, message: { role: 'assistant', content, refusal: null }, logprobs: null, finish_reason: 'stop' }],
      usage: { prompt_tokens: 100, completion_tokens: 50, total_tokens: 150 },
    };
  }
}

/** Anthropic Messages: `POST /v1/messages`, `x-api-key`, `anthropic-version`, tools with `tool_choice`. */
export class AnthropicStandin extends AiStandin {
  protected readonly endpoint = '/v1/messages';

  constructor(apiKey = `sk-ant-test-${randomBytes(12).toString('hex')}`) {
    super(apiKey, '');
  }

  protected checkAuth(headers: IncomingHttpHeaders) {
    if (headers['x-api-key'] !== this.apiKey) return { status: 401, message: 'invalid x-api-key' };
    if (!headers['anthropic-version']) return { status: 400, message: 'anthropic-version: header is required' };
    return null;
  }

  protected checkBody(body: any): string | null {
    if (typeof body?.model !== 'string') return 'model: Field required';
    if (typeof body.max_tokens !== 'number') return 'max_tokens: Field required';
    if (!Array.isArray(body.messages) || body.messages[0]?.role !== 'user') return 'messages: first message must use the "user" role';
    if (body.system !== undefined && typeof body.system !== 'string' && !Array.isArray(body.system))
      return 'system: Input should be a valid string';
    if (body.tools !== undefined) {
      for (const tool of body.tools)
        if (typeof tool?.name !== 'string' || tool.input_schema?.type !== 'object') return 'tools.0.input_schema: Field required';
      if (body.tool_choice?.type === 'tool' && !body.tools.some((t: any) => t.name === body.tool_choice.name))
        return `tool_choice: tool ${body.tool_choice.name} not found in tools`;
    }
    return null;
  }

  protected errorBody(status: number, message: string) {
    const type =
      status === 401
        ? 'authentication_error'
        : status === 404
          ? 'not_found_error'
          : status === 429
            ? 'rate_limit_error'
            : status === 529
              ? 'overloaded_error'
              : status >= 500
                ? 'api_error'
                : 'invalid_request_error';
    return { type: 'error', error: { type, message } };
  }

  protected success(body: Record<string, any>, next: Next) {
    const toolName = body.tool_choice?.name ?? body.tools?.[0]?.name;
    const content =
      next.kind === 'raw' || !toolName
        ? [{ type: 'text', text: next.kind === 'raw' ? next.text : JSON.stringify((next as { value: unknown }).value) }]
        : [{ type: 'tool_use', id: `toolu_${randomBytes(8).toString('hex')}`, name: toolName, input: (next as { value: unknown }).value }];
    return {
      id: `msg_${randomBytes(8).toString('hex')}`,
      type: 'message',
      role: 'assistant',
      model: body.model,
      content,
      stop_reason: content[0]!.type === 'tool_use' ? 'tool_use' : 'end_turn',
      stop_sequence: null,
      usage: { input_tokens: 100, output_tokens: 50 },
    };
  }
}
