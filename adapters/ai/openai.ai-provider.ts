import { AiProviderError, type AiProvider, type AiRequest } from '../../src/ai/ai-provider.port.js';
import { isRecord, parseModelJson, postJson, trimSlash } from './ai-http.js';

export const OPENAI_DEFAULT_BASE_URL = 'https://api.openai.com/v1';

/**
 * OpenAI's Chat Completions wire format (`POST <base>/chat/completions`, `Authorization: Bearer`),
 * with structured output as `response_format: {type: "json_schema", json_schema: {name, strict, schema}}`.
 * Compatible servers (local ones included) take the same request at their own base URL.
 */
export class OpenAiProvider implements AiProvider {
  readonly kind = 'openai' as const;

  async complete(request: AiRequest): Promise<unknown> {
    const body = await postJson({
      vendor: 'OpenAI',
      url: `${trimSlash(request.baseUrl ?? OPENAI_DEFAULT_BASE_URL)}/chat/completions`,
      headers: { authorization: `Bearer ${request.apiKey}` },
      body: {
        model: request.model,
        messages: [
          { role: 'system', content: request.system },
          { role: 'user', content: request.prompt },
        ],
        max_completion_tokens: request.maxTokens,
        response_format: { type: 'json_schema', json_schema: { name: request.schemaName, strict: true, schema: request.schema } },
      },
      signal: request.signal,
      apiKey: request.apiKey,
      errorMessage: (b) => (isRecord(b) && isRecord(b.error) && typeof b.error.message === 'string' ? b.error.message : undefined),
    });
    const choice = isRecord(body) && Array.isArray(body.choices) ? body.choices[0] : undefined;
    const message = isRecord(choice) && isRecord(choice.message) ? choice.message : undefined;
    if (message && typeof message.refusal === 'string' && message.refusal) throw new AiProviderError(`OpenAI refused: ${message.refusal}`);
    if (!message || typeof message.content !== 'string') throw new AiProviderError('OpenAI: the answer has no message content');
    if (isRecord(choice) && choice.finish_reason === 'length') throw new AiProviderError('OpenAI: the answer was cut off (max tokens)');
    return parseModelJson('OpenAI', message.content);
  }
}
