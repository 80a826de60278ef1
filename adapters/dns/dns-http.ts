import { DnsProviderError } from '../../src/routing/dns-provider.port.js';

/** What every DNS adapter takes: the API's base URL (for stand-ins and proxies) and a per-request timeout. */
export interface DnsProviderOptions {
  baseUrl?: string;
  timeoutMs?: number;
}

export const DEFAULT_DNS_TIMEOUT_MS = 10_000;

/** The most pages of zones an adapter reads before giving up, so a misbehaving API cannot loop us forever. */
export const MAX_ZONE_PAGES = 200;

export interface DnsHttpRequest {
  /** The provider's display name, used in error messages. */
  provider: string;
  baseUrl: string;
  timeoutMs: number;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH';
  /** Path with its query string, appended to the base URL, e.g. `/zones?page=1`. */
  path: string;
  headers: Record<string, string>;
  body?: unknown;
  signal: AbortSignal;
  /** The secret to keep out of every message. */
  token: string;
  /** Pulls the provider's own message out of an error body; undefined when it has none. */
  errorMessage: (body: unknown) => string | undefined;
}

export interface DnsHttpResponse {
  status: number;
  body: unknown;
}

export function trimSlash(url: string): string {
  return url.replace(/\/+$/, '');
}

/** Removes the token from a message, in case a provider or a network error echoes it. */
export function redact(message: string, token: string): string {
  return token.length >= 4 ? message.split(token).join('***') : message;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

export { isRecord };

/** Sends one JSON request with a timeout joined to the caller's signal; maps every failure to a DnsProviderError. */
export async function dnsRequest(req: DnsHttpRequest): Promise<DnsHttpResponse> {
  const timeout = AbortSignal.timeout(req.timeoutMs);
  const signal = AbortSignal.any([req.signal, timeout]);
  const headers: Record<string, string> = { accept: 'application/json', ...req.headers };
  let payload: string | undefined;
  if (req.body !== undefined) {
    headers['content-type'] = 'application/json';
    payload = JSON.stringify(req.body);
  }
  let response: Response;
  let text: string;
  try {
    response = await fetch(`${trimSlash(req.baseUrl)}${req.path}`, { method: req.method, headers, body: payload, signal });
    text = await response.text();
  } catch (error) {
    // The caller cancelled: not the provider's fault, pass the abort on unchanged.
    if (req.signal.aborted) throw req.signal.reason ?? error;
    if (timeout.aborted) {
      throw new DnsProviderError(`${req.provider} did not answer within ${req.timeoutMs} ms`, 'upstream');
    }
    const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : undefined;
    const detail = cause ?? (error instanceof Error ? error.message : String(error));
    throw new DnsProviderError(redact(`${req.provider} could not be reached: ${detail}`, req.token), 'upstream');
  }
  let body: unknown;
  if (text.length > 0) {
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
  }
  if (!response.ok) {
    const own = safeMessage(req.errorMessage, body) ?? (typeof body === 'string' && body.trim() ? body.trim().slice(0, 200) : undefined);
    const message = redact(`${req.provider}: ${(own ?? response.statusText) || 'request failed'} (HTTP ${response.status})`, req.token);
    const kind = response.status === 401 || response.status === 403 ? 'unauthorized' : 'upstream';
    throw new DnsProviderError(message, kind, response.status);
  }
  return { status: response.status, body };
}

function safeMessage(extract: (body: unknown) => string | undefined, body: unknown): string | undefined {
  try {
    const message = extract(body);
    return message?.trim() ? message.trim() : undefined;
  } catch {
    return undefined;
  }
}

/** A response the provider sent with a 2xx status but in a shape we cannot read. */
export function malformed(provider: string, what: string): DnsProviderError {
  return new DnsProviderError(`${provider} sent an unexpected response to ${what}`, 'upstream');
}

export function normalizeName(name: string): string {
  return name.trim().toLowerCase().replace(/\.+$/, '');
}

/**
 * The zone that is the longest suffix of the hostname, and the hostname's label in it (`@` for the apex);
 * undefined when no zone holds it.
 */
export function pickZone<Z>(
  hostname: string,
  zones: readonly Z[],
  nameOf: (zone: Z) => string,
): { zone: Z; zoneName: string; host: string } | undefined {
  const fqdn = normalizeName(hostname);
  let best: { zone: Z; zoneName: string; host: string } | undefined;
  for (const zone of zones) {
    const zoneName = normalizeName(nameOf(zone));
    if (!zoneName) continue;
    const host = fqdn === zoneName ? '@' : fqdn.endsWith(`.${zoneName}`) ? fqdn.slice(0, -(zoneName.length + 1)) : undefined;
    if (host === undefined) continue;
    if (!best || zoneName.length > best.zoneName.length) best = { zone, zoneName, host };
  }
  return best;
}

export function noZone(provider: string, hostname: string): DnsProviderError {
  return new DnsProviderError(`No ${provider} zone of this account holds ${hostname}`, 'not_found');
}
