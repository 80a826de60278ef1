/** Plain HTTP helpers for tests over real HTTP (no vitest here: the bench scripts use them too). */

/** What the HTTP helpers return: the status, the body as text and, when it parses, as JSON. */
export interface ApiResponse {
  status: number;
  json: any;
  text: string;
  headers: Headers;
}

/** The `error` code of each status of the spec's error table. */
export const ERROR_CODE_OF_STATUS: Record<number, string> = {
  400: 'validation_error',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  409: 'conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  431: 'payload_too_large',
  429: 'rate_limited',
  500: 'internal_error',
};
/** Codes a status may carry besides its main one: the database endpoints' engine refusals and stopped databases. */
export const OTHER_CODES_OF_STATUS: Record<number, string[]> = {
  400: ['query_error'],
  401: ['invalid_credentials'],
  403: ['registration_closed', 'insufficient_scope'],
  409: ['not_running', 'checksum_mismatch', 'image_gone'],
  422: ['not_supported', 'outside_window'],
  502: ['upstream_error'],
};
export const ERROR_CODES = [...Object.values(ERROR_CODE_OF_STATUS), ...Object.values(OTHER_CODES_OF_STATUS).flat()];

/** Reads the whole body: `json` is the parsed text, or undefined when it is empty or not JSON. */
export async function readResponse(res: Response): Promise<ApiResponse> {
  const text = await res.text();
  let json: any;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, json, text, headers: res.headers };
}

/** Raw fetch, for what the JSON helper cannot send (no headers, odd content types, streamed bodies). */
export async function raw(base: string, method: string, path: string, init: RequestInit = {}): Promise<ApiResponse> {
  return readResponse(await fetch(`${base}${path}`, { method, signal: AbortSignal.timeout(15_000), ...init }));
}

/** Opens an SSE path; on 200 the fetch is aborted as soon as the headers are in, otherwise the (error) body is read. */
export async function openStream(base: string, path: string, token: string | undefined): Promise<ApiResponse> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), 15_000);
  try {
    const res = await fetch(`${base}${path}`, {
      headers: { accept: 'text/event-stream', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      signal: controller.signal,
    });
    if (res.status === 200 && (res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
      controller.abort();
      return { status: res.status, json: undefined, text: '', headers: res.headers };
    }
    return await readResponse(res);
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
}

/** Awaits a fixture call and returns its JSON, throwing unless it succeeded. */
export async function ok<T = any>(res: Promise<ApiResponse>, label: string): Promise<T> {
  const r = await res;
  if (r.status >= 300) throw new Error(`fixture ${label} failed: ${r.status} ${r.text}`);
  return r.json as T;
}
