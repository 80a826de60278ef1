import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { HookMalformed, HookRefused, type HookCommit, type HookRepository, type HookRequest } from '../../src/git-hooks/hook-event.js';

/** What the providers' adapters share: constant-time signature checks and careful reads of untrusted JSON. */

export function header(request: HookRequest, name: string): string | undefined {
  const value = request.headers[name.toLowerCase()];
  return value === undefined || value === '' ? undefined : value;
}

/** Equal in constant time, whatever the lengths: both sides are hashed first, so a length tells nothing. */
export function constantTimeEqual(a: string | Buffer, b: string | Buffer): boolean {
  const x = createHash('sha256').update(a).digest();
  const y = createHash('sha256').update(b).digest();
  return timingSafeEqual(x, y);
}

export function hmacSha256(key: string | Buffer, ...parts: Array<string | Buffer>): Buffer {
  const mac = createHmac('sha256', key);
  for (const part of parts) mac.update(part);
  return mac.digest();
}

/**
 * Checks a hex HMAC-SHA256 of the raw body, given with an optional `sha256=` prefix. Throws HookRefused
 * naming the header when it is missing or wrong; never says how it differs.
 */
export function verifyHexHmac(request: HookRequest, headerName: string, secret: string, prefix: 'sha256=' | ''): void {
  const given = header(request, headerName);
  if (!given) throw new HookRefused(`Unsigned delivery: no ${headerName} header`);
  if (prefix && !given.toLowerCase().startsWith(prefix)) throw new HookRefused(`${headerName} is not ${prefix}<hex>`);
  const hex = given.slice(prefix.length).trim().toLowerCase();
  const expected = hmacSha256(secret, request.body).toString('hex');
  if (!/^[0-9a-f]{64}$/.test(hex) || !constantTimeEqual(hex, expected))
    throw new HookRefused(`${headerName} does not match the body signed with the project's webhook secret`);
}

// Reading untrusted JSON: every read checks the type, and a required field that is missing is a 400.

export type Json = Record<string, unknown>;

export function object(value: unknown, what: string): Json {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new HookMalformed(`${what} must be an object`);
  return value as Json;
}

export function optionalObject(value: unknown): Json | null {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : null;
}

export function string(value: unknown, what: string): string {
  if (typeof value !== 'string' || value.length === 0) throw new HookMalformed(`${what} must be a non-empty string`);
  return value;
}

export function optionalString(value: unknown): string | null {
  return typeof value === 'string' && value.length > 0 ? value : null;
}

export function integer(value: unknown, what: string): number {
  const n = typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) throw new HookMalformed(`${what} must be a whole number`);
  return n;
}

export function optionalId(value: unknown): string | null {
  if (typeof value === 'number' && Number.isSafeInteger(value)) return String(value);
  return optionalString(value);
}

