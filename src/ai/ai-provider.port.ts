import type { AiProviderKind } from '../settings/settings-views.js';

/** One request for a structured answer: the provider must answer with JSON that fits `schema`. */
export interface AiRequest {
  /** null: the vendor's own API. */
  baseUrl: string | null;
  apiKey: string;
  model: string;
  system: string;
  prompt: string;
  /** A name for the schema (OpenAI's `json_schema.name`, Anthropic's tool name). */
  schemaName: string;
  /** JSON Schema of the answer (object, every property required, no others). */
  schema: Record<string, unknown>;
  maxTokens: number;
  /** Ends the call: the caller's timeout joined with its own abort. */
  signal: AbortSignal;
}

/** A provider failed, refused, timed out or answered something that is not the JSON asked for: its message. */
export class AiProviderError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

/** A vendor's wire format. Answers the parsed JSON object the model produced; the use case validates its shape. */
export interface AiProvider {
  readonly kind: AiProviderKind;
  complete(request: AiRequest): Promise<unknown>;
}
