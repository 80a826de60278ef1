import { AiProviderError, type AiProvider, type AiRequest } from '../../src/ai/ai-provider.port.js';
import { isRecord, postJson, trimSlash } from './ai-http.js';

export const ANTHROPIC_DEFAULT_BASE_URL = 'https://api.anthropic.com';
export const ANTHROPIC_VERSION = '2023-06-01';

/**
 * Anthropic's Messages API (`POST <base>/v1/messages`, `x-api-key`, `anthropic-version`). The
 * structured answer is a forced tool call: one tool whose `input_schema` is the schema, and
 * `tool_choice` naming it, so the answer is the tool_use block's `input`.
 */
export class AnthropicProvider implements AiProvider {
  readonly kind = 'anthropic' as const;

  async complete(request: AiRequest): Promise<unknown> {
    const body = await postJson({
      vendor: 'Anthropic',
      url: `${trimSlash(request.baseUrl ?? ANTHROPIC_DEFAULT_BASE_URL)}/v1/messages`,
      headers: { 'x-api-key': request.apiKey, 'anthropic-version': ANTHROPIC_VERSION },
      body: {
        model: request.model,
        max_tokens: request.maxTokens,
        system: request.system,
        messages: [{ role: 'user', content: request.prompt }],
        tools: [{ name: request.schemaName, description: 'Report the result in this structure.', input_schema: request.schema }],
        tool_choice: { type: 'tool', name: request.schemaName },
      },
      signal: request.signal,
      apiKey: request.apiKey,
      errorMessage: (b) => (isRecord(b) && isRecord(b.error) && typeof b.error.message === 'string' ? b.error.message : undefined),
    });
    const content = isRecord(body) && Array.isArray(body.content) ? body.content : [];
    const call = content.find((block) => isRecord(block) && block.type === 'tool_use' && block.name === request.schemaName);
    if (!isRecord(call) || !isRecord(call.input)) {
      const reason = isRecord(body) && typeof body.stop_reason === 'string' ? ` (stop_reason ${body.stop_reason})` : '';
      throw new AiProviderError(`Anthropic: the answer has no ${request.schemaName} tool call${reason}`);
    }
    return call.input;
  }
}
