import { AiProviderError } from '../../src/ai/ai-provider.port.js';

/** Answers larger than this are not read: a structured explanation is a few kilobytes. */
const MAX_RESPONSE_BYTES = 1024 * 1024;

export function trimSlash(url: string): string {
  return url.replace(/\/+$/, '');
}

/** Removes the key from a message, in case a server or a network error echoes it. */
export function redact(message: string, secret: string): string {
  return secret.length >= 4 ? message.split(secret).join('***') : message;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * One JSON POST to an AI API, once (no retry: the caller's timeout bounds it). Every failure is an
 * AiProviderError with the provider's own message when its error body has one.
 */
export async function postJson(req: {
  vendor: string;
  url: string;
  headers: Record<string, string>;
  body: unknown;
  signal: AbortSignal;
  apiKey: string;
  errorMessage: (body: unknown) => string | undefined;
}): Promise<unknown> {
  let response: Response;
  let text: string;
  try {
    response = await fetch(req.url, {
      method: 'POST',
      headers: { accept: 'application/json', 'content-type': 'application/json', ...req.headers },
      body: JSON.stringify(req.body),
      signal: req.signal,
    });
    text = await readLimited(response);
  } catch (error) {
    if (req.signal.aborted) {
      const reason = req.signal.reason as Error | undefined;
      throw new AiProviderError(
        reason?.name === 'TimeoutError' ? `${req.vendor} did not answer in time` : `${req.vendor}: the request was cancelled`,
      );
    }
    if (error instanceof AiProviderError) throw error;
    const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : undefined;
    throw new AiProviderError(redact(`${req.vendor} could not be reached: ${cause ?? (error as Error).message}`, req.apiKey));
  }
  let body: unknown;
  try {
    body = text.length > 0 ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  if (!response.ok) {
    const own = req.errorMessage(body);
    throw new AiProviderError(
      redact(`${req.vendor} answered ${response.status}${own ? `: ${own.slice(0, 500)}` : ''}`, req.apiKey),
      response.status,
    );
  }
  if (body === undefined) throw new AiProviderError(`${req.vendor} answered ${response.status} without a JSON body`, response.status);
  return body;
}

async function readLimited(response: Response): Promise<string> {
  const reader = response.body?.getReader();
  if (!reader) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_RESPONSE_BYTES) {
      await reader.cancel();
      throw new AiProviderError(`the answer is larger than ${MAX_RESPONSE_BYTES} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** The model's JSON text as an object; text around a fenced block is tolerated, anything else is refused. */
export function parseModelJson(vendor: string, text: string): unknown {
  const trimmed = text.trim();
  const fenced = /^```(?:json)?\s*([\s\S]*?)\s*```$/.exec(trimmed);
  try {
    return JSON.parse(fenced ? fenced[1]! : trimmed);
  } catch {
    throw new AiProviderError(`${vendor}: the answer is not JSON`);
  }
}