export function array(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

/** `refs/heads/main` -> `main`; a tag or another ref -> null. */
export function branchOfRef(ref: string): string | null {
  return ref.startsWith('refs/heads/') ? ref.slice('refs/heads/'.length) : null;
}

const ZERO_SHA = /^0+$/;

/** A push's new commit: null for a deleted branch (the all-zero hash). */
export function pushedSha(value: unknown, what: string): string | null {
  const sha = string(value, what);
  return ZERO_SHA.test(sha) ? null : sha;
}

/** Every path the commits added, modified or removed (the GitHub, GitLab and Gitea shape); null when not listed. */
export function changedFilesOf(commits: unknown[], complete: boolean): string[] | null {
  if (commits.length === 0 || !complete) return null;
  const files = new Set<string>();
  for (const raw of commits) {
    const commit = optionalObject(raw);
    if (!commit) continue;
    for (const key of ['added', 'modified', 'removed'])
      for (const file of array(commit[key])) if (typeof file === 'string' && file) files.add(file);
  }
  return [...files];
}

/** A repository of the GitHub, Gitea and Forgejo payloads (GitLab's `project` is close: see its adapter). */
export function repositoryOf(value: unknown, what: string): HookRepository {
  const repo = object(value, what);
  return {
    fullName: optionalString(repo.full_name),
    urls: ['clone_url', 'ssh_url', 'git_url', 'html_url', 'url'].map((key) => optionalString(repo[key])).filter((u): u is string => !!u),
    id: optionalId(repo.id),
  };
}

/** A commit's first line and its author, from `message` and `author: {name}` (or a raw `Name <mail>` string). */
export function commitOf(value: unknown): HookCommit | null {
  const commit = optionalObject(value);
  if (!commit) return null;
  const author = optionalObject(commit.author);
  const raw = typeof commit.author === 'string' ? commit.author : null;
  return {
    message: optionalString(commit.message),
    author: optionalString(author?.name) ?? optionalString(author?.username) ?? optionalString(author?.raw) ?? raw,
  };
}

// Commit status APIs: one JSON POST each, with a timeout, the token kept out of every message.

export const STATUS_TIMEOUT_MS = 10_000;

export async function postJson(
  provider: string,
  url: string,
  headers: Record<string, string>,
  body: unknown,
  token: string,
  signal: AbortSignal,
): Promise<void> {
  const timeout = AbortSignal.timeout(STATUS_TIMEOUT_MS);
  let response: Response;
  let text: string;
  try {
    response = await fetch(url, {
      method: 'POST',
      headers: { accept: 'application/json', 'content-type': 'application/json', 'user-agent': 'slipway', ...headers },
      body: JSON.stringify(body),
      signal: AbortSignal.any([signal, timeout]),
      redirect: 'error',
    });
    text = await response.text();
  } catch (error) {
    if (signal.aborted) throw signal.reason ?? error;
    if (timeout.aborted) throw new Error(`${provider} did not answer within ${STATUS_TIMEOUT_MS} ms`);
    const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : (error as Error).message;
    throw new Error(redactToken(`${provider} could not be reached: ${cause}`, token));
  }
  if (!response.ok) {
    let message = text.trim().slice(0, 300);
    try {
      const parsed = JSON.parse(text) as { message?: unknown; error?: unknown };
      const own = typeof parsed.message === 'string' ? parsed.message : typeof parsed.error === 'string' ? parsed.error : null;
      if (own) message = own.slice(0, 300);
      else if (parsed.error && typeof parsed.error === 'object') message = JSON.stringify(parsed.error).slice(0, 300);
    } catch {}
    throw new Error(redactToken(`${provider} answered HTTP ${response.status}${message ? `: ${message}` : ''}`, token));
  }
}

export function redactToken(message: string, token: string): string {
  let out = message;
  for (const part of [token, token.slice(token.indexOf(':') + 1)]) if (part.length >= 4) out = out.split(part).join('***');
  return out;
}

/** A stored git token is `token` or `user:token` (from a URL's credentials): the API token is the part after the colon. */
export function bareToken(token: string): string {
  const colon = token.indexOf(':');
  return colon < 0 ? token : token.slice(colon + 1);
}

export function basicAuth(token: string, defaultUser: string): string {
  return `Basic ${Buffer.from(token.includes(':') ? token : `${defaultUser}:${token}`).toString('base64')}`;
}

export function trimSlash(url: string): string {
  return url.replace(/\/+$/, '');
}

/** `owner/name` as two escaped path segments (a nested GitLab-like path keeps its slashes escaped). */
export function repoPath(fullName: string): string {
  const slash = fullName.indexOf('/');
  if (slash < 0) return encodeURIComponent(fullName);
  return `${encodeURIComponent(fullName.slice(0, slash))}/${encodeURIComponent(fullName.slice(slash + 1))}`;
}

/** Hosts cut descriptions: GitHub at 140 characters. */
export function shortDescription(text: string, max = 140): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
